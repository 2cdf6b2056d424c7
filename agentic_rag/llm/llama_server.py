"""llama.cpp's OpenAI-compatible server with its weight repacking off: ``python -m agentic_rag.llm.llama_server
ARGS`` runs ``python -m llama_cpp.server ARGS`` with every model loaded without llama.cpp's extra buffer
types (the AMX buffer and the other repacked layouts; llama.cpp's own server calls this ``--no-repack``).

Why: on a processor with AMX, llama.cpp repacks the packaged GGUF's Q4_K/Q6_K/Q8_0 tensors into its AMX
buffer and the server dies on the first token (``agentic-rag serve`` chooses this module there, see
``serve.weight_repacking``). llama-cpp-python's server takes no option for it, but the model parameters it
builds carry the switch (``use_extra_bufts``): this sets it in the parameters the server starts from.
The module imports nothing of the package beyond ``llama_cpp``, so the server starts as fast as its own.
"""

from __future__ import annotations

import runpy
import sys

SWITCH = "use_extra_bufts"  # llama_model_params: "use extra buffer types (used for weight repacking)"
SERVER = "llama_cpp.server"


class NoRepackSwitch(RuntimeError):
    """This llama-cpp-python predates the switch: setting it would silently do nothing."""


def without_repacking() -> None:
    """Every model llama-cpp-python loads from now on, in this process, skips llama.cpp's repacking."""
    import llama_cpp.llama_cpp as native

    if SWITCH not in dict(native.llama_model_params._fields_):
        version = getattr(sys.modules.get("llama_cpp"), "__version__", "?")
        raise NoRepackSwitch(f"llama-cpp-python {version} cannot turn llama.cpp's weight repacking off (no {SWITCH}); "
                             "upgrade it: pip install -U 'llama-cpp-python[server]'")
    defaults = native.llama_model_default_params

    def params_without_repacking():
        params = defaults()
        setattr(params, SWITCH, False)
        return params

    native.llama_model_default_params = params_without_repacking  # read by Llama() at each model load


def main() -> int:
    try:
        without_repacking()
    except NoRepackSwitch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.argv[0] = SERVER
    runpy.run_module(SERVER, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
