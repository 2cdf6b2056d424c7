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


def _layered(n: int, signal: float, rng: np.random.Generator, multi_hop: int = 0) -> dict[str, np.ndarray]:
    """A collection of layer 18 only (as the training job keeps it), whose last view carries the label
    with ``signal``: [rows, 1, hidden] per view."""
    y = np.arange(n) % 2
    views = {v: rng.normal(size=(n, 1, 8)).astype(np.float16) for v in ("last", "question")}
    views["last"][:, 0, 0] += (signal * y).astype(np.float16)
    sources = np.array(["hotpotqa"] * multi_hop + ["squad2"] * (n - multi_hop))
    return {**views, "y": y, "ids": np.array([f"q{i}" for i in range(n)]), "groups": np.array([f"g{i}" for i in range(n)]),
            "sources": sources, "layers": np.array([18]), "n_layers": np.array(28), "dtype": np.array("float32")}


def test_the_split_learning_curve_steps_to_the_full_size_and_says_where_it_flattens(tmp_path):
    from agentic_rag.eval.probe_curve import curve_table, flattens_at, plot_curve, sizes_for, split_curve

    assert sizes_for(3000, 400) == [400, 800, 1600, 3000] and sizes_for(300, 400) == [300]
    rng = np.random.default_rng(1)
    train, test = _layered(1600, 1.0, rng, multi_hop=200), _layered(400, 1.0, rng)
    baseline = {"test": rng.normal(size=400) + 0.5 * test["y"]}
    report = split_curve(train, {"test": test}, 18, sizes=[100, 400, 1600], draws=2, baseline=baseline)
    points = report["readers"]["last@18"]["test"]["points"]
    assert [p["rows"] for p in points] == [100, 400, 1600] and report["multi_hop_rows"] == 200
    assert points[-1]["auc"] > 0.7 and points[-1]["ci95"][0] < points[-1]["auc"] < points[-1]["ci95"][1]
    assert "step" not in points[0] and set(points[1]["step"]) == {"diff", "ci95_low", "ci95_high"}
    assert points[-1]["vs_shipped"]["diff"] > 0  # the signal is stronger than the baseline's
    assert report["shipped"]["test"]["auc"] < points[-1]["auc"]
    table = curve_table(report)
    assert "| last@18 | 1600 |" in table and "| shipped probe | - |" in table and "- last@18: test:" in table
    assert plot_curve(report, tmp_path / "curve.png").stat().st_size > 1000
    # where it flattens: the first size after which no step gains beyond its interval
    gain = {"step": {"ci95_low": 0.01}}
    flat = {"step": {"ci95_low": -0.01}}
    assert flattens_at([{"rows": 1}, {"rows": 2, **gain}, {"rows": 4, **flat}, {"rows": 8, **flat}]) == 2
    assert flattens_at([{"rows": 1}, {"rows": 2, **flat}, {"rows": 4, **gain}]) is None


def test_a_probe_fitted_on_some_layers_reads_the_layer_it_was_fitted_on():
    from agentic_rag.reader.probe_training import fit_probe

    views = _layered(200, 2.0, np.random.default_rng(2))
    probe, report = fit_probe(views["last"], views["y"], [str(g) for g in views["groups"]], "key", collected=[18])
    assert probe.layer == 18 and report["chosen_layer"] == 18 and probe.meta["cv_auc"] > 0.8
    with pytest.raises(ValueError, match=r"layers \[12\] were not collected"):
        fit_probe(views["last"], views["y"], [str(g) for g in views["groups"]], "key", layers=[12], collected=[18])


def test_packing_keeps_each_value_within_half_a_step_of_its_chunks_scale():
    from agentic_rag.reader.features import pack

    rng = np.random.default_rng(3)
    chunk = rng.normal(size=(25, 1, 64)).astype(np.float32) * rng.uniform(0.1, 30, size=64).astype(np.float32)
    codes, lo, step = pack(chunk)
    assert codes.dtype == np.uint8 and lo.shape == step.shape == (1, 64)
    assert np.abs(lo + step * codes - chunk).max() <= step.max() / 2 + 1e-5
    # the rounding is small against each dimension's spread: a standardised linear probe cannot tell it apart
    assert (step / 2 / chunk.std(axis=0)).max() < 0.01
    one, lo1, step1 = pack(chunk[:1])  # a chunk of one row keeps it as it is
    assert np.allclose(lo1 + step1 * one, chunk[:1], atol=1e-6)
