"""The named evaluation splits the benchmark scripts share (squad200, rgb40, hotpot_test, quail_test, ...), each
prepared from ../shared/data the same way every time, so two benchmarks of one name read one file."""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.datasets.crag import EXAMPLE_DATASET, DataError
from agentic_rag.datasets.prepare.hotpotqa import prepare_hotpotqa
from agentic_rag.datasets.prepare.layouts import LAYOUTS
from agentic_rag.datasets.prepare.pubmedqa import prepare_pubmedqa
from agentic_rag.datasets.prepare.quail import prepare_quail
from agentic_rag.datasets.prepare.rgb import prepare_rgb
from agentic_rag.datasets.prepare.squad2 import prepare_squad2
from agentic_rag.datasets.prepare.subjqa import prepare_subjqa

HOTPOT_FILES = ("hotpot_dev_distractor_first100.json", "hotpot_dev_distractor_more685.jsonl")
# families no decision was fitted on (reviews, stories and news, abstracts): 200 questions of each half
FAMILIES = {"subjqa": (prepare_subjqa, "subjqa/subjqa_dev_1557.jsonl"),
            "quail": (prepare_quail, "quail/quail_dev_2164.jsonl"),
            "pubmedqa": (prepare_pubmedqa, "pubmedqa/pubmedqa_pqal_1000.jsonl")}
FAMILY_DATASETS = tuple(f"{family}_{half}" for family in FAMILIES for half in ("dev", "test"))
LAYOUT_QUESTIONS = 50  # hotpot_dev_layouts: the first of hotpot_dev's questions, in every evidence layout
BENCHMARK_DATASETS = ("crag_example", "squad200", "rgb40", "rgb_negative100", "hotpot_dev", "hotpot_test",
                      "hotpot_dev_layouts", *FAMILY_DATASETS)


def benchmark_dataset(name: str, work: Path, shared: Path) -> str:
    """The file of split ``name``, written into ``work`` from the shared data folder ``shared``."""
    if name == "crag_example":
        return EXAMPLE_DATASET
    if name == "squad200":  # 200 questions, half unanswerable, each with its paragraph + 4 of the same article
        out = work / "squad200.jsonl"
        prepare_squad2(shared / "squad2" / "squad2_dev_half.jsonl", out, n=200, seed=0)
        return str(out)
    if name == "rgb40":  # 20 questions, each answerable (positives + noise) and negative-rejection (noise only)
        out = work / "rgb40.jsonl"
        prepare_rgb(shared / "rgb" / "rgb_en_fact_100.jsonl", out, variants=("answerable", "negative"), n=20, seed=0)
        return str(out)
    if name == "rgb_negative100":  # 100 negative-rejection questions (noise snippets only): bench_abstention reads them
        out = work / "rgb_negative100.jsonl"
        prepare_rgb(shared / "rgb" / "rgb_en_fact_100.jsonl", out, variants=("negative",), n=100, seed=0)
        return str(out)
    if name in ("hotpot_dev", "hotpot_test", "hotpot_dev_layouts"):
        # multi-hop: each question answerable, and without one supporting paragraph; every shared file's half, the
        # first 100 questions' first (the split they were measured on before). The layouts' set: hotpot_dev's first
        # LAYOUT_QUESTIONS questions, each in every evidence layout (a question's records together)
        layouts = LAYOUTS if name == "hotpot_dev_layouts" else LAYOUTS[:1]
        out = work / f"{name}.jsonl"
        lines: list[str] = []
        for k, path in enumerate(HOTPOT_FILES):
            part, _ = prepare_hotpotqa(shared / "hotpotqa" / path, work / f"{name}_{k}.jsonl", split=name.split("_")[1],
                                       progress=False, layouts=layouts)
            lines += part.read_text(encoding="utf-8").splitlines(keepends=True)
            if name == "hotpot_dev_layouts" and len(_questions(lines)) >= LAYOUT_QUESTIONS:
                break  # the first file's half is enough
        if name == "hotpot_dev_layouts":
            first = set(_questions(lines)[:LAYOUT_QUESTIONS])
            lines = [line for line in lines if json.loads(line)["source_id"] in first]
        out.write_text("".join(lines), encoding="utf-8")
        return str(out)
    if name in FAMILY_DATASETS:  # half unanswerable where the family has unanswerable questions (PubMedQA: yes/no)
        family, half = name.rsplit("_", 1)
        convert, path = FAMILIES[family]
        out = work / f"{name}.jsonl"
        convert(shared / path, out, split=half, n=200, seed=0, progress=False)
        return str(out)
    raise DataError(f"unknown dataset {name!r} ({', '.join(BENCHMARK_DATASETS)})")


def _questions(lines: list[str]) -> list[str]:
    """The question ids (``source_id``) of record lines, in first-seen order."""
    return list(dict.fromkeys(json.loads(line)["source_id"] for line in lines))
