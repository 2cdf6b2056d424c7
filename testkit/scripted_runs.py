"""The agent and small eval runs with a scripted generator, as many tests start them: real retrieval,
signals and BAUG, the model's replies given.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord, write_records
from agentic_rag.eval.runner import run_eval
from agentic_rag.runner import answer
from agentic_rag.telemetry import read_rows
from testkit.fakes import ScriptedChat, real_tokens
from testkit.records import PAGES, QUOTE_2004, QUOTE_2005, record


def run(settings: Settings, replies: list[str], rec: CragRecord | None = None, tokenizer: bool = False, **overrides):
    """The agent on ``rec`` with a scripted model, which counts usage in words, or with the packaged
    tokenizer (``tokenizer=True``) where a test checks token accounting."""
    s = settings.replace(**overrides) if overrides else settings
    fake = ScriptedChat(replies=replies, **({"count_tokens": real_tokens(s)} if tokenizer else {}))
    result = answer("agent", s, record=rec or record(), extra_config={"llm": fake})
    rows = [r for r in read_rows(s.paths.TELEMETRY_PATH)]
    return result, fake, rows


SNAPSHOTS = Path(__file__).resolve().parents[1] / "tests" / "snapshots"  # the graphs' shapes, as drawn


def fake():
    """A model that answers the toy Oscars question with its quote."""
    return ScriptedChat(replies=[f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}".'])


def interrupt_after(n: int):
    """An ``on_result`` callback that presses Ctrl-C once ``n`` rows are written."""
    seen = []

    def on_result(row):
        seen.append(row["id"])
        if len(seen) == n:
            raise KeyboardInterrupt

    return on_result


runner = CliRunner()


HOSTILE = "</script><script>window.__pwned=2</script> <img src=x onerror=window.__pwned=3>"


HOSTILE_NAME = "<script>window.__pwned=1</script> Oscars 2005"


REPLIES = [f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"',
           f'The Incredibles won. {{cite:77th academy}} "{QUOTE_2005}"']


def records():
    ok = record()
    ok.interaction_id = "toy-ok"
    none = record("who designed the first jet engine for the luftwaffe?", {"Gardening": PAGES["Gardening"]})
    none.interaction_id, none.answer = "toy-none", "i don't know"
    hostile = record("which movie won best animated feature at the 2005 oscars?",
                     {HOSTILE_NAME: f"{PAGES['Oscars 2005']} {HOSTILE}", "Gardening": PAGES["Gardening"]})
    hostile.interaction_id, hostile.answer = "toy-hostile", "the incredibles"
    return [ok, none, hostile]


def make_run(out: Path, system: str = "agent", replies: list[str] = REPLIES, **overrides) -> Path:
    """A small real run folder (real retrieval and BAUG, scripted generator)."""
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(out.parent / "artifacts"), **overrides})
    data = out.parent / "toy.jsonl"
    write_records(records(), data)
    fake = ScriptedChat(replies=list(replies))
    run_eval(data, system, settings, out, progress=False, extra_config={"llm": fake})
    return out


def rows_of(run: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}
