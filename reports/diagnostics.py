"""Diagnostics panels (gradient through time, per-layer norms, ...) from runs' ``diagnostics.json``.

Issue 7 writes ``diagnostics.json`` into run folders; until its layout is fixed this reader takes
any JSON object and finds the curves in it, so a report never depends on the exact shape:
- a list of numbers                      -> a curve over its index
- an object of equal-length number lists -> curves over the first key named like an axis
  (``X_KEYS``) or over the index
- a list of objects (records)            -> curves of each numeric field over ``X_KEYS``/index
- an object of numbers                   -> one bar per key (e.g. norm per layer)
Nested objects become panels named by their path (``grad/through_time``). Runs without the file
are simply absent; a report with no diagnostics gets no panel.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seqbench.bench.artifacts import read_diagnostics
from seqbench.reports.figures import PALETTE, label, levels

X_KEYS = ("distance", "step", "steps", "t", "position", "length", "lengths", "x", "layer")
MAX_PANELS = 9
COLUMNS = ["run_id", "panel", "series", "x", "y", "kind"]


def _isnum(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numlist(v: Any) -> bool:
    return isinstance(v, list) and len(v) >= 2 and all(_isnum(x) or x is None for x in v)


def _rows(path: str, v: Any) -> list[tuple[str, str, Any, float, str]]:
    """(panel, series, x, y, kind) found in one JSON value."""
    if _numlist(v):
        return [(path, path.rsplit("/", 1)[-1], i, y, "line") for i, y in enumerate(v) if y is not None]
    if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
        xk = next((k for k in X_KEYS if all(_isnum(r.get(k)) for r in v)), None)
        out = []
        for i, r in enumerate(v):
            for k, y in r.items():
                if k != xk and _isnum(y):
                    out.append((f"{path}/{k}" if path else k, k, r[xk] if xk else i, y, "line"))
        return out
    if isinstance(v, dict) and v:
        lists = {k: x for k, x in v.items() if _numlist(x)}
        if len(lists) >= 2 and len({len(x) for x in lists.values()}) == 1:
            xk = next((k for k in X_KEYS if k in lists), None)
            xs = lists[xk] if xk else list(range(len(next(iter(lists.values())))))
            return [(path or "diagnostics", k, xs[i], y, "line") for k, ys in lists.items() if k != xk
                    for i, y in enumerate(ys) if y is not None]
        if all(_isnum(x) for x in v.values()):
            return [(path or "diagnostics", path.rsplit("/", 1)[-1] or "value", k, y, "bar") for k, y in v.items()]
        out = []
        for k, x in v.items():
            out += _rows(f"{path}/{k}" if path else k, x)
        return out
    return []


def load_diagnostics(df: pd.DataFrame) -> pd.DataFrame:
    """Every run's diagnostics as a long frame (run_id, panel, series, x, y, kind); empty when none."""
    rows = []
    if "run_dir" in df.columns:
        for run_id, run_dir in df.loc[df["run_id"].astype(bool), ["run_id", "run_dir"]].itertuples(index=False):
            data = read_diagnostics(Path(run_dir))
            if data is None:
                continue
            rows += [(run_id, *r) for r in _rows("", data)]
    out = pd.DataFrame(rows, columns=COLUMNS)
    out = out[pd.to_numeric(out["y"], errors="coerce").notna()]
    return out.astype({"y": float})


def fig_diagnostics(diag: pd.DataFrame, df: pd.DataFrame, color: str | None) -> go.Figure:
    """One panel per diagnostic (the first ``MAX_PANELS``), one trace per run and series, coloured by ``color``."""
    panels = list(dict.fromkeys(diag["panel"]))[:MAX_PANELS]
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=panels, vertical_spacing=0.22 if nrows > 1 else 0.1)
    by_run = df.set_index("run_id")
    lv = levels(df[color]) if color else [None]
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(lv)}
    shown: set[str] = set()
    for i, p in enumerate(panels):
        r, c = i // ncols + 1, i % ncols + 1
        sub = diag[diag["panel"] == p]
        for (run_id, series), g in sub.groupby(["run_id", "series"], sort=True):
            v = by_run.at[run_id, color] if color and run_id in by_run.index else None
            name = f"{label(color)}={v}" if color else "runs"
            common = dict(name=name, legendgroup=name, showlegend=name not in shown,
                          hovertemplate=f"{run_id} {series}<br>%{{x}}: %{{y:.3g}}<extra></extra>")
            if g["kind"].iloc[0] == "bar":
                fig.add_trace(go.Bar(x=[str(x) for x in g["x"]], y=g["y"], marker_color=colors.get(v, "#777"),
                                     **common), row=r, col=c)
            else:
                fig.add_trace(go.Scatter(x=g["x"], y=g["y"], mode="lines", line=dict(color=colors.get(v, "#777")),
                                         **common), row=r, col=c)
            shown.add(name)
        y = sub["y"]
        if (y > 0).all() and y.max() / y.min() > 100:
            fig.update_yaxes(type="log", row=r, col=c)
    fig.update_layout(title="Diagnostics recorded by the runs", height=330 * nrows + 70, template="plotly_white",
                      barmode="group", margin=dict(l=60, r=30, t=70, b=50))
    return fig
