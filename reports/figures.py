"""Dashboard figures: each a pure function of the tidy run table (``sweeps.table``), drawn from the
swept axes and cell statistics of ``reports.aggregate`` (where the heuristics that choose them live).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from seqbench.bench.core.artifacts import BASELINE, FINAL
from seqbench.reports.aggregate import cell_stats, finite_values, fmt_ci, label, levels, swept, test_lengths
from seqbench.sweeps.table import Objective

PALETTE = qualitative.D3 + qualitative.Set2


# -- figures --------------------------------------------------------------------------------
def layout_figure(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """Every dashboard figure's title, height, template, margins and legend font."""
    fig.update_layout(
        title=title,
        height=height,
        template="plotly_white",
        margin=dict(l=60, r=30, t=60, b=50),
        legend=dict(font=dict(size=11)),
    )
    return fig


def fig_heatmap(df: pd.DataFrame, obj: Objective, x: str, y: str, facet: str | None = None) -> go.Figure:
    """Objective mean over (x, y) cells, one panel per facet level; text: the cell as
    ``aggregate.fmt_ci`` states it (mean, 95% interval and n; "on all n seeds" where the runs tied), ± std
    and diverged runs (a single run says n=1)."""
    facets = levels(df[facet]) if facet else [None]
    xs, ys = levels(df[x]), levels(df[y])
    fig = make_subplots(
        rows=1,
        cols=len(facets),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[f"{label(facet)}={f}" for f in facets] if facet else None,
    )
    all_means = finite_values(df[obj.column])
    zmin, zmax = (float(all_means.min()), float(all_means.max())) if len(all_means) else (0.0, 1.0)
    for i, f in enumerate(facets):
        sub = df if facet is None else df[df[facet] == f]
        z = np.full((len(ys), len(xs)), np.nan)
        text = [["" for _ in xs] for _ in ys]
        for (yv, xv), g in sub.groupby([y, x]):
            s = cell_stats(g, obj.column)
            r, c = ys.index(yv), xs.index(xv)
            z[r, c] = s["mean"]
            div = f"<br>{s['diverged']} div" if s["diverged"] else ""
            cell = fmt_ci(s["mean"], s["lo"], s["hi"], s["n"], form=s["form"]).replace(" [", "<br>[", 1)
            spread = f"<br>±{s['std']:.2g}" if s["n"] > 1 and s["std"] > 0 else ""
            text[r][c] = (f"{cell}{spread}" if s["n"] else "no result") + div
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=[str(v) for v in xs],
                y=[str(v) for v in ys],
                text=text,
                texttemplate="%{text}",
                zmin=zmin,
                zmax=zmax,
                colorscale="Viridis",
                reversescale=not obj.maximize,
                showscale=(i == len(facets) - 1),
                colorbar=dict(title=obj.name),
                hovertemplate=f"{label(x)}=%{{x}}<br>{label(y)}=%{{y}}<br>%{{text}}<extra></extra>",
                name=f"{label(facet)}={f}" if facet else obj.name,
            ),
            row=1,
            col=i + 1,
        )
        fig.update_xaxes(title_text=label(x), type="category", row=1, col=i + 1)
    fig.update_yaxes(title_text=label(y), type="category", row=1, col=1)
    return layout_figure(
        fig,
        f"{obj.name} over {label(x)} × {label(y)}" + (f", by {label(facet)}" if facet else ""),
        height=380 + 20 * len(ys),
    )


def fig_factors(df: pd.DataFrame, obj: Objective) -> go.Figure:
    """Every run's objective against each swept factor's levels (diverged runs counted in the tick)."""
    cols = swept(df)
    ncols = min(3, len(cols))
    nrows = math.ceil(len(cols) / ncols)
    fig = make_subplots(
        rows=nrows, cols=ncols, subplot_titles=[label(c) for c in cols], vertical_spacing=0.18 if nrows > 1 else 0.1
    )
    for i, c in enumerate(cols):
        r, k = i // ncols + 1, i % ncols + 1
        xs, ys, ticks = [], [], []
        for lv in levels(df[c]):
            g = df[df[c] == lv]
            v = finite_values(g[obj.column])
            nd = int(g["diverged"].sum())
            tick = f"{lv}" + (f" ({nd} div)" if nd else "")
            ticks.append(tick)
            xs += [tick] * len(v)
            ys += list(v)
        fig.add_trace(
            go.Box(
                x=xs,
                y=ys,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                name=label(c),
                marker=dict(color=PALETTE[i % len(PALETTE)], size=6),
                showlegend=False,
            ),
            row=r,
            col=k,
        )
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=ticks, row=r, col=k)
        fig.update_yaxes(title_text=obj.name if k == 1 else None, row=r, col=k)
    return layout_figure(fig, f"{obj.name} of every run by factor level", height=340 * nrows + 60)


def _error_bars(stats: list[dict[str, float]]) -> dict[str, Any]:
    """Plotly error bars of cells' 95% intervals, up and down apart (an interval kept inside the metric's
    range is not symmetric about the mean); 0 for one run or runs that tied (no interval): a bare point."""
    up = [s["hi"] - s["mean"] if s["n"] > 1 and s["hi"] == s["hi"] else 0.0 for s in stats]
    down = [s["mean"] - s["lo"] if s["n"] > 1 and s["lo"] == s["lo"] else 0.0 for s in stats]
    return dict(type="data", symmetric=False, array=up, arrayminus=down, visible=True)


def _group_label(key: Any) -> str:
    return " · ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def fig_length(df: pd.DataFrame, obj: Objective, length: str, arch: str | None) -> go.Figure:
    """Objective (mean and 95% interval over runs) against the length axis, one line per architecture,
    with the task's memoryless baseline as a dashed line."""
    fig = go.Figure()
    groups = df.groupby(arch) if arch else [("all runs", df)]
    for i, (a, g) in enumerate(groups):
        pts = [(lv, cell_stats(g[g[length] == lv], obj.column)) for lv in levels(g[length])]
        pts = [(lv, s) for lv, s in pts if s["n"]]
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1]["mean"] for p in pts],
                mode="lines+markers",
                name=_group_label(a),
                error_y=_error_bars([p[1] for p in pts]),
                line=dict(color=PALETTE[i % len(PALETTE)]),
                customdata=[[p[1]["n"], p[1]["diverged"]] for p in pts],
                hovertemplate="%{x}: %{y:.4g}<br>runs %{customdata[0]}, diverged %{customdata[1]}"
                "<extra>%{fullData.name}</extra>",
            )
        )
    bcol = BASELINE + obj.name
    if bcol in df.columns and df[bcol].notna().any():
        b = df.groupby(length)[bcol].mean().dropna()
        fig.add_trace(
            go.Scatter(
                x=list(b.index),
                y=list(b.values),
                mode="lines",
                name="memoryless baseline",
                line=dict(color="black", dash="dash"),
            )
        )
    fig.update_xaxes(title_text=label(length))
    fig.update_yaxes(title_text=obj.name)
    return layout_figure(fig, f"{obj.name} vs {label(length)}")


def fig_length_generalisation(df: pd.DataFrame, metric: str, arch: str | None, length: str | None = None) -> go.Figure:
    """Test ``metric`` (mean, 95% interval) at each evaluated length, one line per architecture (and
    training length), with the memoryless baseline dashed (Delétang et al. 2023 Fig. 2, Press et al. 2022
    Fig. 1: the metric against the evaluated length)."""
    lens = test_lengths(df).get(metric, [])
    keys = [k for k in (arch, length) if k]
    groups = df.groupby(keys) if keys else [("all runs", df)]
    fig = go.Figure()
    for i, (a, g) in enumerate(groups):
        ys = [cell_stats(g, f"{FINAL}test@{L}/{metric}") for L in lens]
        fig.add_trace(
            go.Scatter(
                x=lens,
                y=[s["mean"] for s in ys],
                mode="lines+markers",
                error_y=_error_bars(ys),
                name=_group_label(a) if length is None else _group_label(a).replace(" · ", f" · {label(length)}="),
                line=dict(color=PALETTE[i % len(PALETTE)]),
            )
        )
    bcol = BASELINE + "val/" + metric  # at the training lengths; a memoryless model does no better when longer
    if lens and bcol in df.columns and df[bcol].notna().any():
        fig.add_trace(
            go.Scatter(
                x=[lens[0], lens[-1]],
                y=[float(df[bcol].mean())] * 2,
                mode="lines",
                name="memoryless baseline",
                line=dict(color="black", dash="dash"),
            )
        )
    fig.update_xaxes(
        title_text="evaluated length", type="log" if lens and lens[-1] / max(lens[0], 1) >= 8 else "linear"
    )
    fig.update_yaxes(title_text=f"test {metric}")
    return layout_figure(fig, f"Length generalisation: test {metric} at longer lengths")


def fig_learning_curves(curves: pd.DataFrame, df: pd.DataFrame, metric: str, color: str | None) -> go.Figure:
    """``metric`` against step for every run, one colour per level of ``color``."""
    c = curves[curves["metric"] == metric]
    by_run = df[df["run_id"].astype(bool)].drop_duplicates("run_id", keep="last").set_index("run_id")
    lv = levels(df[color]) if color else [None]
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(lv)}
    shown: set[Any] = set()
    fig = go.Figure()
    for run_id, g in c.groupby("run_id", sort=True):
        v = by_run.at[run_id, color] if color and run_id in by_run.index else None
        name = f"{label(color)}={v}" if color else "runs"
        g = g.sort_values("step")
        fig.add_trace(
            go.Scatter(
                x=g["step"],
                y=g["value"],
                mode="lines",
                name=name,
                legendgroup=name,
                showlegend=name not in shown,
                line=dict(color=colors.get(v, "#777"), width=1.5),
                opacity=0.8,
                hovertemplate=f"{run_id}<br>step %{{x}}: %{{y:.4g}}<extra>{name}</extra>",
            )
        )
        shown.add(name)
    bcol = BASELINE + metric
    if bcol in df.columns and df[bcol].notna().any():
        fig.add_hline(
            y=float(df[bcol].mean()),
            line_dash="dash",
            line_color="black",
            annotation_text="memoryless baseline",
            annotation_position="top left",
        )
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text=metric, type="log" if metric.endswith("loss") and (c["value"] > 0).all() else "linear")
    return layout_figure(fig, f"Learning curves: {metric}" + (f" by {label(color)}" if color else ""))
