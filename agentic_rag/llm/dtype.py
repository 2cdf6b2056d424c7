"""The dtype the in-process model computes in, chosen by what this processor computes natively.

Why it matters: decoding is memory-bound, so bfloat16 (half the bytes of float32 per weight) is the
faster dtype where the processor computes bfloat16 natively. Without bfloat16 instructions PyTorch and
oneDNN emulate it by converting every block to float32 and back, and a prefill runs several times slower
than in float32. AVX-512 BF16 without AMX's tiles splits by maker: on the Intel processor measured the
bfloat16 prefill ran at about half float32's speed, which outweighed the bytes saved in decoding, while an
AMD EPYC (Zen 4 and later are the AMD processors with these instructions) answered several times faster
in bfloat16 (benchmarks/dtype.md has the figures per processor class). The converted model on disk stays
bfloat16 either way; float32 is an upcast at load.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

DTYPES = ("auto", "bfloat16", "float32")
AMD = "AuthenticAMD"  # /proc/cpuinfo's vendor_id of an AMD processor

# The CPU flags (Linux /proc/cpuinfo spelling) that compute bfloat16 natively, and how they are called.
NATIVE_BF16 = {"avx512_bf16": "AVX-512 BF16", "amx_bf16": "AMX BF16", "bf16": "Arm BF16"}
# The vector extensions named beside them when a run says which processor class it ran on.
CLASS_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "asimd", "sve", "bf16")
# oneDNN's ISA caps (ONEDNN_MAX_CPU_ISA) that stop short of bfloat16 instructions: with one set, a
# processor that has them still runs bfloat16 emulated (how an AVX2 host is approximated on a newer one).
_ONEDNN_BELOW_BF16 = {"sse41", "avx", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni"}
_ATEN_BELOW_AVX512 = {"default", "avx", "avx2"}


@dataclass(frozen=True)
class DtypeChoice:
    dtype: str  # "bfloat16" or "float32"
    reason: str  # one line: why, for the start-up line, `settings`, config.json and report.md

    def as_dict(self) -> dict[str, str]:
        return {"dtype": self.dtype, "dtype_reason": self.reason}


def choose_dtype(setting: str, flags: frozenset[str] | None = None, env: Mapping[str, str] | None = None,
                 vendor: str | None = None) -> DtypeChoice:
    """``LLM_DTYPE``'s value made concrete: ``auto`` is bfloat16 where this processor computes it natively
    and it answered faster there (AMX, Arm BF16, an AMD processor's AVX-512 BF16), float32 elsewhere (an
    Intel processor's AVX-512 BF16 without AMX: a question took 1.2x as long in bfloat16). A named dtype
    is kept. ``flags``, ``env`` and ``vendor`` (``/proc/cpuinfo``'s vendor_id) default to this machine's."""
    if setting not in DTYPES:
        raise ValueError(f"LLM_DTYPE must be one of {', '.join(DTYPES)}, not {setting!r}")
    if setting != "auto":
        return DtypeChoice(setting, f"LLM_DTYPE={setting}")
    flags = cpu_flags() if flags is None else frozenset(flags)
    env = os.environ if env is None else env
    native = [name for flag, name in NATIVE_BF16.items() if flag in flags]
    if not native:
        return DtypeChoice("float32", "auto: this processor lacks AVX-512 BF16, AMX and Arm BF16, so bfloat16 would "
                                      "run emulated")
    if cap := _capped_below_bf16(env):
        return DtypeChoice("float32", f"auto: {cap} keeps PyTorch from this processor's {native[0]} instructions")
    if native == [NATIVE_BF16["avx512_bf16"]]:  # the vector instructions alone, without AMX's tiles
        if (cpu_vendor() if vendor is None else vendor) == AMD:
            return DtypeChoice("bfloat16", "auto: this AMD processor computes bfloat16 natively (AVX-512 BF16) and "
                                           "answers faster in it (benchmarks/dtype.md)")
        return DtypeChoice("float32", "auto: this processor has AVX-512 BF16 but no AMX, and answers faster in float32 "
                                      "(benchmarks/dtype.md)")
    return DtypeChoice("bfloat16", f"auto: this processor computes bfloat16 natively ({native[-1]})")


def local_dtype(settings) -> DtypeChoice:
    """What the in-process model computes in under these settings, and why (said at a run's start and kept
    in its config.json)."""
    return choose_dtype(settings.llm.LLM_DTYPE)


def _capped_below_bf16(env: Mapping[str, str]) -> str:
    """The environment variable that caps PyTorch's kernels below bfloat16 instructions, if one does."""
    isa = env.get("ONEDNN_MAX_CPU_ISA", "").strip().lower()
    if isa in _ONEDNN_BELOW_BF16:
        return f"ONEDNN_MAX_CPU_ISA={env['ONEDNN_MAX_CPU_ISA'].strip()}"
    aten = env.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if aten in _ATEN_BELOW_AVX512:
        return f"ATEN_CPU_CAPABILITY={env['ATEN_CPU_CAPABILITY'].strip()}"
    return ""


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """This processor's feature flags, in Linux /proc/cpuinfo's spelling (an Apple processor's BF16 read
    from sysctl is spelled ``bf16`` as on Linux Arm); empty where neither can be read."""
    if flags := _cpuinfo_field("flags", "features"):  # x86 and Arm Linux name the line apart
        return frozenset(flags.split())
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True, text=True, timeout=5)
            return frozenset({"bf16"}) if out.stdout.strip() == "1" else frozenset()
        except (OSError, subprocess.SubprocessError):
            pass
    return frozenset()


@lru_cache(maxsize=1)
def cpu_vendor() -> str:
    """``/proc/cpuinfo``'s vendor_id (``GenuineIntel``, ``AuthenticAMD``); empty where it cannot be read."""
    return _cpuinfo_field("vendor_id")


@lru_cache(maxsize=1)
def cpu_name() -> str:
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def _cpuinfo_field(*names: str) -> str:
    """The first value of a ``/proc/cpuinfo`` field of one of ``names`` (every core reports the same); empty
    where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() in names:
                return value.strip()
    except OSError:
        pass
    return ""


def processor_class(flags: frozenset[str] | None = None, env: Mapping[str, str] | None = None) -> dict[str, object]:
    """What a speed figure was measured on: the processor, its vector extensions, the kernels PyTorch
    picks (with any cap set in the environment) and the dtype ``auto`` chooses there. Benchmarks keep
    one row per class."""
    import torch

    flags = cpu_flags() if flags is None else frozenset(flags)
    env = os.environ if env is None else env
    caps = {k: env[k] for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA") if env.get(k)}
    choice = choose_dtype("auto", flags, env)
    capability = torch.backends.cpu.get_cpu_capability()
    native = any(f in flags for f in NATIVE_BF16) and not _capped_below_bf16(env)
    return {"cpu": cpu_name(), "flags": [f for f in CLASS_FLAGS if f in flags], "torch_capability": capability,
            "caps": caps, "auto_dtype": choice.dtype,
            "class": f"{capability}{' + native bf16' if native else ', no native bf16'}{' (capped)' if caps else ''}"}
