"""Bad and hostile inputs: what each costs, and what extraction keeps.

- huge HTML: wall time and peak memory (max RSS of a fresh process) to turn one page of SIZE MB into a
  Page, uncapped (``MAX_PAGE_RAW_CHARS`` above the page's size: what every page got before the cap)
  and at the default cap;
- deep nesting: characters of the page's text that extraction keeps, trafilatura alone (the extractor
  before the flat fallback) against ``html_to_text``;
- question length: the agent's anchor step on a 20,000-word question with the length cap off and at
  its default;
- untrusted-sentence patterns on the shared evaluation data (none of those texts addresses a model,
  so every flag is a false positive);
- hiding methods and phrasings addressed to the model (the catalogue in
  ``agentic_rag/data/hostile_pages.json``): which get through, with the extractor and detector of
  ``--before`` (a git revision) and with this checkout's;
- extraction speed on the bundled CRAG example pages, ``--before`` against this checkout, alternated in
  one process (the machine's load hits both alike; the best of ``--rounds`` rounds of each is kept).

Writes benchmarks/hostile_inputs.json. Usage: python scripts/bench_hostile_inputs.py [--mb 20] [--data DIR]
[--parts NAME ...] [--before REV] [--rounds N]
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
SENTENCE = "Paragraph {i} of the Springfield council minutes records vote {i} on the {y} budget."
DEEP_ANSWER = "In 2019 the mayor of Springfield was Christine Lundberg, elected to a third term in 2016."


def huge_page(mb: float) -> str:
    parts, size, i = [], 0, 0
    while size < mb * 1e6:
        p = f"<p>{SENTENCE.format(i=i, y=1900 + i % 120)}</p>"
        parts.append(p)
        size += len(p)
        i += 1
    return "<html><body><article>" + "".join(parts) + "</article></body></html>"


def deep_page(levels: int) -> str:
    return "<html><body>" + "<div>" * levels + f"<p>{DEEP_ANSWER}</p>" + "</div>" * levels + "</body></html>"


def one_huge(mb: float, cap: int | None) -> dict:
    from agentic_rag.configuration import Settings
    from agentic_rag.ingest.pages import make_page

    s = Settings.load()
    raw = huge_page(mb)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    page = make_page(raw, max_chars=s.retrieval.MAX_PAGE_CHARS, max_raw_chars=cap or len(raw) + 1)
    return {"page_mb": round(len(raw) / 1e6, 2), "raw_cap_chars": cap, "seconds": round(time.perf_counter() - t0, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "rss_before_mb": round(base / 1024, 1), "text_chars": len(page.text),
            "raw_truncated_chars": page.raw_truncated_chars}


def one_anchor(words: int, cap: int | None) -> dict:
    from agentic_rag.anchors.node import predict_anchors_node
    from agentic_rag.configuration import Settings
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.ingest.pages import html_to_text

    s = Settings.load(overrides={"MAX_QUESTION_CHARS": cap} if cap else {})
    # real prose (the bundled example pages), so the anchor step meets names, numbers and phrases
    prose = " ".join(html_to_text(p.page_result) for r in iter_records("example") for p in r.search_results).split()
    question = "which of these " + " ".join((prose * (words // len(prose) + 1))[: words - 3]) + "?"
    predict_anchors_node({"question": "who won the oscar in 2004?"}, {"configurable": {"settings": s}})  # loads spaCy
    t0 = time.perf_counter()
    update = predict_anchors_node({"question": question}, {"configurable": {"settings": s}})
    return {"words": words, "chars": len(question), "max_question_chars": s.budget.MAX_QUESTION_CHARS,
            "seconds": round(time.perf_counter() - t0, 2), "refused": bool(update.get("too_long")),
            "anchors_proposed": len(update["anchors_proposed"])}


def deep_nesting(levels: list[int]) -> list[dict]:
    import trafilatura

    from agentic_rag.ingest.pages import html_to_text

    out = []
    for n in levels:
        raw = deep_page(n)
        before = trafilatura.extract(raw, include_comments=False, include_tables=True, favor_recall=True) or ""
        after = html_to_text(raw)
        out.append({"levels": n, "text_chars": len(DEEP_ANSWER), "kept_before": len(before) if DEEP_ANSWER in before else 0,
                    "kept_after": len(after) if DEEP_ANSWER in after else 0})
    return out


def pattern_flags(data: Path) -> dict:
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.ingest.pages import html_to_text
    from agentic_rag.text import split_sentences, untrusted_sentences

    def rows(path: str):
        with open(data / path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    sets = {
        "squad2 contexts": list(dict.fromkeys(r["context"] for r in rows("squad2/squad2_dev_half.jsonl"))),
        "nq passages": [c.get("text", "") for r in rows("nq/nq_open_oracle.jsonl") for c in r["ctxs"]],
        "rgb snippets": [t for r in rows("rgb/rgb_en_fact_100.jsonl") for k in ("positive", "negative", "positive_wrong")
                         for t in r.get(k, [])],
        "crag example pages": [html_to_text(p.page_result) for r in iter_records("example") for p in r.search_results],
    }
    out = {}
    for name, texts in sets.items():
        flagged = [untrusted_sentences(t) for t in texts]
        out[name] = {"texts": len(texts), "sentences": sum(len(split_sentences(t, loose=True)) for t in texts),
                     "texts_flagged": sum(bool(f) for f in flagged), "sentences_flagged": sum(len(f) for f in flagged),
                     "examples": [s[:120] for f in flagged for s in f][:5]}
    return out


def module_at(rev: str, path: str, name: str):
    """A module of this package as it was at git revision ``rev`` (its imports resolve to this checkout)."""
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, fh.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(fh.name)
    return module


def revision(rev: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def catalogue_pages(cat: dict) -> tuple[dict[str, str], dict[str, str]]:
    """The hiding pages and the pages addressed to the model, built as the catalogue says."""
    hidden = {k: cat["page_template"].format(head=(f"<style>{m['css']}</style>" if m.get("css") else "") + m.get("head", ""),
                                             body=m["body"]) for k, m in cat["hidden"].items()}
    addressed = {k: cat["page_template"].format(
        head="", body="".join(f"<p>{html.escape(line)}</p>".replace("\n", "<br>") for line in lines))
        for k, lines in cat["addressed"].items()}
    return hidden, addressed


def hostile_catalogue(before_rev: str) -> dict:
    from agentic_rag.ingest import pages
    from agentic_rag.text import split_sentences, untrusted_sentences
    from testkit.hostile import catalogue

    old_pages = module_at(before_rev, "agentic_rag/ingest/pages.py", "pages_before")
    old_prompts = module_at(before_rev, "agentic_rag/prompts.py", "prompts_before")

    def old_flags(text: str) -> int:
        return sum(old_prompts.is_untrusted(s) for s in split_sentences(text, loose=True))

    cat = catalogue()
    hidden, addressed = catalogue_pages(cat)
    leaked = {name: {k: "PWNED" in m.html_to_text(p) for k, p in hidden.items()}
              for name, m in (("before", old_pages), ("after", pages))}
    texts = {name: {k: m.html_to_text(p) for k, p in addressed.items()} for name, m in (("before", old_pages), ("after", pages))}
    missed = {"before": {k: not old_flags(t) for k, t in texts["before"].items()},
              "after": {k: not untrusted_sentences(t) for k, t in texts["after"].items()}}
    benign = {"before": [s for s in cat["benign"] if old_flags(s)], "after": [s for s in cat["benign"] if untrusted_sentences(s)]}
    return {
        "before_revision": revision(before_rev),
        "hiding_methods": {"methods": len(hidden), "leaked_before": sum(leaked["before"].values()),
                           "leaked_after": sum(leaked["after"].values()),
                           "leaked_before_names": sorted(k for k, v in leaked["before"].items() if v),
                           "leaked_after_names": sorted(k for k, v in leaked["after"].items() if v)},
        "model_addressed": {"phrasings": len(addressed), "missed_before": sum(missed["before"].values()),
                            "missed_after": sum(missed["after"].values()),
                            "missed_before_names": sorted(k for k, v in missed["before"].items() if v),
                            "missed_after_names": sorted(k for k, v in missed["after"].items() if v),
                            "benign_sentences": len(cat["benign"]), "benign_flagged_before": benign["before"],
                            "benign_flagged_after": benign["after"]},
    }


def extraction_speed(before_rev: str, rounds: int) -> dict:
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.ingest import pages

    old_pages = module_at(before_rev, "agentic_rag/ingest/pages.py", "pages_before")
    raw = [p.page_result for r in iter_records("example") for p in r.search_results]
    best = {"before": float("inf"), "after": float("inf")}
    chars = {}
    for _ in range(rounds):
        for name, m in (("before", old_pages), ("after", pages)):
            t0 = time.perf_counter()
            texts = [m.html_to_text(p) for p in raw]
            best[name] = min(best[name], time.perf_counter() - t0)
            chars[name] = sum(map(len, texts))
    return {"before_revision": revision(before_rev), "pages": len(raw), "page_mb": round(sum(map(len, raw)) / 1e6, 2),
            "rounds": rounds, "seconds_before": round(best["before"], 2), "seconds_after": round(best["after"], 2),
            "pages_per_s_before": round(len(raw) / best["before"], 1), "pages_per_s_after": round(len(raw) / best["after"], 1),
            "after_over_before": round(best["after"] / best["before"], 2),
            "text_chars_before": chars["before"], "text_chars_after": chars["after"]}


def child(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    res = subprocess.run([sys.executable, __file__, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20.0, help="size of the huge page (MB)")
    ap.add_argument("--words", type=int, default=20_000, help="length of the long question (words)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "hostile_inputs.json")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared evaluation data folder")
    ap.add_argument("--parts", nargs="*", default=None,
                    help="measure only these (huge_html, deep_nesting, long_question, untrusted_patterns, "
                         "hostile_catalogue, extraction_speed)")
    ap.add_argument("--before", default="main", help="git revision whose extractor and detector are the 'before'")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the extraction speed comparison")
    ap.add_argument("--one", choices=["huge", "anchor"], help=argparse.SUPPRESS)
    ap.add_argument("--cap", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one == "huge":
        print(json.dumps(one_huge(args.mb, args.cap)))
        return 0
    if args.one == "anchor":
        print(json.dumps(one_anchor(args.words, args.cap)))
        return 0
    from agentic_rag.configuration import Settings

    s = Settings.load()
    parts = {
        "huge_html": lambda: {"uncapped": child("--one", "huge", "--mb", str(args.mb)),
                              "capped": child("--one", "huge", "--mb", str(args.mb), "--cap", str(s.retrieval.MAX_PAGE_RAW_CHARS))},
        "deep_nesting": lambda: deep_nesting([100, 300, 2000, 5000]),
        "long_question": lambda: {"cap_off": child("--one", "anchor", "--words", str(args.words), "--cap", str(10**9)),
                                  "cap_default": child("--one", "anchor", "--words", str(args.words))},
        "untrusted_patterns": lambda: pattern_flags(args.data),
        "hostile_catalogue": lambda: hostile_catalogue(args.before),
        "extraction_speed": lambda: extraction_speed(args.before, args.rounds),
    }
    # a part not asked for keeps its last measured figures
    report = json.loads(args.out.read_text()) if args.out.is_file() else {}
    report |= {name: measure() for name, measure in parts.items() if not args.parts or name in args.parts}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
