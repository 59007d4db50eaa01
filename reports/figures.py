"""Dashboard figures and tables: each a pure function of the tidy run table (``sweeps.table``).

Which figures a study gets depends on what it swept, found by these heuristics (the only
parameter names this module knows):
- architecture axis: ``model.name`` when swept, else the runs' ``model`` column;
- length axis (long-dependency view): the first swept key of ``LENGTH_KEYS``;
- factorial heatmap: the swept keys with at most ``MAX_LEVELS`` levels, most levels on x,
  next on y, the third (if any) as one panel per level;
- length generalisation: ``final.test@<L>/<metric>`` columns from ``eval.lengths``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from seqbench.bench.core.artifacts import BASELINE, FINAL, PARAM
from seqbench.bench.core.stats import Interval, mean_ci, metric_bounds
from seqbench.bench.core.text import MISSING
from seqbench.sweeps.table import Objective, outcomes

LENGTH_KEYS = ("task.delay", "task.length", "task.seq_len", "task.max_len", "task.n_pairs")
ARCH_KEY = "model.name"
MAX_LEVELS = 12
PALETTE = qualitative.D3 + qualitative.Set2
_TEST_AT = re.compile(rf"^{re.escape(FINAL)}test@(\d+)/(.+)$")


# -- what was swept -------------------------------------------------------------------------
def levels(s: pd.Series) -> list[Any]:
    """Distinct non-null values, numeric order when all numeric, else text order."""
    vals = [v for v in pd.unique(s.dropna())]
    try:
        return sorted(vals, key=float)
    except (TypeError, ValueError):
        return sorted(vals, key=str)


def swept(df: pd.DataFrame) -> list[str]:
    """Param columns that take at least two values in the table, in column order."""
    return [c for c in df.columns if c.startswith(PARAM) and len(levels(df[c])) >= 2]


def label(col: str) -> str:
    return col[len(PARAM) :] if col.startswith(PARAM) else col


def arch_column(df: pd.DataFrame) -> str | None:
    if PARAM + ARCH_KEY in swept(df):
        return PARAM + ARCH_KEY
    return "model" if "model" in df.columns and df["model"].notna().any() else None


def length_column(df: pd.DataFrame) -> str | None:
    cols = swept(df)
    for k in LENGTH_KEYS:
        if PARAM + k in cols and pd.api.types.is_numeric_dtype(df[PARAM + k]):
            return PARAM + k
    return None


def heatmap_axes(df: pd.DataFrame) -> tuple[str, str, str | None] | None:
    """(x, y, facet) for the factorial view, or None when fewer than two discrete factors were swept."""
    cols = [c for c in swept(df) if len(levels(df[c])) <= MAX_LEVELS]
    if len(cols) < 2:
        return None
    cols = sorted(cols, key=lambda c: -len(levels(df[c])))
    return cols[0], cols[1], (cols[2] if len(cols) > 2 else None)


def color_column(df: pd.DataFrame) -> str | None:
    """Default colouring for curves: the architecture if swept, else the factor with fewest levels."""
    if PARAM + ARCH_KEY in swept(df):
        return PARAM + ARCH_KEY
    cols = sorted(swept(df), key=lambda c: len(levels(df[c])))
    return cols[0] if cols else None


# -- aggregation ----------------------------------------------------------------------------
def _finite(s: pd.Series) -> pd.Series:
    s = pd.to_numeric(s, errors="coerce")
    return s[np.isfinite(s)]


def cell_stats(g: pd.DataFrame, col: str) -> dict[str, float]:
    """mean, std (ddof=1), 95% Student-t interval ``lo``/``hi`` (NaN below two runs), n finite runs and
    diverged runs of a group (``bench.core.stats.mean_ci``, so every report states the same interval), the
    interval inside the metric's range (an accuracy's in [0, 1]: ``stats.metric_bounds``)."""
    v = _finite(g[col]) if col in g else pd.Series(dtype=float)
    ci = mean_ci(v.tolist(), bounds=metric_bounds(col))
    return {
        "mean": ci.mean,
        "std": ci.std,
        "lo": ci.lo,
        "hi": ci.hi,
        "n": ci.n,
        "diverged": int(g["diverged"].fillna(False).astype(bool).sum()),
    }


def per_trial(df: pd.DataFrame, obj: Objective) -> pd.DataFrame:
    """One row per trial: state, swept params, mean/std/n/diverged of the objective over its seeds.
    A superseded attempt is left out: its configuration is the retry's row (``sweeps.table.outcomes``)."""
    params = swept(df) or [c for c in df.columns if c.startswith(PARAM)]
    df = outcomes(df)
    rows = []
    for trial, g in df.groupby("trial", sort=True):
        rows.append(
            {
                "trial": trial,
                "state": g["state"].iloc[0],
                **{p: g[p].iloc[0] for p in params},
                **cell_stats(g, obj.column),
            }
        )
    return pd.DataFrame(rows)


def _best(t: pd.DataFrame, obj: Objective) -> pd.Series | None:
    t = t[np.isfinite(t["mean"].astype(float))]
    if t.empty:
        return None
    return t.loc[t["mean"].idxmax() if obj.maximize else t["mean"].idxmin()]


def summary_table(df: pd.DataFrame, obj: Objective) -> pd.DataFrame:
    """Best configuration at every level of the architecture and of every swept factor.

    ``best`` is the trial with the best seed-mean at that level (its mean, 95% interval, std and seed count);
    ``all runs`` is the mean over every run at that level; ``diverged`` counts runs at the level.
    """
    trials = per_trial(df, obj)
    factors = [c for c in [arch_column(df)] if c] + [c for c in swept(df) if c != arch_column(df)]
    rows = []
    for f in factors:
        key = f if f in trials.columns else None
        for lv in levels(df[f]):
            runs = df[df[f] == lv]
            best = (
                _best(trials[trials[key] == lv], obj)
                if key
                else _best(trials[trials["trial"].isin(runs["trial"])], obj)
            )
            other = {label(p): best[p] for p in swept(df) if p != f} if best is not None else {}
            allr = cell_stats(runs, obj.column)
            rows.append(
                {
                    "factor": label(f),
                    "level": lv,
                    "best mean": best["mean"] if best is not None else math.nan,
                    "best std": best["std"] if best is not None else math.nan,
                    "best lo": best["lo"] if best is not None else math.nan,
                    "best hi": best["hi"] if best is not None else math.nan,
                    "seeds": int(best["n"]) if best is not None else 0,
                    "best trial": int(best["trial"]) if best is not None else None,
                    "best config": ", ".join(f"{k}={v}" for k, v in other.items()),
                    "all runs mean": allr["mean"],
                    "runs": int(runs["run_id"].astype(bool).sum()),
                    "diverged": allr["diverged"],
                }
            )
    return pd.DataFrame(rows)


def top_trials(df: pd.DataFrame, obj: Objective, k: int = 10) -> pd.DataFrame:
    t = per_trial(df, obj)
    t = t[np.isfinite(t["mean"].astype(float))].sort_values("mean", ascending=not obj.maximize)
    return t.head(k).rename(columns={**{c: label(c) for c in t.columns}, "n": "seeds scored"})


def fmt_ci(mean: float, lo: float, hi: float, n: int, digits: int = 3) -> str:
    """``0.731 [0.702, 0.760] n=5``, or ``0.731 (n=1, no interval)``: the interval and n, always together."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    return Interval(float(mean), float(lo), float(hi), int(n), math.nan).fmt(digits)


# -- figures --------------------------------------------------------------------------------
def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        title=title,
        height=height,
        template="plotly_white",
        margin=dict(l=60, r=30, t=60, b=50),
        legend=dict(font=dict(size=11)),
    )
    return fig


def fig_heatmap(df: pd.DataFrame, obj: Objective, x: str, y: str, facet: str | None = None) -> go.Figure:
    """Objective mean over (x, y) cells, one panel per facet level; text: mean, 95% interval, ± std, n and
    diverged runs (a single run says n=1)."""
    facets = levels(df[facet]) if facet else [None]
    xs, ys = levels(df[x]), levels(df[y])
    fig = make_subplots(
        rows=1,
        cols=len(facets),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[f"{label(facet)}={f}" for f in facets] if facet else None,
    )
    all_means = _finite(df[obj.column])
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
            spread = (
                f"[{s['lo']:.3g}, {s['hi']:.3g}]<br>±{s['std']:.2g} n={s['n']}"
                if s["n"] > 1
                else f"n={s['n']}, no interval"
            )
            text[r][c] = (f"{s['mean']:.3g}<br>{spread}" if s["n"] else "no result") + div
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
    return _layout(
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
            v = _finite(g[obj.column])
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
    return _layout(fig, f"{obj.name} of every run by factor level", height=340 * nrows + 60)


def _error_bars(stats: list[dict[str, float]]) -> dict[str, Any]:
    """Plotly error bars of cells' 95% intervals, up and down apart (an interval kept inside the metric's
    range is not symmetric about the mean); 0 for one run: drawn as a bare point."""
    up = [s["hi"] - s["mean"] if s["n"] > 1 else 0.0 for s in stats]
    down = [s["mean"] - s["lo"] if s["n"] > 1 else 0.0 for s in stats]
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
    return _layout(fig, f"{obj.name} vs {label(length)}")


def test_lengths(df: pd.DataFrame) -> dict[str, list[int]]:
    """metric -> evaluated lengths, from ``final.test@<L>/<metric>`` columns."""
    out: dict[str, list[int]] = {}
    for c in df.columns:
        m = _TEST_AT.match(c)
        if m and df[c].notna().any():
            out.setdefault(m.group(2), []).append(int(m.group(1)))
    return {k: sorted(v) for k, v in out.items()}


def fig_length_generalisation(df: pd.DataFrame, metric: str, arch: str | None, length: str | None = None) -> go.Figure:
    """Test ``metric`` (mean, 95% interval) at each evaluated length, one line per architecture (and
    training length)."""
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
    fig.update_xaxes(
        title_text="evaluated length", type="log" if lens and lens[-1] / max(lens[0], 1) >= 8 else "linear"
    )
    fig.update_yaxes(title_text=f"test {metric}")
    return _layout(fig, f"Length generalisation: test {metric} at longer lengths")


def curve_metric(curves: pd.DataFrame, obj: Objective) -> str | None:
    have = set(curves["metric"].unique()) if not curves.empty else set()
    for m in (obj.name, "val/loss", "train/loss"):
        if m in have:
            return m
    return None


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
    return _layout(fig, f"Learning curves: {metric}" + (f" by {label(color)}" if color else ""))


# -- throughput and utilisation --------------------------------------------------------------
THROUGHPUT_COLUMNS = ("tokens_per_s", "model_flops_per_s", "mfu")  # results.json keys (bench.training.flops for MFU)


def config_label(row: pd.Series, cols: list[str]) -> str:
    return " · ".join(f"{label(c)}={row[c]}" for c in cols) if cols else "all runs"


def throughput_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (the swept keys' values): runs with a throughput record, tokens/s, achieved
    FLOP/s and MFU, each mean and std over those runs (NaN where no run recorded it)."""
    have = [c for c in THROUGHPUT_COLUMNS if c in df.columns]
    runs = df[df[have].apply(pd.to_numeric, errors="coerce").notna().any(axis=1)] if have else df.iloc[0:0]
    cols = swept(df)
    rows = []
    for _, g in runs.groupby(cols, sort=True, dropna=False) if cols else [((), runs)]:
        row = {"configuration": config_label(g.iloc[0], cols), "runs": int(len(g))}
        for c in THROUGHPUT_COLUMNS:
            s = cell_stats(g, c)
            row[f"{c} mean"], row[f"{c} std"] = s["mean"], s["std"]
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["configuration", "runs"] + [f"{c} {m}" for c in THROUGHPUT_COLUMNS for m in ("mean", "std")]
    )


def throughput_items(df: pd.DataFrame) -> list[tuple[str, Any]]:
    """[(title, figure | table | 'skipped: reason')]: tokens/s per configuration and, where the runs
    recorded it (GPU runs on a device in bench.training.flops' peak table), model FLOPs utilisation."""
    t = throughput_table(df)
    if t.empty or not t["tokens_per_s mean"].notna().any():
        return [
            (
                "Throughput",
                "skipped: no run recorded tokens_per_s in its results.json "
                "(runs made before seqbench measured throughput)",
            )
        ]
    has_mfu = bool(t["mfu mean"].notna().any())
    fig = make_subplots(
        rows=1,
        cols=2 if has_mfu else 1,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=["tokens/s (mean ± std over runs)"] + (["MFU, % of the device's dense peak"] if has_mfu else []),
    )
    err = [s if s == s else 0 for s in t["tokens_per_s std"]]
    fig.add_trace(
        go.Bar(
            y=t["configuration"],
            x=t["tokens_per_s mean"],
            orientation="h",
            name="tokens/s",
            error_x=dict(type="data", array=err, visible=True),
            marker_color=PALETTE[0],
            customdata=t[["runs", "model_flops_per_s mean"]].to_numpy(),
            hovertemplate="%{y}<br>%{x:.4g} tokens/s<br>achieved %{customdata[1]:.3g} FLOP/s"
            "<br>runs %{customdata[0]}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    if has_mfu:
        fig.add_trace(
            go.Bar(
                y=t["configuration"],
                x=100 * t["mfu mean"],
                orientation="h",
                name="MFU %",
                error_x=dict(type="data", array=[100 * s if s == s else 0 for s in t["mfu std"]], visible=True),
                marker_color=PALETTE[1],
                hovertemplate="%{y}<br>MFU %{x:.2f}%<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_yaxes(type="category", automargin=True, row=1, col=1)
    fig.update_layout(showlegend=False)
    out: list[tuple[str, Any]] = [
        ("throughput", _layout(fig, "Throughput and utilisation per configuration", height=200 + 28 * len(t)))
    ]
    if not has_mfu:
        out.append(
            (
                "MFU",
                "skipped: no run recorded mfu (CPU runs, or a GPU or precision missing from the "
                "peak table in bench/training/flops.py)",
            )
        )
    shown = t.rename(
        columns={"tokens_per_s mean": "tokens/s", "model_flops_per_s mean": "achieved FLOP/s", "mfu mean": "MFU"}
    )

    def fmt(m: float, s: float) -> str:  # throughput is a measurement of speed: mean ± std over runs
        return MISSING if m != m else f"{m:.4g}" + (" (one run)" if s != s else f" ± {s:.2g}")

    shown["tokens/s"] = [fmt(m, s) for m, s in zip(t["tokens_per_s mean"], t["tokens_per_s std"])]
    shown["achieved FLOP/s"] = [MISSING if v != v else f"{v:.3g}" for v in t["model_flops_per_s mean"]]
    shown["MFU"] = [fmt(100 * m, 100 * s) + " %" if m == m else MISSING for m, s in zip(t["mfu mean"], t["mfu std"])]
    out.append(("Throughput per configuration", shown[["configuration", "runs", "tokens/s", "achieved FLOP/s", "MFU"]]))
    return out
