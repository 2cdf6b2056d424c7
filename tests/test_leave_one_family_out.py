"""A decision validated where it was not fitted: each question family left out in turn (issue 70)."""

from __future__ import annotations

import math
import random

from agentic_rag.eval.decision_fit import leave_one_family_out


def test_leaving_a_family_out_shows_a_signal_that_reads_the_other_familys_layout():
    """Two families whose rightness follows overlap; in the SQuAD-like one a layout quirk also makes relevance
    track rightness, in the HotpotQA-like one relevance runs the other way. Fitted on the first and read on the
    second, the decision that reads relevance does worse there than the one without it."""
    rng = random.Random(4)
    records = []
    for i in range(600):
        fam = "squad2" if i % 2 else "hotpotqa"
        overlap = rng.random()
        right = rng.random() < 1 / (1 + math.exp(-8 * (overlap - 0.5)))
        rel = (0.8 if right else 0.2) + 0.1 * rng.random() if fam == "squad2" else (0.2 if right else 0.8) + 0.1 * rng.random()
        records.append({"id": f"{fam}-{i}", "judgement": "right" if right else ("unanswerable" if i % 7 == 0 else "wrong"),
                        "right": right, "status": "ok", "overlap_est": round(overlap, 4), "answer_relevance": round(rel, 4)})
    every = leave_one_family_out(records, 0.5)
    without = leave_one_family_out(records, 0.5, drop=("answer_relevance",))
    assert set(every["families"]) == {"squad", "hotpotqa"} and "answer_relevance" in every["families"]["hotpotqa"]["features"]
    assert without["families"]["hotpotqa"]["auc"] > every["families"]["hotpotqa"]["auc"] + 0.1
    assert without["worst_score"] > every["worst_score"]
    fam = every["families"]["squad"]
    assert fam["drafts"] == 300 and 0 <= fam["false_refusal"] <= 1 and 0 <= fam["right_kept"] <= 1
