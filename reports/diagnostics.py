"""Diagnostics panels from the runs' ``diagnostics.json`` (``diagnostics.gradients=true``).

The file is read with the typed definition its writer uses (``bench.core.diagnostics_format``), so a
quantity the runs record cannot be silently dropped here, and a file of another shape is reported
(one warning line naming the file) instead of half-drawn. Four figures, each a pure function of the
long frame ``load_diagnostics`` returns (columns ``DIAG_COLUMNS``):

- gradient through time: mean ||dL/dx_t|| against distance from the loss positions (log y), at
  each run's first and last record, one line per configuration (the swept parameters: the
  architecture when only it varies), averaged over the configuration's seed replicates;
- per-layer gradient norms against step;
- W_hh spectral norms (largest singular value of each recurrent matrix) against step;
- global gradient norm before clipping and the training loss against step.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seqbench.bench.core.diagnostics_format import FILENAME, DiagnosticsFormatError, read_diagnostics
from seqbench.reports.aggregate import label, swept
from seqbench.reports.figures import PALETTE
from seqbench.reports.table import run_rows

DIAG_COLUMNS = ["run_id", "step", "quantity", "name", "distance", "value"]
THROUGH_TIME, LAYER, W_HH, GLOBAL, LOSS = (
    "through_time",
    "layer_grad_norm",
    "w_hh_spectral_norm",
    "global_grad_norm",
    "loss",
)
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def diagnostics_rows(run_id: str, path: Path) -> list[tuple[Any, ...]]:
    """One run's file as rows of ``DIAG_COLUMNS`` (every quantity of every record)."""
    rows: list[tuple[Any, ...]] = []
    for r in read_diagnostics(path).records:
        rows.append((run_id, r.step, GLOBAL, "", math.nan, r.global_grad_norm))
        if r.loss is not None:
            rows.append((run_id, r.step, LOSS, "", math.nan, r.loss))
        rows += [(run_id, r.step, LAYER, k, math.nan, v) for k, v in r.layer_grad_norm.items()]
        rows += [(run_id, r.step, W_HH, k, math.nan, v) for k, v in r.w_hh_spectral_norm.items()]
        if r.through_time is not None:
            tt = r.through_time
            rows += [(run_id, r.step, THROUGH_TIME, "", float(d), v) for d, v in zip(tt.distance, tt.grad_norm)]
    return rows


def load_diagnostics(df: pd.DataFrame, warn=lambda m: print(m, file=sys.stderr)) -> pd.DataFrame:
    """Every run's diagnostics as one long frame; empty when no run recorded any."""
    rows: list[tuple[Any, ...]] = []
    if "run_dir" in df.columns:
        for run_id, run_dir in run_rows(df)[["run_id", "run_dir"]].itertuples(index=False):
            path = Path(run_dir) / FILENAME
            if not path.is_file():
                continue
            try:
                rows += diagnostics_rows(run_id, path)
            except (OSError, DiagnosticsFormatError) as e:
                warn(f"warning: diagnostics of run {run_id} left out: {e}")
    return pd.DataFrame(rows, columns=DIAG_COLUMNS).astype({"step": int, "value": float, "distance": float})


# -- which line a run belongs to ------------------------------------------------------------
def _labels(runs: pd.DataFrame) -> dict[str, str]:
    """run_id -> its configuration: the swept parameters (``model`` when nothing is swept)."""
    keys = swept(runs) or [c for c in ("model",) if c in runs.columns]
    out = {}
    for _, row in runs.iterrows():
        out[row["run_id"]] = (
            " · ".join(str(row[k]) if label(k) in ("model.name", "model") else f"{label(k)}={row[k]}" for k in keys)
            or "runs"
        )
    return out


def _colors(labels: dict[str, str]) -> dict[str, str]:
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(sorted(set(labels.values())))}


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        title=title,
        height=height,
        template="plotly_white",
        margin=dict(l=60, r=30, t=70, b=50),
        legend=dict(font=dict(size=11)),
    )
    return fig


# -- figures --------------------------------------------------------------------------------
def through_time_curves(diag: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """configuration, record (first/last), distance, grad_norm (mean over seeds), runs, steps."""
    tt = diag[diag["quantity"] == THROUGH_TIME]
    labels = _labels(runs)
    parts = []
    for run_id, g in tt.groupby("run_id"):
        for which, step in (("first", g["step"].min()), ("last", g["step"].max())):
            s = g[g["step"] == step]
            parts.append(
                pd.DataFrame(
                    {
                        "configuration": labels.get(run_id, run_id),
                        "record": which,
                        "step": step,
                        "run_id": run_id,
                        "distance": s["distance"],
                        "grad_norm": s["value"],
                    }
                )
            )
    if not parts:
        return pd.DataFrame(columns=["configuration", "record", "distance", "grad_norm", "runs", "steps"])
    long = pd.concat(parts, ignore_index=True)
    out = (
        long.groupby(["configuration", "record", "distance"], sort=True)
        .agg(
            grad_norm=("grad_norm", "mean"),
            runs=("run_id", "nunique"),
            steps=("step", lambda s: ",".join(str(int(x)) for x in sorted(set(s)))),
        )
        .reset_index()
    )
    return out


def fig_through_time(diag: pd.DataFrame, runs: pd.DataFrame) -> go.Figure:
    """||dL/dx_t|| against distance, first record | last record, one line per configuration (log y)."""
    curves = through_time_curves(diag, runs)
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=["first record (initialisation)", "last record (end of training)"],
    )
    colors = _colors(_labels(runs))
    for col, which in ((1, "first"), (2, "last")):
        for conf, g in curves[curves["record"] == which].groupby("configuration", sort=True):
            g = g.sort_values("distance")
            fig.add_trace(
                go.Scatter(
                    x=g["distance"],
                    y=g["grad_norm"],
                    mode="lines+markers",
                    marker=dict(size=4),
                    name=conf,
                    legendgroup=conf,
                    showlegend=col == 1,
                    line=dict(color=colors.get(conf, "#777")),
                    customdata=g[["runs", "steps"]].values,
                    hovertemplate="distance %{x}: %{y:.3g}<br>%{customdata[0]} run(s), step %{customdata[1]}"
                    f"<extra>{conf} ({which})</extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="distance from the loss positions (steps)", row=1, col=col)
    fig.update_yaxes(type="log", title_text="mean ||dL/dx_t||", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    return _layout(fig, "Gradient through time: ||dL/dx_t|| against distance (mean over seeds)")


def _over_steps(
    diag: pd.DataFrame, runs: pd.DataFrame, quantity: str, title: str, ytitle: str, log: bool = True
) -> go.Figure:
    """``quantity`` against step, colour = configuration, dash = the named part; mean over seeds."""
    sub = diag[diag["quantity"] == quantity].copy()
    labels = _labels(runs)
    colors = _colors(labels)
    sub["configuration"] = sub["run_id"].map(lambda r: labels.get(r, r))
    mean = sub.groupby(["configuration", "name", "step"], sort=True)["value"].mean().reset_index()
    names = list(dict.fromkeys(sub["name"]))
    fig = go.Figure()
    for (conf, name), g in mean.groupby(["configuration", "name"], sort=True):
        trace = f"{conf} {name}".strip()
        fig.add_trace(
            go.Scatter(
                x=g["step"],
                y=g["value"],
                mode="lines+markers",
                marker=dict(size=4),
                name=trace,
                line=dict(color=colors.get(conf, "#777"), dash=_DASHES[names.index(name) % len(_DASHES)]),
                hovertemplate=f"step %{{x}}: %{{y:.4g}}<extra>{trace}</extra>",
            )
        )
    fig.update_xaxes(title_text="step")
    positive = (mean["value"] > 0).all() and len(mean)
    fig.update_yaxes(title_text=ytitle, type="log" if log and positive else "linear")
    return _layout(fig, title)


def diagnostics_figures(diag: pd.DataFrame, runs: pd.DataFrame) -> list[tuple[str, Any]]:
    """The dashboard's diagnostics items; a quantity no run recorded gets a one-line 'skipped' note."""
    have = set(diag["quantity"])
    items: list[tuple[str, Any]] = []
    items.append(
        ("gradient through time", fig_through_time(diag, runs))
        if THROUGH_TIME in have
        else ("gradient through time", "skipped: no run recorded it (models without one backbone input)")
    )
    items.append(
        (
            "per-layer gradient norms",
            _over_steps(diag, runs, LAYER, "Gradient norm per layer before clipping (mean over seeds)", "||grad||"),
        )
    )
    items.append(
        (
            "W_hh spectral norms",
            _over_steps(
                diag,
                runs,
                W_HH,
                "Spectral norm of each recurrent matrix W_hh (mean over seeds)",
                "sigma_max(W_hh)",
                log=False,
            ),
        )
        if W_HH in have
        else ("W_hh spectral norms", "skipped: no recurrent matrix in these runs")
    )
    both = pd.concat(
        [
            diag[diag["quantity"] == GLOBAL].assign(name="global grad norm"),
            diag[diag["quantity"] == LOSS].assign(name="training loss"),
        ]
    )
    items.append(
        (
            "global gradient norm and loss",
            _over_steps(
                both.assign(quantity="both"),
                runs,
                "both",
                "Global gradient norm before clipping, and the batch loss",
                "value",
            ),
        )
    )
    return items
