"""The dashboard draws the diagnostics runs really write: read with the writer's typed format
(``bench.core.diagnostics_format``), one line per configuration and distance in the through-time panel,
per-layer norms and W_hh spectral norms over steps. End to end: a real sweep with
``diagnostics.gradients=true`` through ``seqbench report``; the figure data is read back from the page."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from seqbench.bench.cli import main
from seqbench.bench.core.diagnostics_format import read_diagnostics
from seqbench.reports.diagnostics import diagnostics_figures, fig_through_time, load_diagnostics, through_time_curves
from tests.report_support import demo_diagnostics


def _runs(tmp_path: Path, models=("rnn", "lstm", "transformer"), seeds=(0, 1)) -> pd.DataFrame:
    rows = []
    for m in models:
        for s in seeds:
            rd = tmp_path / f"{m}-{s}"
            rd.mkdir()
            (rd / "diagnostics.json").write_text(demo_diagnostics(m, delay=4).to_text())
            rows.append({"run_id": rd.name, "run_dir": str(rd), "model": m, "param.model.name": m, "seed": s})
    return pd.DataFrame(rows)


def test_through_time_has_one_point_per_distance_per_configuration_at_first_and_last_record(tmp_path):
    runs = _runs(tmp_path)
    diag = load_diagnostics(runs)
    curves = through_time_curves(diag, runs)
    assert set(curves["configuration"]) == {"rnn", "lstm", "transformer"}
    for (conf, which), g in curves.groupby(["configuration", "record"]):
        assert g["distance"].tolist() == [0, 1, 2, 3, 4, 5, 6] and set(g["runs"]) == {2}
        decay = (
            {"rnn": 0.6, "lstm": 0.97, "transformer": 0.97}[conf]
            if which == "first"
            else {"rnn": 0.9, "lstm": 0.99, "transformer": 0.99}[conf]
        )
        assert g["grad_norm"].tolist() == pytest.approx([decay**k for k in range(7)])
    fig = fig_through_time(diag, runs)
    assert len(fig.data) == 6 and fig.layout.yaxis.type == "log"
    rnn_first = next(t for t in fig.data if t.name == "rnn" and t.xaxis == "x")
    assert list(rnn_first.y) == pytest.approx([0.6**k for k in range(7)])


def test_layer_norms_and_spectral_norms_over_steps(tmp_path):
    runs = _runs(tmp_path)
    items = dict(diagnostics_figures(load_diagnostics(runs), runs))
    layers = items["per-layer gradient norms"]
    assert {t.name for t in layers.data} == {
        f"{m} {layer}" for m in ("rnn", "lstm", "transformer") for layer in ("encoder.embed", "backbone.l0", "head")
    }
    lstm_l0 = next(t for t in layers.data if t.name == "lstm backbone.l0")
    assert list(lstm_l0.x) == [0, 200] and list(lstm_l0.y) == pytest.approx([1.6, 1.6])
    whh = items["W_hh spectral norms"]
    assert {t.name for t in whh.data} == {"rnn backbone.rnn.weight_hh_l0", "lstm backbone.rnn.weight_hh_l0"}
    assert list(whh.data[0].y) == pytest.approx([1.0, 1.2])
    both = items["global gradient norm and loss"]
    assert {t.name for t in both.data} >= {"rnn global grad norm", "rnn training loss"}


def test_a_file_of_another_shape_is_reported_not_half_drawn(tmp_path):
    runs = _runs(tmp_path, models=("rnn",), seeds=(0,))
    (tmp_path / "rnn-0" / "diagnostics.json").write_text(
        json.dumps({"grad_through_time": {"distance": [0, 1], "norm": [1.0, 0.5]}})
    )
    said: list[str] = []
    diag = load_diagnostics(runs, warn=said.append)
    assert diag.empty and len(said) == 1 and "rnn-0" in said[0] and "grad_through_time" in said[0]


# -- end to end ---------------------------------------------------------------------------
def _plotly_data(page: str, title: str) -> list[dict]:
    """The traces of the figure whose panel is titled ``title`` (numeric arrays decoded)."""
    at = page.index(f"data-title='{title}'")
    start = page.index("Plotly.newPlot(", at)
    start = page.index("[", start)
    data, _ = json.JSONDecoder().raw_decode(page[start:])

    def decode(v):
        if isinstance(v, dict) and "bdata" in v:
            return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
        return v

    return [{k: decode(v) for k, v in t.items()} for t in data]


@pytest.mark.slow
def test_real_sweep_with_gradient_diagnostics_reaches_the_dashboard(tmp_path, capsys):
    delay, n_symbols = 5, 2
    spec = {
        "question": "diagnostics e2e",
        "method": "grid",
        "seeds": [0],
        "base": {
            "task": {"name": "copy", "n_symbols": n_symbols, "alphabet": 3, "delay": delay},
            "model": {"d_model": 8},
            "train": {"max_steps": 4, "val_every": 2, "val_batches": 1, "batch_size": 4},
            "eval": {"test_batches": 1},
            "tracking": {"wandb": "off"},
            "diagnostics": {"gradients": True, "every": 2},
        },
        "metric": {"name": "val/acc", "goal": "maximize"},
        "parameters": {"model.name": {"values": ["rnn", "lstm"]}},
    }
    path = tmp_path / "diag_e2e.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out-dir", str(out)]) == 0
    assert main(["report", "diag_e2e", "--out-dir", str(out)]) == 0
    page = (out / "reports" / "diag_e2e" / "index.html").read_text()
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 2 and all([r.step for r in read_diagnostics(r).records] == [0, 2] for r in runs)
    traces = _plotly_data(page, "gradient through time")
    distances = list(range(delay + n_symbols + 1))  # copy: recall at 0 ... first symbol at delay + n_symbols
    for arch in ("rnn", "lstm"):
        for axis in ("x", "x2"):  # first record | last record
            (t,) = [t for t in traces if t["name"] == arch and t.get("xaxis", "x") == axis]
            assert t["x"] == distances and len(t["y"]) == len(distances) and min(t["y"]) > 0
    layer_traces = {t["name"] for t in _plotly_data(page, "per-layer gradient norms")}
    assert "rnn backbone.rnn.l0" in layer_traces and "lstm backbone.rnn.l0" in layer_traces
    whh = {t["name"]: t for t in _plotly_data(page, "W_hh spectral norms")}
    assert whh["rnn backbone.rnn.weight_hh_l0"]["x"] == [0, 2]
