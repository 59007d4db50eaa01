"""``seqbench verify`` outputs: ``<out>/verify/index.html`` (one section per claim) and ``verify.md``.

Each section: the question, the source with its published numbers, the verdict table (ours beside
the paper's), and the figure that shows the effect, drawn by the dashboard's own figure functions
(``reports.figures``, ``reports.diagnostics``, ``bench.cost.fig_cost``) from the claim's run table.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.text import markdown_table
from seqbench.reports import figures as F
from seqbench.reports.diagnostics import fig_through_time, load_diagnostics
from seqbench.reports.html import _CSS, _md_table, _table_html, built_by, write_plotly_js
from seqbench.reports.table import Objective, load_curves
from seqbench.sweeps.claims.judge import ClaimResult, verdict_table

_COLORS = {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#9a6700", "error": "#6e7781"}
_RULE_COLS = ["rule", "configuration", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]


def claim_figure(kind: str, table: pd.DataFrame, obj: Objective) -> Any:
    """The figure a claim names (``figure:``), or a 'skipped: why' line."""
    runs = table[table["run_id"].astype(bool)] if not table.empty else table
    if runs.empty:
        return "skipped: no runs"
    arch = F.arch_column(runs)
    if kind == "length":
        length = F.length_column(runs)
        return F.fig_length(runs, obj, length, arch) if length else "skipped: no length-like key swept"
    if kind == "factors":
        return F.fig_factors(runs, obj) if F.swept(runs) else "skipped: nothing swept"
    if kind == "heatmap":
        axes = F.heatmap_axes(runs)
        return F.fig_heatmap(runs, obj, *axes) if axes else "skipped: fewer than two factors swept"
    if kind == "learning_curves":
        curves = load_curves(runs)
        metric = F.curve_metric(curves, obj)
        return F.fig_learning_curves(curves, runs, metric, F.color_column(runs)) if metric else \
            "skipped: no metrics.csv"
    if kind == "through_time":
        diag = load_diagnostics(runs)
        return fig_through_time(diag, runs) if not diag.empty else "skipped: no diagnostics.json"
    return f"skipped: figure {kind!r} is drawn by the cost measurement"


def cost_figure(rows: list[dict[str, Any]], meta: dict[str, Any]) -> Any:
    from seqbench.reports.cost import fig_cost

    fig = fig_cost(rows, "time_ms", "forward+backward time (ms)", meta)
    return fig if fig is not None else "skipped: no point measured"


def _verdict(v: str) -> str:
    return f"<b style='color:{_COLORS.get(v, '#333')}'>{html.escape(v.upper())}</b>"


def _section(res: ClaimResult, rows: pd.DataFrame, n: int) -> str:
    e = html.escape
    c, src = res.claim, res.claim.source
    pub = "; ".join(f"{p.what} {p.value:g} {p.unit}" for p in src.published)
    parts = [f"<section id='{e(c.name)}'><h2>{e(c.name)}: {_verdict(res.verdict)}</h2>",
             f"<div class='question'>{e(c.question)}</div>",
             "<table class='facts'>",
             f"<tr><th>source</th><td>{e(src.paper)} — {e(src.where)}</td></tr>",
             f"<tr><th>published</th><td>{e(pub)}</td></tr>",
             f"<tr><th>their metric</th><td>{e(src.metric)}</td></tr>",
             f"<tr><th>ours differs</th><td>{e(src.differs or 'no known difference')}</td></tr>",
             f"<tr><th>profile</th><td>{e(res.profile)} ({res.wall_s:.0f} s); study {e(res.study or '-')}</td></tr>",
             "</table>"]
    if res.error:
        parts.append(f"<p class='skipped'>could not run: {e(res.error)}</p>")
    parts.append(_table_html(rows[_RULE_COLS]))
    if isinstance(res.figure, go.Figure):
        div = res.figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{n}",
                                 config={"displaylogo": False, "responsive": True})
        parts.append(f"<figure class='panel' data-title='{e(c.figure)}'>{div}</figure>")
    elif res.figure:
        parts.append(f"<p class='skipped'>{e(str(res.figure))}</p>")
    if c.note:
        parts.append(f"<p class='caption'><b>Note.</b> {e(c.note)}</p>")
    parts.append("</section>")
    return "\n".join(parts)


def page(results: list[ClaimResult], table: pd.DataFrame, built: dict[str, Any]) -> str:
    e = html.escape
    overview = table.drop_duplicates("claim")[["claim", "source", "claim verdict", "wall s"]]
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>seqbench verify</title>",
             f"<script src='plotly.min.js' charset='utf-8'></script><style>{_CSS}</style></head><body>",
             "<h1>seqbench verify: published claims, measured</h1>",
             "<p class='caption'>Each rule is judged over seed replicates with a 95% Student-t interval: "
             "<b>holds</b> when the whole interval is on the claimed side of the threshold, <b>fails</b> when it "
             "is on the other side, <b>inconclusive</b> when it straddles it or has fewer than two replicates. "
             f"Built by seqbench {e(built['version'])} ({e(built['git_sha'])}) on {e(built['when'])}.</p>",
             _table_html(overview)]
    for i, res in enumerate(results):
        parts.append(_section(res, table[table["claim"] == res.claim.name], i + 1))
    parts.append("</body></html>")
    return "\n".join(parts)


def markdown(results: list[ClaimResult], table: pd.DataFrame, built: dict[str, Any]) -> str:
    out = ["# seqbench verify", "", f"seqbench {built['version']} ({built['git_sha']}), {built['when']}", "",
           _md_table(table[["claim", "source", "rule", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]]),
           "", markdown_table(["claim", "verdict", "profile", "wall s"],
                              [[r.claim.name, r.verdict, r.profile, f"{r.wall_s:.0f}"] for r in results], align="lllr")]
    for r in results:
        if r.claim.note:
            out += ["", f"**{r.claim.name}.** {r.claim.note}"]
    return "\n".join(out) + "\n"


def write_verify(results: list[ClaimResult], folder: Path) -> Path:
    """Write index.html, plotly.min.js and verify.md into ``folder``; return index.html."""
    folder.mkdir(parents=True, exist_ok=True)
    table = verdict_table(results)
    built = built_by()
    write_plotly_js(folder)
    atomic_write(folder / "verify.md", markdown(results, table, built))
    index = folder / "index.html"
    atomic_write(index, page(results, table, built))
    return index
