"""The answers committed benchmark runs showed, read back from the files that keep them, and the ones
in which stripped text left a word hanging (``text.dangling_words``).

What is committed: every row of the agent-vs-baseline runs (``<system>_results.jsonl.gz``, whole
answers), the per-question tables of ``comparison.md`` (each system's answer, cut at 90 characters; a
cell cut with an ellipsis is read up to its last whole word), and ``prediction`` fields of JSON files
(the hand-labelled judge set, the CRAG kit's runs) of records that name their question.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from agentic_rag.eval.markdown import ELLIPSIS, row_cells
from agentic_rag.text import dangling_words


def _json_predictions(value: Any) -> Iterator[str]:
    """``prediction`` fields of a system's answers to questions (a record with an id or a query; the
    judge's pair checks also say "prediction", of a gold answer tried as one, and are not answers)."""
    if isinstance(value, dict):
        asked = any(k in value for k in ("id", "interaction_id", "query"))
        for key, v in value.items():
            if key == "prediction" and isinstance(v, str):
                if asked:
                    yield v
            else:
                yield from _json_predictions(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_predictions(v)


def _table_answers(text: str) -> Iterator[str]:
    """The cells of columns headed "... answer" in a markdown file's tables."""
    columns: list[int] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = []
            continue
        cells = row_cells(line)
        if not columns and any(c.endswith("answer") for c in cells):
            columns = [i for i, c in enumerate(cells) if c.endswith("answer")]
            continue
        if set(line) <= set("|-: "):
            continue
        for i in columns:
            if i < len(cells) and cells[i]:
                cell = cells[i]
                yield cell.rsplit(" ", 1)[0] if cell.endswith(ELLIPSIS) else cell


def shown_answers(root: Path) -> Iterator[tuple[str, str]]:
    """(file relative to ``root``, answer) for every committed answer under ``root``."""
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.name == "comparison.md":
            yield from ((rel, a) for a in _table_answers(path.read_text(encoding="utf-8")))
        elif path.suffix == ".json":
            yield from ((rel, a) for a in _json_predictions(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix == ".jsonl" or path.name.endswith(".jsonl.gz"):
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            for line in raw.decode("utf-8").splitlines():
                if line.strip():
                    yield from ((rel, a) for a in _json_predictions(json.loads(line)))


def dangling_report(root: Path) -> dict[str, Any]:
    """How many committed answers there are, per file, and each one left with a dangling word."""
    per_file: dict[str, int] = {}
    found = []
    for where, answer in shown_answers(root):
        per_file[where] = per_file.get(where, 0) + 1
        if hanging := dangling_words(answer):
            found.append({"file": where, "answer": answer, "dangling": hanging})
    return {"answers": sum(per_file.values()), "files": per_file, "dangling": found}
