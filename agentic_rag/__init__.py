"""agentic-rag: honest, budget-aware agentic RAG."""
import os

__version__ = "0.1.0"

# OpenMP threads that wait by spinning hold their cores while idle, which other work sharing the cores
# (eval --workers, Ray workers, a served model beside the CLI) then cannot use; sleeping waits cost
# little on a quiet machine. Set here, before anything imports torch (libgomp reads it once, when it
# loads); a value the user set wins. scripts/bench_load.py compares the two.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, which a container or ``taskset`` narrows):
    what torch's threads default to."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
