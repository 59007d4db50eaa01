"""``seqbench verify`` outputs: ``<out>/verify/index.html`` (one section per claim) and ``verify.md``.

Each section: the question, the source with its published numbers, the verdict table (ours beside
the paper's), and the figure that shows the effect, drawn by the dashboard's own figure functions
(``reports.figures``, ``reports.diagnostics``, ``reports.cost.fig_cost``) from the claim's run table.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.cost_format import CostMeta, CostPoint
from seqbench.bench.core.stats import Estimate, Interval, metric_scale
from seqbench.reports import aggregate as A
from seqbench.reports import figures as F
from seqbench.reports.cost import fig_cost
from seqbench.reports.diagnostics import fig_through_time, load_diagnostics
from seqbench.reports.html import _CSS, _table_html, built_by, write_plotly_js
from seqbench.reports.table import load_curves
from seqbench.reports.verify_md import write_markdown
from seqbench.sweeps.claims.results import ClaimResult, Drawn, RuleResult, quantity_text, verdict_table
from seqbench.sweeps.claims.schema import Claim
from seqbench.sweeps.table import Objective

_COLORS = {"holds": "#1a7f37", "fails": "#cf222e", "inconclusive": "#9a6700", "error": "#6e7781", "invalid": "#8250df"}
_RULE_COLS = ["rule", "configuration", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]


def claim_figure(kind: str, table: pd.DataFrame, obj: Objective, judged: list[RuleResult] | None = None) -> list[Drawn]:
    """The claim's figures: first the verdict figure (every configuration its rules and controls compare,
    thresholds marked; :func:`verdict_figure`), then the figure the claim names (``figure:``) with one
    series per configuration; a 'skipped: why' line for one that cannot be drawn."""
    figs = [verdict_figure(table, judged)] if judged else []
    return [f for f in figs if f is not None] + [_named_figure(kind, table, obj)]


def _named_figure(kind: str, table: pd.DataFrame, obj: Objective) -> Drawn:
    runs = table[table["run_id"].astype(bool)] if not table.empty else table
    if runs.empty:
        return "skipped: no runs"
    length = A.length_column(runs)
    # one series per configuration: every swept key but the x axis (a model-only colour pooled e.g.
    # attention and no-attention seq2seq runs into one line)
    keys = [c for c in A.swept(runs) if c != length]
    runs, arch = _config_column(runs, keys) if keys else (runs, A.arch_column(runs))
    if kind == "length":
        return F.fig_length(runs, obj, length, arch) if length else "skipped: no length-like key swept"
    if kind == "factors":
        return F.fig_factors(runs, obj) if A.swept(runs) else "skipped: nothing swept"
    if kind == "heatmap":
        axes = A.heatmap_axes(runs)
        return F.fig_heatmap(runs, obj, *axes) if axes else "skipped: fewer than two factors swept"
    if kind == "learning_curves":
        curves = load_curves(runs)
        metric = A.curve_metric(curves, obj)
        return F.fig_learning_curves(curves, runs, metric, arch) if metric else "skipped: no metrics.csv"
    if kind == "through_time":
        diag = load_diagnostics(runs)
        return fig_through_time(diag, runs) if not diag.empty else "skipped: no diagnostics.json"
    return f"skipped: figure {kind!r} is drawn by the cost measurement"


def _config_column(runs: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, str]:
    if len(keys) == 1:
        return runs, keys[0]
    label = runs[keys].astype(str).agg(lambda r: ", ".join(f"{A.label(k)}={v}" for k, v in zip(keys, r)), axis=1)
    return runs.assign(configuration=label), "configuration"


def verdict_figure(table: pd.DataFrame, judged: list[RuleResult]) -> go.Figure | None:
    """Per metric, each configuration a rule or control names (both sides of a difference too): its
    seeds as dots and its estimate with the interval the rule was tested at; each rule's thresholds as
    red segments (a band for between:); the memoryless baseline dotted. Differences get a panel of
    their own (a ratio panel on the log scale)."""
    panels = _verdict_panels(table, judged)
    if not panels:
        return None
    lines = max(_wrap(c).count("<br>") + 1 for p in panels.values() for c in p["cats"]) if panels else 1
    space = min(0.12 + 0.03 * (lines - 1), 0.9 / max(1, len(panels) - 1))  # room for wrapped tick labels
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=list(panels), vertical_spacing=space)
    for row, p in enumerate(panels.values(), start=1):
        cats = list(p["cats"])
        for i, name in enumerate(cats):
            _draw_configuration(fig, row, i, name, p["cats"][name], table)
        if p["baseline"] is not None:
            fig.add_hline(
                y=p["baseline"],
                line=dict(color="#57606a", dash="dot"),
                row=row,
                col=1,
                annotation_text="memoryless baseline",
                annotation_position="top left",
            )
        fig.update_xaxes(
            tickvals=list(range(len(cats))),
            ticktext=[_wrap(c) for c in cats],
            tickangle=0,
            range=[-0.6, len(cats) - 0.4],
            row=row,
            col=1,
        )
        if p["log"]:
            fig.update_yaxes(type="log", row=row, col=1)
    fig.update_layout(
        height=(320 + 16 * (lines - 1)) * len(panels),
        margin=dict(t=70, b=40 + 16 * (lines - 1)),
        title=dict(
            text="verdict: seeds (grey), estimate with its tested interval, thresholds (red; dashed: control)",
            font=dict(size=13),
        ),
    )
    return fig


def _verdict_panels(table: pd.DataFrame, judged: list[RuleResult]) -> dict[str, dict[str, Any]]:
    """Panel title -> its configurations (seed values, interval, the rules that judge it), scale and baseline."""
    panels: dict[str, dict[str, Any]] = {}

    def cell(title: str, log: bool, baseline: float | None) -> dict[str, Any]:
        return panels.setdefault(title, {"cats": {}, "log": log, "baseline": baseline})

    for r in judged:
        if r.estimate is None and r.interval is None:
            continue
        metric = r.rule.metric
        shares = r.per_seed or r.rule.rate  # 0/1 per seed, the thresholds on the share
        base = _baseline(table, metric) if not shares and r.rule.minus is None else None
        if r.rule.largest is not None:  # the panel shows values of the swept key, not of the metric
            metric, base = quantity_text(r.rule), None
        if r.rule.minus is not None:
            for label, side in r.sides:  # the compared configurations (2, or 4 for versus:), drawn separately
                side_base = _baseline(table, metric) if r.rule.largest is None else None
                log = r.rule.largest is None and metric_scale(metric)[0] == "log"
                _add_side(cell(metric, log, side_base), label, side, metric)
        if shares:
            title = r.threshold_text().split(":")[0] if r.per_seed else "share of seeds solved"
        elif r.rule.minus is not None:
            kind = "ratio" if r.ratio else "difference in differences" if r.rule.versus else "difference"
            title = f"{kind} of {metric}"
        else:
            title = metric
        p = cell(title, (r.estimate is not None and r.estimate.scale == "log") or r.log_ratio, base)
        vals = list(r.estimate.values) if r.estimate is not None else []
        if r.log_ratio:
            vals = [math.exp(v) for v in vals]
        c = p["cats"].setdefault(r.config, {"vals": vals, "iv": r.interval, "rules": []})
        c["rules"].append(r)
    return panels


def _draw_configuration(fig: go.Figure, row: int, i: int, name: str, c: dict[str, Any], table: pd.DataFrame) -> None:
    """One configuration at x = ``i`` of panel ``row``: its seeds, its estimate coloured by its worst verdict,
    a cost claim's FLOP-count prediction, and each judging rule's thresholds."""
    traces = [_seeds_trace(i, name, c["vals"])]
    iv = c["iv"]
    if iv is not None and iv.n:
        traces.append(_estimate_trace(i, name, iv, _verdict_color(c["rules"])))
    flops = _flops_prediction(table, c["rules"])
    if flops is not None:  # a cost claim: what the FLOP count predicts beside what was timed
        traces.append(_flops_trace(i, name, flops))
    traces += [_threshold_trace(i, x, key, thr) for x in c["rules"] for key, thr in x.thresholds.items()]
    for trace in traces:
        fig.add_trace(trace, row=row, col=1)


def _verdict_color(rules: list[RuleResult]) -> str:
    """The colour of the worst verdict among the rules (controls only when no rule judges it); grey for none."""
    verdicts = {x.verdict for x in rules if not x.control} or {x.verdict for x in rules}
    worst = next((v for v in ("invalid", "fails", "inconclusive", "missing") if v in verdicts), "holds")
    return _COLORS.get(worst, _COLORS["inconclusive"]) if rules else "#57606a"


def _seeds_trace(i: int, name: str, vals: list[float]) -> go.Scatter:
    return go.Scatter(
        x=[i] * len(vals),
        y=vals,
        mode="markers",
        showlegend=False,
        marker=dict(color="#8c959f", size=6),
        name=f"{name}: seeds",
        hovertemplate="%{y:.4g}<extra>" + html.escape(name) + ": one seed</extra>",
    )


def _estimate_trace(i: int, name: str, iv: Interval, color: str) -> go.Scatter:
    """The estimate with the interval the rule was tested at (an unbounded end drawn at the mean)."""
    lo = iv.lo if math.isfinite(iv.lo) else iv.mean
    hi = iv.hi if math.isfinite(iv.hi) else iv.mean
    return go.Scatter(
        x=[i + 0.15],
        y=[iv.mean],
        mode="markers",
        showlegend=False,
        marker=dict(color=color, size=10),
        error_y=dict(type="data", symmetric=False, array=[hi - iv.mean], arrayminus=[iv.mean - lo]),
        name=name,
        hovertemplate=html.escape(f"{name}: {iv.fmt()}") + "<extra></extra>",
    )


def _flops_trace(i: int, name: str, flops: float) -> go.Scatter:
    return go.Scatter(
        x=[i - 0.15],
        y=[flops],
        mode="markers",
        showlegend=False,
        marker=dict(symbol="x", size=10, color="#0969da"),
        name=f"{name}: FLOP count",
        hovertemplate=f"FLOP count predicts {flops:.3g}<extra></extra>",
    )


def _threshold_trace(i: int, x: RuleResult, key: str, thr: float) -> go.Scatter:
    """One threshold of a rule (solid) or control (dashed) as a red segment across the configuration."""
    y = math.exp(thr) if x.log_ratio else thr
    return go.Scatter(
        x=[i - 0.4, i + 0.4],
        y=[y, y],
        mode="lines",
        showlegend=False,
        line=dict(color="#cf222e", dash="dash" if x.control else "solid", width=2),
        name=f"{x.rule.name}: {key} {y:.4g}",
        hovertemplate=html.escape(f"{'control' if x.control else 'rule'} {x.rule.name}: needs {x.threshold_text()}")
        + "<extra></extra>",
    )


def _wrap(label: str) -> str:
    """A configuration label on short lines (a best_of pick and a difference's sides are long; rotated
    ticks ran into the panel below)."""
    for sep, to in ((" minus ", "<br>minus<br>"), ("; ", "<br>"), ("] per seed: ", "]<br>per seed: ")):
        label = label.replace(sep, to)
    return label


def _flops_prediction(table: pd.DataFrame, judged: list[RuleResult]) -> float | None:
    """The FLOP count's exponent (mean over replicates) for a time-exponent rule's configuration."""
    r = next((x for x in judged if x.rule.metric.startswith("time_exponent")), None)
    if r is None:
        return None
    col = "final." + r.rule.metric.replace("time_", "flops_").replace("_upper", "")
    rows = table[table["param.model.name"] == r.rule.where.get("model.name")] if "param.model.name" in table else table
    v = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
    return float(v.mean()) if len(v) else None


def _baseline(table: pd.DataFrame, metric: str) -> float | None:
    col = "baseline." + metric.removeprefix("best.")
    if col not in table.columns:
        return None
    v = pd.to_numeric(table[col], errors="coerce").dropna()
    return float(v.mean()) if len(v) else None


def _add_side(panel: dict[str, Any], label: str, vals: list[float], metric: str) -> None:
    """One side of a difference as a configuration of its own (the seed values the judge paired, with
    their 95% interval, no threshold; a best_of side at the values each seed picked)."""
    v = [x for x in vals if math.isfinite(x)]
    scale, bounds = metric_scale(metric)
    if scale == "log" and any(x <= 0 for x in v):
        scale = "linear"
    if v and label not in panel["cats"]:
        panel["cats"][label] = {"vals": v, "iv": Estimate(tuple(v), scale, bounds).interval(), "rules": []}


def cost_figure(rows: list[CostPoint], meta: CostMeta) -> Drawn:
    """A cost claim's first replicate: step time against T per model, or why there is none."""
    fig = fig_cost(rows, "time_ms", "forward+backward time (ms)", meta)
    return fig if fig is not None else "skipped: no point measured"


def _params_text(params: list[Any]) -> str:
    """``model.name=tcn: paper 70,000, seqbench 70,369 (+0.5%; Table 1)`` per entry."""
    out = []
    for p in params:
        where = ", ".join(f"{k}={v}" for k, v in p.where.items()) or "all"
        paper = f"paper {p.paper:,}" if p.paper else "paper: none comparable"
        diff = f"{(p.seqbench - p.paper) / p.paper:+.1%}; " if p.paper else ""
        out.append(f"{where}: {paper}, seqbench {p.seqbench:,} ({diff}{p.from_})")
    return "; ".join(out)


def _verdict(v: str) -> str:
    return f"<b style='color:{_COLORS.get(v, '#333')}'>{html.escape(v.upper())}</b>"


def _reproduction_rows(c: Claim, pub: str) -> list[str]:
    e, src = html.escape, c.source
    return [
        f"<tr><th>source</th><td>{e(src.paper)} — {e(src.where)}</td></tr>",
        f"<tr><th>published</th><td>{e(pub)}</td></tr>",
        f"<tr><th>their metric</th><td>{e(src.metric)}</td></tr>",
        f"<tr><th>ours differs</th><td>{e(src.differs or 'no known difference')}</td></tr>",
    ]


def _hypothesis_rows(c: Claim) -> list[str]:
    """A hypothesis has no paper: the page says whose it is and why, never an empty "published" row."""
    e, src = html.escape, c.source
    return [
        f"<tr><th>source</th><td>{e(src.paper)}</td></tr>",
        *([f"<tr><th>why</th><td>{e(why)}</td></tr>"] if (why := getattr(src, "why", "")) else []),
        *([f"<tr><th>metric</th><td>{e(src.metric)}</td></tr>"] if src.metric else []),
    ]


def _section(res: ClaimResult, rows: pd.DataFrame, n: int) -> str:
    e = html.escape
    c, src = res.claim, res.claim.source
    pub = "; ".join(f"{p.what} {p.value:g} {p.unit}" for p in src.published)
    detail = res.verdict_text()[len(res.verdict) :].strip()
    parts = [
        f"<section id='{e(c.name)}'><h2>{e(c.name)}: {_verdict(res.verdict)} {e(detail)}</h2>",
        f"<div class='question'>{e(c.question)}</div>",
        "<table class='facts'>",
        *(_hypothesis_rows(c) if c.hypothesis else _reproduction_rows(c, pub)),
        *(
            [f"<tr><th>parameters (paper profile)</th><td>{e(_params_text(src.params))}</td></tr>"]
            if src.params
            else []
        ),
        f"<tr><th>profile</th><td>{e(res.profile)} ({res.wall_s:.0f} s); study {e(res.study or '-')}</td></tr>",
        "</table>",
    ]
    if res.error:
        parts.append(f"<p class='skipped'>could not run: {e(res.error)}</p>")
    parts.append(_table_html(rows[_RULE_COLS]))
    figures = res.figure if isinstance(res.figure, list) else [res.figure]
    for j, fig in enumerate(figures):
        if isinstance(fig, go.Figure):
            div = fig.to_html(
                full_html=False,
                include_plotlyjs=False,
                div_id=f"fig-{n}-{j}",
                config={"displaylogo": False, "responsive": True},
            )
            title = "verdict" if j < len(figures) - 1 else c.figure
            parts.append(f"<figure class='panel' data-title='{e(title)}'>{div}</figure>")
        elif fig:
            parts.append(f"<p class='skipped'>{e(str(fig))}</p>")
    if c.note:
        parts.append(f"<p class='caption'><b>Note.</b> {e(c.note)}</p>")
    parts.append("</section>")
    return "\n".join(parts)


def page(results: list[ClaimResult], table: pd.DataFrame, built: dict[str, Any]) -> str:
    e = html.escape
    overview = table.drop_duplicates("claim")[["claim", "source", "claim verdict", "wall s"]]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>seqbench verify</title>",
        f"<script src='plotly.min.js' charset='utf-8'></script><style>{_CSS}</style></head><body>",
        "<h1>seqbench verify: claims, measured</h1>",
        "<p class='caption'>Each rule is judged over seed replicates: per seed (the share of seeds that "
        "pass, exact Clopper-Pearson interval and binomial test) for success rates, bounded metrics, baseline "
        "multiples, imputed diverged seeds and grid steps; a loss or MSE on the log scale (geometric mean, "
        "Student-t on logs); other metrics with a Student-t interval clipped to the metric's range. A claim's "
        "rules and controls are Holm-corrected together, and its 95% is spent over its pre-registered looks "
        "(O'Brien-Fleming-type: most of it at the last; more seeds only when a look does not decide). "
        "<b>holds</b>: the interval is inside the rule's thresholds; "
        "<b>fails</b>: wholly outside; <b>inconclusive</b>: not decided; <b>invalid</b>: a positive control "
        "(the comparator trains) failed, so the rule's claim cannot be judged. "
        f"Built by seqbench {e(built['version'])} ({e(built['git_sha'])}) on {e(built['when'])}.</p>",
        _table_html(overview),
    ]
    for i, res in enumerate(results):
        parts.append(_section(res, table[table["claim"] == res.claim.name], i + 1))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_verify(results: list[ClaimResult], folder: Path) -> Path:
    """Write index.html, plotly.min.js and verify.md into ``folder``; return index.html."""
    folder.mkdir(parents=True, exist_ok=True)
    table = verdict_table(results)
    built = built_by()
    write_plotly_js(folder)
    write_markdown(results, table, built, folder)  # each claim's record, then verify.md over every one there
    index = folder / "index.html"
    atomic_write(index, page(results, table, built))
    return index
