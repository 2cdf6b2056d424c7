"""The probe's richer views of one prefill (reader/features.py) and the script that compares them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentic_rag.reader.features import ensembles, feature_sets, token_span

ROOT = Path(__file__).resolve().parents[1]


def test_token_span_keeps_only_tokens_inside_the_characters():
    offsets = [(0, 0), (0, 5), (5, 9), (9, 12), (12, 20)]
    assert token_span(offsets, 5, 12) == (2, 4)
    with pytest.raises(ValueError, match="no token"):
        token_span(offsets, 20, 30)


def _views(n: int, signal: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    y = np.arange(n) % 2
    views = {v: rng.normal(size=(n, 5, 8)).astype(np.float16) for v in ("last", "evidence", "question")}
    views["evidence"][:, 3, 0] += (signal * y).astype(np.float16)  # only the pooled evidence view carries the label
    return {**views, "y": y, "ids": np.array([f"q{i}" for i in range(n)]), "groups": np.array([f"g{i // 2}" for i in range(n)]),
            "sources": np.array(["a"] * n), "prompt_tokens": np.full(n, 100), "ms": np.full(n, 50)}


def test_compare_ranks_the_feature_set_that_carries_the_signal(tmp_path):
    from agentic_rag.eval.feature_report import compare_views, features_table

    rng = np.random.default_rng(0)
    report = compare_views(_views(120, 3.0, rng), {"test": _views(60, 3.0, rng)}, layer=3, c_grid=[1.0, 0.01])
    sets = report["feature_sets"]
    assert set(sets) == {k for k in feature_sets(3, 4) if "draft" not in k} | set(ensembles(3))
    assert report["not_compared"] == [k for k in feature_sets(3, 4) if "draft" in k]
    assert sets["evidence@3"]["cv_auc"] > 0.9 and sets["evidence@3"]["auc_test"] > 0.9
    assert sets["last@3"]["auc_test"] < 0.75 and sets["question@3"]["cv_auc"] < 0.75
    joined = sets["last@3 + question@3, mean logit"]
    assert joined["features"] == 16 and joined["cv_auc"] < 0.75  # neither member carries the signal
    gain = sets["evidence@3"]["vs_base"]["test"]
    assert gain["ci95_low"] > 0.1 and "vs_base" not in sets["last@3"]  # measured against the shipped view
    assert "| evidence@3 | 8 | 1.0 |" in features_table(report, ["test"])
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_probe_features.py"), "compare",
                          "--train", str(tmp_path / "none")], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0 and "no views" in bad.stderr


def test_auc_difference_is_paired_and_its_interval_holds_the_noise():
    from agentic_rag.eval.probe_report import auc_difference

    rng = np.random.default_rng(0)
    y = np.arange(200) % 2
    noisy = y + rng.normal(scale=2.0, size=200)
    same = auc_difference(y, noisy, noisy)
    assert same == {"diff": 0.0, "ci95_low": 0.0, "ci95_high": 0.0}
    better = auc_difference(y, noisy, y + rng.normal(scale=0.5, size=200))
    assert better["diff"] > 0.2 and 0 < better["ci95_low"] < better["diff"] < better["ci95_high"]
    close = auc_difference(y, noisy, noisy + rng.normal(scale=0.3, size=200))
    assert close["ci95_low"] < 0 < close["ci95_high"]
