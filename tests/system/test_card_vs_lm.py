"""benchmarks/card_vs_lm.py: the probe score of a card, the exact permutation test (calibrated on
simulated nulls here) and a tiny end-to-end run that trains character LMs and resumes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import benchmark_script

cvl = benchmark_script("card_vs_lm")


def _card(models: list[tuple[str, list[str]]], frontiers: dict[str, dict[str, list[int]]]) -> dict:
    """A card with probes a (3 rungs) and b (2 rungs); frontiers[model][probe] = per seed frontier."""
    entries = [
        {"model": m, "probe": p, "seed_frontiers": {str(i): f for i, f in enumerate(fs)}}
        for m, per in frontiers.items()
        for p, fs in per.items()
    ]
    return {
        "profile": "quick",
        "probes": [{"name": "a", "rungs": [1, 2, 3]}, {"name": "b", "rungs": [1, 2]}],
        "models": [{"label": label, "settings": settings} for label, settings in models],
        "entries": entries,
    }


def test_probe_score_is_the_mean_share_of_each_ladder_solved():
    card = _card([], {"lstm": {"a": [2, -1], "b": [0, 1]}, "half": {"a": [0]}})
    scores = cvl.probe_scores(card)
    # seed 0: (3/3 + 1/2) / 2 = 0.75; seed 1: (0/3 + 2/2) / 2 = 0.5 (below the first rung counts 0, never solved)
    assert scores["lstm"] == pytest.approx([0.75, 0.5])
    assert "half" not in scores  # a model missing a probe has no score rather than a partial one


def test_permutation_p_is_exact_for_a_perfect_ranking():
    assert cvl.permutation_p([1, 2, 3, 4, 5], [10, 20, 30, 40, 50]) == pytest.approx(1 / 120)
    assert cvl.permutation_p([1, 2, 3, 4, 5], [50, 40, 30, 20, 10]) == pytest.approx(1.0)
    assert cvl.spearman([1, 1, 1, 1], [1, 2, 3, 4]) != cvl.spearman([1, 1, 1, 1], [1, 2, 3, 4])  # nan: no ranking


@pytest.mark.parametrize("n,ties", [(5, False), (6, False), (6, True)])
def test_permutation_test_holds_its_level_on_simulated_nulls(n, ties):
    """Independent scores (no relation): p < 0.05 in at most 5% of 2000 tables, plus Monte-Carlo error
    (3 SE = 1.5 points); tied scores (discrete frontiers) too."""
    rng = np.random.default_rng(n + 10 * ties)
    draws, hits = 2000, 0
    for _ in range(draws):
        x = rng.integers(0, 3, n) if ties else rng.normal(size=n)
        y = rng.normal(size=n)
        p = cvl.permutation_p(list(map(float, x)), list(map(float, y)))
        hits += p == p and p < 0.05
    assert hits / draws <= 0.05 + 3 * (0.05 * 0.95 / draws) ** 0.5, hits / draws


def test_permutation_test_has_power_on_a_strong_relation():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(200):
        x = rng.normal(size=7)
        hits += cvl.permutation_p(list(x), list(x + 0.3 * rng.normal(size=7))) < 0.05
    assert hits / 200 > 0.8


def test_fewer_than_four_models_is_refused():
    with pytest.raises(SystemExit, match="need 4 or more models"):
        cvl.judge({"a": [1.0], "b": [0.5], "c": [0.2]}, {"a": [-2.0], "b": [-3.0], "c": [-4.0]})


def test_end_to_end_trains_each_model_and_reads_finished_runs_back(tmp_path, capsys):
    models = [(m, [f"model.name={m}"]) for m in ("lstm", "gru", "rnn", "tcn")]
    card = _card(models, {m: {"a": [i - 1], "b": [min(i, 1) - 1]} for i, (m, _) in enumerate(models)})
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card))
    args = [str(path), "--seeds", "1", "--lrs", "3e-3", "--steps", "3", "--out-dir", str(tmp_path)]
    assert cvl.main(args) == 0
    record = json.loads((tmp_path / "card_vs_lm.json").read_text())
    assert record["models"] == ["lstm", "gru", "rnn", "tcn"]
    assert -1 <= record["rho"] <= 1 and 0 < record["p_one_sided"] <= 1
    assert all(v < 0 for v in record["lm_score"].values())  # -bpc
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 4 and all((r / "results.json").exists() for r in runs)
    stamp = {r.name: (r / "results.json").stat().st_mtime_ns for r in runs}
    assert cvl.main(args) == 0  # finished runs are read back, not trained again
    assert stamp == {r.name: (r / "results.json").stat().st_mtime_ns for r in runs}
    assert "Spearman rho" in capsys.readouterr().out
