"""A decision validated where it was not fitted: each question family left out in turn (issue 70)."""

from __future__ import annotations

import math
import random

from agentic_rag.training.transfer import leave_one_family_out


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


def test_a_candidate_signal_is_read_beside_the_decisions_own_and_the_best_cut_bounds_what_a_cut_can_do():
    """A candidate (not one of the decision's signals) that tells answerable questions from unanswerable ones in
    every family: read with ``extra`` it enters each fit, and some cut on the P it gives then refuses 70% of the
    unanswerable drafts while answering nearly every answerable one; without it, overlap alone cannot."""
    rng = random.Random(5)
    records = []
    for i in range(400):
        fam = "squad2" if i % 2 else "quail"
        answerable = i % 3 != 0
        right = answerable and rng.random() < 0.8
        records.append({"id": f"{fam}-{i}", "judgement": "right" if right else "wrong" if answerable else "unanswerable",
                        "right": right, "status": "ok", "overlap_est": round(rng.random(), 4),
                        "answer_stated": round((0.6 if answerable else 0.0) + 0.3 * rng.random() + (0.1 if right else 0), 4)})
    plain = leave_one_family_out(records, 0.5)
    with_it = leave_one_family_out(records, 0.5, extra=("answer_stated",))
    assert "answer_stated" not in plain["families"]["quail"]["features"]
    assert "answer_stated" in with_it["families"]["quail"]["features"]
    for fam in ("squad", "quail"):
        assert with_it["families"][fam]["best_cut_false_refusal"] < 0.1
        assert plain["families"][fam]["best_cut_false_refusal"] > 0.4
    pooled = with_it["pooled_score"]
    assert pooled["drafts"] == 400 and pooled["ci95"][0] < pooled["score"] < pooled["ci95"][1]
    assert pooled["score"] > plain["pooled_score"]["score"]


def test_the_reader_refitted_per_fold_never_reads_a_family_it_was_fitted_on():
    """Two families whose answerable questions show in different directions of the prompt's state: the reader fitted
    without QuAIL reads QuAIL at chance, while SQuAD's own drafts, read out of fold, are read well. A reader that
    had seen QuAIL would read it well too."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from agentic_rag.training.transfer import reader_refit

    rng = np.random.default_rng(3)
    ids, last, records = [], [], []
    for i in range(300):
        fam = "squad2" if i % 2 else "quail"
        answerable = i % 3 != 0
        x = rng.normal(size=8)
        x[0 if fam == "squad2" else 1] += 2.5 if answerable else -2.5
        ids.append(f"{fam}-{i}")
        last.append(x)
        records.append({"id": f"{fam}-{i}", "judgement": "right" if answerable else "unanswerable", "right": answerable})
    states = {"ids": np.array(ids), "state": np.stack(last), "question_state": np.stack(last)}
    refit = reader_refit(states)
    squad = [r for r in records if r["id"].startswith("squad2")]
    quail = [r for r in records if r["id"].startswith("quail")]
    train, test = refit("quail", squad, quail)
    def auc_of(rows):
        return roc_auc_score([r["judgement"] != "unanswerable" for r in rows], [r["answerability"] for r in rows])
    assert auc_of(train) > 0.9 and 0.3 < auc_of(test) < 0.7
    _, seen = refit("quail", quail, quail)  # fitted on QuAIL itself: it reads QuAIL
    assert auc_of(seen) > 0.9
