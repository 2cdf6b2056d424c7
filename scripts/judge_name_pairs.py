"""False-positive check of the judge's ``full_name`` rule on real gold answers.

The rule accepts a prediction whose name extends the gold's ("Lionel Messi" -> "Lionel Andres Messi
Cuccittini"). Its risk is a *different* person or thing whose name holds the gold's words in order
("Michael Jordan" -> "Michael B. Jordan"). Gold answers give both kinds of pair without any model:
every gold answer of SQuAD 2.0 (answerable), NQ-open and CRAG is tried as a prediction against every
other gold. A pair where the rule decides (no earlier rule did) is

- ``same_question``: both are gold answers of one question (the same referent: a true positive);
- ``cross_question``: golds of different questions (a candidate false positive, listed for reading).

A second check reads the passages: every sentence of a SQuAD or NQ gold passage is tried as a
prediction (a small model often answers by copying one) against its own question's golds; where the
rule decides, the name it matched is listed for reading (the passage's own longer name for the
answer, or another person in the same passage).

The same check runs for the ``type_name`` rule (a gold "Hurricane Ivan" named as "Ivan"): each gold is
tried against the golds whose name, less the type word, it holds.

Writes benchmarks/judge_agreement/RULE_pairs.json and .md (RULE: full_name, type_name). Usage:
python scripts/judge_name_pairs.py [--data ../shared/data] [--rule full_name|type_name]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from agentic_rag.eval.judge import TYPE_WORDS, fold_word, judge, normalize
from agentic_rag.eval.markdown import md_escape

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "judge_agreement"
MAX_PREDICTION_WORDS = 8  # golds longer than this are sentences, not names to try as predictions


def gold_sets(data: Path) -> list[tuple[str, list[str]]]:
    """(question id, its distinct gold answers) for SQuAD answerable, NQ-open and CRAG v4."""
    out: list[tuple[str, list[str]]] = []
    for line in (data / "squad2" / "squad2_dev_half.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if not r.get("is_impossible") and r.get("answers"):
            texts = [a["text"] if isinstance(a, dict) else str(a) for a in r["answers"]]
            out.append((f"squad:{r['id']}", list(dict.fromkeys(texts))))
    for i, line in enumerate((data / "nq" / "nq_open_oracle.jsonl").read_text(encoding="utf-8").splitlines()):
        out.append((f"nq:{i}", list(dict.fromkeys(json.loads(line)["answers"]))))
    for line in (data / "crag" / "crag_dev_v4_queries_answers.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        out.append((f"crag:{r['row']}", [str(r["answer"])]))
    return out


def passages(data: Path) -> list[tuple[str, list[str], str]]:
    """(question id, golds, gold passage) for SQuAD answerable and NQ-open."""
    out = []
    for line in (data / "squad2" / "squad2_dev_half.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if not r.get("is_impossible") and r.get("answers"):
            golds = list(dict.fromkeys(a["text"] if isinstance(a, dict) else str(a) for a in r["answers"]))
            out.append((f"squad:{r['id']}", golds, r["context"]))
    for i, line in enumerate((data / "nq" / "nq_open_oracle.jsonl").read_text(encoding="utf-8").splitlines()):
        r = json.loads(line)
        out.append((f"nq:{i}", list(dict.fromkeys(r["answers"])), r["ctxs"][0]["text"]))
    return out


def index_words(key: str, rule: str) -> list[str]:
    """The words of a normalised gold that a prediction must hold for ``rule`` to decide: the first word
    of a name for ``full_name``, the name less its type word for ``type_name`` (none: the rule never applies)."""
    words = [fold_word(w) for w in key.split()]
    if not 2 <= len(words) <= 4 or any(c.isdigit() for c in key):
        return []
    if rule == "full_name":
        return words[:1]
    if words[0] in TYPE_WORDS:
        return words[1:]
    return words[:-1] if words[-1] in TYPE_WORDS else []


def sentence_firings(data: Path, rule: str) -> tuple[int, list[dict[str, str]]]:
    """Passage sentences on which ``rule`` decides, against their own question's golds."""
    from agentic_rag.text import split_sentences

    tried, fired = 0, []
    for qid, golds, text in passages(data):
        if not any(index_words(normalize(g), rule) for g in golds):
            continue
        for sent in split_sentences(text):
            tried += 1
            j = judge(sent, sent, golds[0], golds[1:], False, question="")
            if j.rule == rule:
                fired.append({"id": qid, "golds": " | ".join(golds), "sentence": sent[:240]})
    return tried, fired


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--rule", choices=("full_name", "type_name"), default="full_name")
    args = ap.parse_args()
    rule = args.rule
    sets = gold_sets(args.data)
    owners: dict[str, set[str]] = defaultdict(set)  # normalised gold -> question ids
    shown: dict[str, str] = {}
    for qid, golds in sets:
        for g in golds:
            key = normalize(g)
            if key:
                owners[key].add(qid)
                shown.setdefault(key, g)
    by_first: dict[str, list[str]] = defaultdict(list)
    for key in owners:
        for w in index_words(key, rule)[:1]:
            by_first[w].append(key)
    fired = {"same_question": [], "cross_question": []}
    tried = 0
    for pkey, pq in owners.items():
        words = pkey.split()
        if len(words) > MAX_PREDICTION_WORDS:
            continue
        pred = shown[pkey]
        for gkey in {g for w in words for g in by_first.get(fold_word(w), [])}:
            if gkey == pkey:
                continue
            tried += 1
            j = judge(pred, pred, shown[gkey], [], False, question="")
            if j.rule == rule:
                kind = "same_question" if pq & owners[gkey] else "cross_question"
                fired[kind].append({"gold": shown[gkey], "prediction": pred})
    sentences_tried, in_passages = sentence_firings(args.data, rule)
    summary = {"questions": len(sets), "distinct_golds": len(owners), "pairs_tried": tried,
               **{k: len(v) for k, v in fired.items()}, "passage_sentences_tried": sentences_tried,
               "passage_sentences_fired": len(in_passages)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{rule}_pairs.json").write_text(
        json.dumps({**summary, "pairs": fired, "passage_sentences": in_passages}, indent=1, ensure_ascii=False) + "\n")
    lines = [
        f"# The `{rule}` judge rule on pairs of gold answers",
        "",
        f"Every gold answer of {len(sets)} questions (SQuAD 2.0 answerable, NQ-open, CRAG v4) tried as a prediction "
        f"against every other gold whose {'first word' if rule == 'full_name' else 'name less its type word'} it contains "
        f"({tried} pairs). Generated by `scripts/judge_name_pairs.py --rule {rule}`.",
        "",
        f"| pairs where `{rule}` decides | count |",
        "|---|---|",
        f"| golds of the same question (same referent) | {summary['same_question']} |",
        f"| golds of different questions (read below) | {summary['cross_question']} |",
        f"| gold-passage sentences, against their own question's golds (of {sentences_tried}) | {len(in_passages)} |",
        "",
        "## Golds of different questions",
        "",
    ]
    lines += [f"- gold \"{md_escape(p['gold'])}\" <- prediction \"{md_escape(p['prediction'])}\""
              for p in fired["cross_question"]] or ["none"]
    lines += ["", "## Golds of the same question", ""]
    lines += [f"- gold \"{md_escape(p['gold'])}\" <- prediction \"{md_escape(p['prediction'])}\""
              for p in fired["same_question"]] or ["none"]
    lines += ["", "## Gold-passage sentences", ""]
    lines += [f"- {md_escape(p['id'])}: golds \"{md_escape(p['golds'])}\" <- \"{md_escape(p['sentence'])}\""
              for p in in_passages] or ["none"]
    (OUT / f"{rule}_pairs.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
