"""`agentic-rag train`: each step's rows from a real agent run of the retrieval (no model), and every bad input
one line with exit 2 before any work, nothing written."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from testkit.records import toy_dataset


def _train(*args: str):
    return CliRunner().invoke(app, ["train", *args])


def test_pairs_of_an_evaluation_file_are_its_answer_prompts_sources_and_a_rerun_adds_none(tmp_path):
    """The MiniLM reader's rows: the sources the agent's answer prompt shows, the label from the gold (an
    "i don't know" gold is an unanswerable row), the split's name as the rows' source."""
    data = toy_dataset(tmp_path, n=4)
    out = tmp_path / "pairs.jsonl"
    args = ("pairs", "--data", str(data), "--out", str(out), "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}")
    first = _train(*args)
    assert first.exit_code == 0, first.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["label"] for r in rows] == [1, 0, 1, 0] and {r["source"] for r in rows} == {"toy"}
    assert all("[1]" in r["sources"] and "Oscar" in r["sources"] for r in rows)
    assert rows[0]["prompt"][-1][0] == "human" and rows[0]["question"] in rows[0]["prompt"][-1][1]
    again = _train(*args)
    assert again.exit_code == 0 and "4 pairs in" in again.output
    assert len(out.read_text().splitlines()) == 4  # nothing written twice


@pytest.mark.parametrize("args, said", [
    (["views", "--out", "{tmp}/v", "--data", "{tmp}/none.jsonl"], "is neither a benchmark split"),
    (["views", "--out", "{tmp}/v", "--layers", "18,x"], "--layers takes comma-separated whole numbers"),
    (["views", "--out", "{tmp}/v", "--views", "last,answer"], "--views takes comma-separated names of last, evidence, question"),
    (["views", "--out", "{tmp}/v", "--pairs-only", "--shared", "{tmp}/no_shared"], "no shared data folder"),
    (["pairs", "--out", "{tmp}/p.jsonl", "--data", "{tmp}/empty.jsonl"], "no questions in"),
    (["reader", "--pairs", "{tmp}/empty.jsonl", "--out", "{tmp}/r"], "no pairs in"),
    (["reader", "--pairs", "{tmp}/empty.jsonl", "--curve", "0.5,2"], "--curve fractions lie between 0 and 1"),
    (["reader-score", "--pairs", "{tmp}/empty.jsonl", "--out", "{tmp}/s.json"], "no pairs in"),
    (["reader-score", "--pairs", "{tmp}/one.jsonl", "--out", "{tmp}/s.json", "--probe-scores", "{tmp}/list.json"],
     "is not a JSON object of probe readings"),
    (["reader-score", "--pairs", "{tmp}/one.jsonl", "--out", "{tmp}/s.json", "--probe-scores", "{tmp}/other.json"],
     "has a reading in"),
    (["probe", "--views-from", "{tmp}"], "is not a views folder"),
    (["probe-score", "--data", "{tmp}/empty.jsonl", "--out", "{tmp}/s.json", "-o", "LLM_BACKEND=openai",
      "-o", "OPENAI_BASE_URL=http://127.0.0.1:9"],
     "needs LLM_BACKEND=local"),
    (["decision", "--risk", "1.5", "--run", "{tmp}"], "risk"),
])
def test_a_bad_input_is_one_line_with_exit_2_and_nothing_written(tmp_path, args, said):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "one.jsonl").write_text('{"id": "a", "question": "q", "sources": "s", "label": 1}\n')
    (tmp_path / "list.json").write_text("[0.5]")
    (tmp_path / "other.json").write_text('{"b": 0.5}')
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _train(*[a.replace("{tmp}", str(tmp_path)) for a in args], *(["-o", f"ARTIFACTS_DIR={tmp_path}"]
                                                                        if args[0] in ("views", "pairs") else []))
    assert done.exit_code == 2, done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.system  # trains a (tiny) real network
def test_train_reader_cross_validates_draws_its_curve_and_writes_the_reader(tmp_path):
    """`train reader` on a tiny BERT the test builds: each configuration's out-of-fold AUC by source, the
    learning curve's steps, then the reader file and its provenance in the report."""
    from testkit.tiny_models import cat_rows, tiny_bert

    base = tiny_bert(tmp_path / "tiny")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in cat_rows(24)))
    out, report = tmp_path / "reader.safetensors", tmp_path / "reader.json"
    done = _train("reader", "--pairs", str(pairs), "--base-dir", str(base), "--base-key", "k" * 64, "--top-layers", "1",
                  "--compare-top", "1,2", "--curve", "0.5", "--epochs", "2", "--lr", "3e-3", "--batch-size", "8",
                  "--out", str(out), "--report", str(report))
    assert done.exit_code == 0, done.output
    written = json.loads(report.read_text())
    assert set(written["configurations"]) == {"top 1 layers", "top 2 layers"}
    assert set(written["configurations"]["top 1 layers"]["auc"]) == {"all", "a", "b"}
    assert list(written["learning_curve"]) == ["0.5"] and written["pairs"] == 24 and written["answerable"] == 12
    assert written["reader"]["trained_by"] == "agentic-rag train" and written["reader"]["base_sha256"] == "k" * 64
    assert written["reader"]["cv_auc"] == written["configurations"]["top 1 layers"]["auc"]["all"]
    assert out.stat().st_size > 1000 and (tmp_path / "oof.npy").is_file()
