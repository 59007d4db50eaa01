"""The dashboard's throughput and utilisation section: tokens/s, achieved FLOP/s and MFU per configuration
(the swept keys' values), from the runs' results.json (``bench.training.flops`` computes MFU).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seqbench.bench.core.text import MISSING
from seqbench.reports.aggregate import cell_stats, label, swept
from seqbench.reports.figures import PALETTE, layout_figure

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
    out: list[tuple[str, Any]] = [("throughput", throughput_figure(t, has_mfu))]
    if not has_mfu:
        out.append(
            (
                "MFU",
                "skipped: no run recorded mfu (CPU runs, or a GPU or precision missing from the "
                "peak table in bench/training/flops.py)",
            )
        )
    out.append(("Throughput per configuration", throughput_shown(t)))
    return out


def throughput_figure(t: pd.DataFrame, has_mfu: bool) -> go.Figure:
    """Bars of tokens/s (mean ± std over runs) per configuration of ``throughput_table``, and MFU in a
    second panel when ``has_mfu``."""
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
    return layout_figure(fig, "Throughput and utilisation per configuration", height=200 + 28 * len(t))


def _mean_std(m: float, s: float) -> str:  # throughput is a measurement of speed: mean ± std over runs
    return MISSING if m != m else f"{m:.4g}" + (" (one run)" if s != s else f" ± {s:.2g}")


def throughput_shown(t: pd.DataFrame) -> pd.DataFrame:
    """``throughput_table`` as the page shows it: tokens/s and MFU as mean ± std text, FLOP/s shortened."""
    shown = t.rename(
        columns={"tokens_per_s mean": "tokens/s", "model_flops_per_s mean": "achieved FLOP/s", "mfu mean": "MFU"}
    )
    shown["tokens/s"] = [_mean_std(m, s) for m, s in zip(t["tokens_per_s mean"], t["tokens_per_s std"])]
    shown["achieved FLOP/s"] = [MISSING if v != v else f"{v:.3g}" for v in t["model_flops_per_s mean"]]
    shown["MFU"] = [
        _mean_std(100 * m, 100 * s) + " %" if m == m else MISSING for m, s in zip(t["mfu mean"], t["mfu std"])
    ]
    return shown[["configuration", "runs", "tokens/s", "achieved FLOP/s", "MFU"]]
