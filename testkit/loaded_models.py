"""Which real models a test process keeps loaded between test files.

The in-process model cache (``agentic_rag.llm.local``) keeps every (folder, dtype) it loaded for the
process's life, which is what a user's process wants. A suite worker meets many: the suite's own 0.5B,
the default 1.5B of its own tests, a second dtype, a draft model. In float32 (auto on a processor
without AMX) those add up past the machine's memory across two workers: the kernel killed a worker
holding 15.8 GB. Between files a worker keeps only the suite's model in the dtype auto chooses.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path


def release_all_but_the_suites_model() -> list[tuple[str, str]]:
    """Drop every loaded model but the suite's generator (preset fast) in auto's dtype; what was dropped."""
    local = sys.modules.get("agentic_rag.llm.local")
    if local is None or not local._LOADED:  # nothing was loaded in this process
        return []
    from agentic_rag.llm.dtype import choose_dtype
    from agentic_rag.llm.packaged import FAST_MODEL

    keep = (FAST_MODEL.converted_dir, choose_dtype("auto").dtype)
    with local._LOAD_LOCK:
        dropped = [key for key in local._LOADED if (Path(key[0]).name, key[1]) != keep]
        for key in dropped:
            del local._LOADED[key]
    if dropped:
        gc.collect()
    return dropped
