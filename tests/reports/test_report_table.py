"""Study + run folders -> the tidy table: one row per run, every trial state counted."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from seqbench.bench.core.errors import UserError
from seqbench.reports.table import compute_seconds, load_curves, state_counts, study_info
from seqbench.sweeps.table import build_table, load_study, runs_root
from tests.report_support import (
    DELAYS,
    MODELS,
    SEEDS,
    WARMUPS,
    demo_acc,
    demo_study,
    is_diverged,
    journal_storage,
    new_study,
)


@pytest.fixture
def demo(out_dir):
    out_dir.mkdir(parents=True)
    storage = journal_storage(out_dir / "optuna.journal")
    return demo_study(storage, out_dir), storage


def test_one_row_per_run_with_known_values(demo, out_dir):
    study, _ = demo
    df = build_table(study, runs_root(study, out_dir))
    grid = df[df["trial"] < 12]
    assert len(grid) == len(MODELS) * len(DELAYS) * len(WARMUPS) * len(SEEDS)
    for r in grid.itertuples(index=False):
        m, d, w, s = (
            r[df.columns.get_loc("param.model.name")],
            r[df.columns.get_loc("param.task.delay")],
            r[df.columns.get_loc("param.optim.warmup_steps")],
            r.seed,
        )
        got = r[df.columns.get_loc("objective:val/acc")]
        if is_diverged(m, d, w, s):
            assert math.isnan(got) and r.status == "diverged" and r.diverged and r.state == "FAIL"
        else:
            assert got == pytest.approx(demo_acc(m, d, w, s))
            assert r[df.columns.get_loc("final.val/acc")] == pytest.approx(demo_acc(m, d, w, s))
        assert r[df.columns.get_loc("baseline.val/acc")] == 0.25


def test_failed_pruned_running_waiting_trials_are_counted(demo, out_dir):
    study, _ = demo
    df = build_table(study, runs_root(study, out_dir))
    assert state_counts(df) == {"COMPLETE": 11, "PRUNED": 1, "FAIL": 2, "RUNNING": 1, "WAITING": 1}
    by_trial = df.drop_duplicates("trial").set_index("trial")
    assert by_trial.loc[12, "status"] == "not-started" and "out of memory" in by_trial.loc[12, "fail_reason"]
    assert by_trial.loc[14, "status"] == "incomplete" and by_trial.loc[15, "status"] == "not-started"
    pruned = df[df["state"] == "PRUNED"].iloc[0]
    assert pruned["final.val/acc"] == 0.3 and math.isnan(pruned["objective:val/acc"])  # not comparable
    # compute time: the trials' recorded wall time (the demo records 2 x (5 + delay) per grid trial + 1 + 3)
    expected = sum(2 * (5.0 + d) for _ in MODELS for d in DELAYS for _ in WARMUPS) + 1.0 + 3.0
    assert compute_seconds(df) == pytest.approx(expected)


def test_curves_are_read_from_metrics_csv(demo, out_dir):
    study, _ = demo
    df = build_table(study, runs_root(study, out_dir))
    curves = load_curves(df)
    one = curves[(curves["run_id"] == "t0-rnn-d5-w0-s0") & (curves["metric"] == "val/acc")]
    assert list(one["step"]) == [50, 100, 150, 200]
    assert one["value"].iloc[-1] == pytest.approx(demo_acc("rnn", 5, 0, 0))


def test_info_header_and_unknown_study(demo, out_dir):
    study, storage = demo
    info = study_info(study, "journal")
    assert info.question.startswith("How long a delay")
    assert [o.name for o in info.objectives] == ["val/acc"] and info.objectives[0].maximize
    assert info.params == ["model.name", "task.delay", "optim.warmup_steps"]
    with pytest.raises(UserError, match="no study named 'nope'.*ld_demo"):
        load_study("nope", storage)


def test_runs_found_under_fallback_out_dir_and_empty_study(out_dir, tmp_path):
    out_dir.mkdir(parents=True)
    storage = journal_storage(out_dir / "optuna.journal")
    study = new_study(storage, "empty", tmp_path / "moved-away", {"model.name": {"values": ["rnn"]}}, "q")
    assert runs_root(study, out_dir) == out_dir / "runs"
    df = build_table(study, out_dir / "runs")
    assert df.empty and "objective:val/acc" in df.columns
    assert state_counts(df)["COMPLETE"] == 0 and compute_seconds(df) == 0.0
    assert load_curves(df).empty


def test_real_run_folder_from_bench_train(out_dir):
    """A trial whose run folder was written by bench.training.train.train_run itself (tiny config)."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState

    from seqbench.bench.config import build_config
    from seqbench.bench.training.train import train_run
    from tests.helpers import tiny_overrides
    from tests.report_support import add_trial

    out_dir.mkdir(parents=True)
    cfg = build_config({}, tiny_overrides("copy", "lstm", out_dir, **{"eval.lengths": "[12]"}))
    r = train_run(cfg, progress=False)
    storage = journal_storage(out_dir / "optuna.journal")
    study = new_study(storage, "real", out_dir, {"model.name": {"values": ["lstm"]}}, "real run")
    add_trial(
        study,
        {"model.name": "lstm"},
        {"model.name": CategoricalDistribution(["lstm"])},
        state=TrialState.COMPLETE,
        values=[r["final"]["val/acc"]],
        attrs={"run_ids": [r["run_id"]], "seeds": [0], "per_seed": [r["final"]["val/acc"]]},
    )
    df = build_table(study, runs_root(study, out_dir))
    row = df.iloc[0]
    assert row["run_id"] == r["run_id"] and row["status"] == r["status"]
    assert row["final.test@12/acc"] == pytest.approx(r["final"]["test@12/acc"])
    assert row["baseline.val/acc"] == pytest.approx(r["baseline"]["val/acc"])
    curves = load_curves(df)
    assert set(curves["metric"]) >= {"train/loss", "val/loss", "val/acc"}
    assert isinstance(df, pd.DataFrame) and row["n_params"] == r["n_params"]
