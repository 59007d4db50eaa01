"""The dashboard's throughput panel: tokens/s and MFU per configuration from results.json, skipped with a reason."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState

from seqbench.reports import throughput as T
from seqbench.reports.build import build_report
from tests.report_support import add_trial, journal_storage, new_study, write_run


def frame(**cols) -> pd.DataFrame:
    base = {
        "trial": [0, 0, 1, 1],
        "run_id": ["a", "b", "c", "d"],
        "diverged": [False] * 4,
        "param.model.name": ["lstm", "lstm", "transformer", "transformer"],
    }
    return pd.DataFrame({**base, **cols})


def test_means_per_configuration_are_the_values_put_in():
    df = frame(
        tokens_per_s=[100.0, 300.0, 1000.0, 1000.0],
        model_flops_per_s=[1e9, 3e9, 5e9, 5e9],
        mfu=[0.10, 0.30, 0.40, 0.40],
    )
    t = T.throughput_table(df).set_index("configuration")
    assert t.loc["model.name=lstm", "tokens_per_s mean"] == pytest.approx(200.0)
    assert t.loc["model.name=lstm", "tokens_per_s std"] == pytest.approx(math.sqrt(2) * 100)
    assert t.loc["model.name=transformer", "mfu mean"] == pytest.approx(0.40)
    assert t.loc["model.name=lstm", "model_flops_per_s mean"] == pytest.approx(2e9)
    items = dict(T.throughput_items(df))
    fig = items["throughput"]
    tokens, mfu = fig.data
    assert list(tokens.y) == ["model.name=lstm", "model.name=transformer"]
    assert list(tokens.x) == pytest.approx([200.0, 1000.0])
    assert list(mfu.x) == pytest.approx([20.0, 40.0])  # percent
    shown = items["Throughput per configuration"]
    assert list(shown["MFU"]) == ["20 ± 14 %", "40 ± 0 %"]


def test_without_mfu_the_tokens_panel_stays_and_mfu_says_why():
    df = frame(tokens_per_s=[100.0, 300.0, 1000.0, float("nan")], mfu=[None] * 4)
    items = dict(T.throughput_items(df))
    assert len(items["throughput"].data) == 1
    assert items["MFU"].startswith("skipped: no run recorded mfu (CPU runs, or a GPU")
    t = T.throughput_table(df).set_index("configuration")
    assert t.loc["model.name=transformer", "runs"] == 1  # the run without a record is not counted


@pytest.mark.parametrize("cols", [{}, {"tokens_per_s": [None] * 4}])
def test_runs_without_throughput_skip_the_panel_with_the_reason(cols):
    items = T.throughput_items(frame(**cols))
    assert items == [
        (
            "Throughput",
            "skipped: no run recorded tokens_per_s in its results.json (runs made before seqbench measured throughput)",
        )
    ]


def test_dashboard_shows_the_panel_from_results_json(tmp_path):
    out_dir = tmp_path / "outputs"
    study = new_study(
        journal_storage(tmp_path / "j.journal"),
        "tp",
        out_dir,
        {"model.name": {"values": ["lstm", "gru"]}},
        "throughput?",
    )
    dist = {"model.name": CategoricalDistribution(["lstm", "gru"])}
    for i, (m, tps) in enumerate((("lstm", 1234.0), ("gru", 4321.0))):
        write_run(
            out_dir,
            f"r{i}",
            final={"val/acc": 0.5},
            baseline={"val/acc": 0.25},
            model=m,
            extra={"tokens_per_s": tps, "model_flops_per_s": tps * 1e6, "mfu": None},
        )  # the run's key
        add_trial(
            study,
            {"model.name": m},
            dist,
            state=TrialState.COMPLETE,
            values=[0.5],
            attrs={"run_ids": [f"r{i}"], "seeds": [0], "per_seed": [0.5], "mean": 0.5, "std": 0.0},
        )
    report = build_report(study, "journal", tmp_path / "report", out_dir)
    html = report.index.read_text()
    assert "Throughput and utilisation" in html and "skipped: no run recorded mfu" in html
    md = (report.folder / "summary.md").read_text()
    assert "| model.name=gru | 1 | 4321 (one run) | 4.32e+09 | – |" in md
    assert "| model.name=lstm | 1 | 1234 (one run) | 1.23e+09 | – |" in md
