"""The capability card's faces: the answer sentences, the terminal table, ``card.md`` and ``index.html``
with a ladder figure per model (plotly, offline: ``plotly.min.js`` beside the page).

Everything here is a pure function of a ``Card`` (``bench/core/card_format.py``), so a ``card.json``
read back renders the same page. The first model given is the reference the others are compared to.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.card_against import against_text
from seqbench.bench.core.card_format import Card, CardEntry, CardRung, write_card
from seqbench.bench.core.text import MISSING, markdown_table, text_table
from seqbench.reports.html import PLOTLY_JS, write_plotly_js
from seqbench.sweeps.frontier import BELOW
from seqbench.sweeps.probes import EVAL_LENGTHS, rung_phrase


def entry(card: Card, model: str, probe: str) -> CardEntry:
    return next(e for e in card["entries"] if e["model"] == model and e["probe"] == probe)


def _rung(p: dict[str, Any], i: int) -> str:
    """A rung index as a bound: ``<2`` below the first rung, ``8+`` at the top (the frontier may lie above)."""
    if i == BELOW:
        return f"<{p['rungs'][0]:g}"
    return f"{p['rungs'][i]:g}" + ("+" if i == len(p["rungs"]) - 1 else "")


def frontier_text(e: CardEntry, p: dict[str, Any]) -> str:
    """``4 pairs [2, 8+]``; ``below 2 pairs`` when the median seed solves no rung (never a rung of 0)."""
    if e["frontier"] == BELOW:
        head = f"below {rung_phrase(p['unit'], p['rungs'][0])}"
    else:
        top = e["frontier"] == len(p["rungs"]) - 1
        head = rung_phrase(p["unit"], p["rungs"][e["frontier"]]) + ("+" if top else "")
    return head + ("" if e["lo"] == e["hi"] else f" [{_rung(p, e['lo'])}, {_rung(p, e['hi'])}]")


def reference_text(e: CardEntry, p: dict[str, Any]) -> str:
    """The primary metric at the probe's reference rung: ``acc 0.91 @4``."""
    r = next((r for r in e["rungs"] if r["rung"] == p["reference"]), None)
    name = e["metric"].split("/")[-1]
    if r is None or not math.isfinite(r.get("mean", math.nan)):
        return f"{name} {MISSING} @{p['reference']:g}"
    return f"{name} {r['mean']:.2f} @{p['reference']:g}"


def _phrase(card: Card, model: str, p: dict[str, Any]) -> tuple[bool, str]:
    """(differs from the reference model, the probe's clause of the model's sentence)."""
    e, name, last = entry(card, model, p["name"]), p["name"], len(p["rungs"]) - 1
    if e["frontier"] == BELOW:
        text = f"fails {name} from the first rung ({rung_phrase(p['unit'], p['rungs'][0])})"
    elif e["frontier"] == last:
        text = f"solves {name} up to the top rung ({rung_phrase(p['unit'], p['rungs'][last])})"
    else:
        text = f"{name} frontier {frontier_text(e, p)}"
    ref = card["models"][0]["label"]
    f_ref = entry(card, ref, name)["frontier"]
    if model == ref or e["frontier"] == f_ref:
        return False, text
    if f_ref == BELOW:
        return True, text + f" ({ref} fails the first rung)"
    theirs = rung_phrase(p["unit"], p["rungs"][f_ref])
    a, b = (p["rungs"][e["frontier"]] if e["frontier"] != BELOW else None), p["rungs"][f_ref]
    if isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0 and max(a, b) % min(a, b) == 0:
        ratio = f"{a // b}x" if a > b else f"1/{b // a} of"
        return True, text + f", {ratio} {ref}'s {theirs}"
    return True, text + f" ({'above' if e['frontier'] > f_ref else 'below'} {ref}'s {theirs})"


def answer(card: Card) -> list[str]:
    """One sentence per model, the probes where it differs from the reference model first."""
    lines = []
    for m in card["models"]:
        said = [_phrase(card, m["label"], p) for p in card["probes"]]
        clauses = [t for d, t in said if d] + [t for d, t in said if not d]
        mine = [e for e in card["entries"] if e["model"] == m["label"]]
        missing = [e["probe"] for e in mine if not e.get("complete", True)]
        failed = [f"{e['probe']} at {f}" for e in mine for f in e.get("failed", [])]
        tail = f" (incomplete: {', '.join(missing)} lack runs)" if missing else ""
        if failed:
            tail += f" (failed: {'; '.join(failed)}; `seqbench probe ... --retry-failed` runs them again)"
        lines.append(f"{m['label']}: " + "; ".join(clauses) + tail)
    return lines


def censored(e: CardEntry, p: dict[str, Any]) -> bool:
    """A cell whose frontier is not measured: the median seed fails the first rung or solves the top one."""
    return e["frontier"] in (BELOW, len(p["rungs"]) - 1)


def told_apart(a: CardEntry, b: CardEntry) -> bool:
    """Two models' frontiers on one probe differ beyond their intervals (the intervals do not overlap)."""
    return a["hi"] < b["lo"] or b["hi"] < a["lo"]


def _apart_on(card: Card, a: str, b: str) -> list[str]:
    return [p["name"] for p in card["probes"] if told_apart(entry(card, a, p["name"]), entry(card, b, p["name"]))]


def discrimination(card: Card) -> dict[str, Any]:
    """How well the card tells its models apart: the censored cells, and per pair of models the probes
    whose frontier intervals do not overlap (none: the card cannot tell the pair apart)."""
    labels = [m["label"] for m in card["models"]]
    cells = [(p, entry(card, m, p["name"])) for p in card["probes"] for m in labels]
    pairs = {f"{a} / {b}": _apart_on(card, a, b) for i, a in enumerate(labels) for b in labels[i + 1 :]}
    return {
        "cells": len(cells),
        "censored": sum(censored(e, p) for p, e in cells),
        "pairs": pairs,
        "apart": sum(bool(v) for v in pairs.values()),
    }


def discrimination_text(card: Card) -> str:
    """``censored: 9 of 48 cells (19%); pairs told apart: 28 of 28`` and the pairs no probe separates."""
    d = discrimination(card)
    share = d["censored"] / d["cells"] if d["cells"] else math.nan
    same = [pair for pair, probes in d["pairs"].items() if not probes]
    text = (
        f"Censored (the median seed fails the first rung or solves the top one): {d['censored']} of "
        f"{d['cells']} cells ({share:.0%}). Pairs of models told apart by at least one probe with "
        f"non-overlapping frontier intervals: {d['apart']} of {len(d['pairs'])}"
    )
    return text + (f"; not told apart: {', '.join(same)}." if same else ".")


def method_text(card: Card) -> str:
    n = len(card["seeds"])
    cov = sorted({round(e["coverage"], 3) for e in card["entries"] if math.isfinite(e.get("coverage", math.nan))})
    rates = ", ".join(f"{lr:g}" for lr in card["lrs"])
    wds = card["weight_decays"]
    wd = f" x weight decay {', '.join(f'{w:g}' for w in wds)}" if len(wds) > 1 else ""
    return (
        f"Frontier: the median over {n} seeds of each seed's hardest rung solved with every easier rung solved "
        f"(solved: the task's own criterion, each seed at its best of lr {rates}{wd}); the interval is the "
        f"order-statistic interval of that median, exact coverage {', '.join(f'{c:.0%}' for c in cov)} "
        f"(95% needs 6 seeds); '+' marks the top rung (the frontier may lie above), '<' below the first. "
        f"Profile {card['profile']}."
    )


def frontier_rows(card: Card) -> tuple[list[str], list[list[str]]]:
    head = ["probe", *[m["label"] for m in card["models"]]]
    rows = [
        [
            p["name"],
            *[
                f"{frontier_text(entry(card, m['label'], p['name']), p)} · "
                f"{reference_text(entry(card, m['label'], p['name']), p)}"
                for m in card["models"]
            ],
        ]
        for p in card["probes"]
    ]
    return head, rows


def _cost(e: CardEntry) -> str:
    parts = [f"{e['step_ms']:.1f} ms/step" if "step_ms" in e else f"{MISSING} ms/step"]
    if "n_params" in e:
        parts.append(f"{e['n_params'] / 1e3:.1f}k params")
    if "flops_per_token" in e:
        parts.append(f"{e['flops_per_token'] / 1e6:.2f} MFLOP/token")
    return ", ".join(parts)


def cost_rows(card: Card) -> tuple[list[str], list[list[str]]]:
    head = ["probe", *[m["label"] for m in card["models"]]]
    return head, [
        [p["name"], *[_cost(entry(card, m["label"], p["name"])) for m in card["models"]]] for p in card["probes"]
    ]


def terminal(card: Card) -> str:
    """The card as the command prints it: the frontier table, the cost table, the method, the answer."""
    out = [
        text_table(*frontier_rows(card), sep=" | ", rule=True, max_width=44, wrap=True),
        "",
        text_table(*cost_rows(card), sep=" | ", rule=True, max_width=44, wrap=True),
        "",
        method_text(card),
        "",
        *([against_text(card), ""] if "against" in card else []),
        discrimination_text(card),
        "",
    ]
    return "\n".join(out + answer(card))


def card_md(card: Card) -> str:
    out = ["# seqbench capability card", "", *(f"- {line}" for line in card.get("answer") or answer(card)), ""]
    out += [
        "## Frontier and accuracy at the reference rung",
        "",
        markdown_table(*frontier_rows(card)),
        "",
        method_text(card),
        "",
        *([against_text(card), ""] if "against" in card else []),
        discrimination_text(card),
        "",
        "## Cost",
        "",
        markdown_table(*cost_rows(card)),
        "",
        "## Probes",
        "",
    ]
    out += [
        f"- **{p['name']}** (`task={p['task']}`, ladder `{_setting(p)}` = "
        f"{', '.join(f'{r:g}' for r in p['rungs'])}; {p['steps']} steps a run): {p['skill']}"
        for p in card["probes"]
    ]
    out += ["", "## Every rung", ""]
    for e in card["entries"]:
        rows = [
            [
                f"{r['rung']:g}",
                f"{r['solved']}/{r['n']}",
                f"[{r['share_lo']:.2f}, {r['share_hi']:.2f}]",
                _num(r["mean"]),
                _metric_interval(r),
                _num(r["baseline"]),
            ]
            for r in e["rungs"]
        ]
        out += [
            f"### {e['model']} · {e['probe']} (study `{e['study']}`)",
            "",
            markdown_table(["rung", "seeds solving", "share interval", e["metric"], "interval", "baseline"], rows),
            *([f"gaps: {'; '.join(e['gaps'])}"] if e.get("gaps") else []),
            "",
        ]
    return "\n".join(out)


def _metric_interval(r: CardRung) -> str:
    """The metric's t interval over a rung's seeds, or ``none: 3 seeds tied`` where every seed scored the same
    (a zero-width [1.000, 1.000] would read as certainty; the share of seeds solving states the rung)."""
    if r["n"] >= 2 and math.isfinite(r["lo"]) and r["lo"] == r["hi"]:
        return f"none: {r['n']} seeds tied"
    return f"[{_num(r['lo'])}, {_num(r['hi'])}]"


def _setting(p: dict[str, Any]) -> str:
    """The ladder's setting: ``task.n_pairs``, or ``eval.lengths`` (one training, tested at each length)."""
    return p["key"] if p["key"] == EVAL_LENGTHS else f"task.{p['key']}"


def _num(v: float) -> str:
    return MISSING if v is None or not math.isfinite(v) else f"{v:.3f}"


LADDER_COLUMNS = 4  # panels per row of a ladder figure: 4 x 280 px keeps it inside a 1400 px window


def ladder_figure(card: Card, model: str) -> go.Figure:
    """One panel per probe, at most ``LADDER_COLUMNS`` to a row: share of seeds solving each rung (exact
    interval), the primary metric's mean (t interval) and the memoryless baseline; the panel title carries
    the frontier."""
    probes = card["probes"]
    cols = min(LADDER_COLUMNS, len(probes))
    rows = -(-len(probes) // cols)
    titles = [f"{p['name']}: {frontier_text(entry(card, model, p['name']), p)}" for p in probes]
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        shared_yaxes=True,
        horizontal_spacing=0.05,
        vertical_spacing=0.6 / (rows + 1) if rows > 1 else 0.3,
    )
    for i, p in enumerate(probes):
        r, c = divmod(i, cols)
        rungs = entry(card, model, p["name"])["rungs"]
        for trace in _ladder_traces(rungs, _metric_name(card, model, p), legend=i == 0):
            fig.add_trace(trace, row=r + 1, col=c + 1)
        fig.update_xaxes(title_text=p["unit"].strip(), type="category", row=r + 1, col=c + 1)
    fig.update_yaxes(range=[-0.05, 1.05])
    fig.update_layout(
        title=f"{model}: the ladders",
        height=120 + 300 * rows,
        width=max(700, 280 * cols + 160),
        margin={"t": 80},
        font={"size": 11},
    )
    fig.update_annotations(font_size=11)
    return fig


def _ladder_traces(rungs: list[CardRung], metric_name: str, legend: bool) -> list[go.Scatter]:
    """One probe's panel: the share of seeds solving each rung, the metric's mean, the baseline."""
    x = [f"{r['rung']:g}" for r in rungs]
    share = [r["solved"] / r["n"] if r["n"] else None for r in rungs]
    solved = go.Scatter(
        x=x,
        y=share,
        mode="markers+lines",
        name="share of seeds solving",
        marker={"color": "#2a6fdb", "size": 9},
        legendgroup="s",
        showlegend=legend,
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [_gap(r["share_hi"], s) for r, s in zip(rungs, share)],
            "arrayminus": [_gap(s, r["share_lo"]) for r, s in zip(rungs, share)],
        },
    )
    metric = go.Scatter(
        x=x,
        y=[r["mean"] for r in rungs],
        mode="markers",
        name=metric_name,
        marker={"color": "#e07b00", "symbol": "diamond"},
        legendgroup="m",
        showlegend=legend,
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [_gap(r["hi"], r["mean"]) for r in rungs],
            "arrayminus": [_gap(r["mean"], r["lo"]) for r in rungs],
        },
    )
    baseline = go.Scatter(
        x=x,
        y=[r["baseline"] for r in rungs],
        mode="lines",
        name="memoryless baseline",
        line={"color": "#999", "dash": "dot"},
        legendgroup="b",
        showlegend=legend,
    )
    return [solved, metric, baseline]


def _metric_name(card: Card, model: str, p: dict[str, Any]) -> str:
    return entry(card, model, p["name"])["metric"] + " (mean over seeds)"


def _gap(a: float | None, b: float | None) -> float:
    """An error bar's length, 0 where either end is unknown (a rung without finished seeds)."""
    return a - b if a is not None and b is not None and math.isfinite(a) and math.isfinite(b) else 0.0


_CSS = """body{font-family:system-ui,sans-serif;margin:24px;max-width:1500px} .answer{font-size:1.1em;
border-left:4px solid #2a6fdb;padding:2px 12px} .answer p{margin:6px 0} table{border-collapse:collapse;font-size:13px;
margin:8px 0 18px} th,td{border:1px solid #ddd;padding:4px 8px;text-align:left} th{background:#f3f5f8}
.caption{color:#555;font-size:14px;max-width:1000px}"""


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    e = html.escape
    return (
        "<table><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
        + "</table>"
    )


def page(card: Card) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>seqbench capability card</title>",
        f"<script src='{PLOTLY_JS}' charset='utf-8'></script><style>{_CSS}</style></head><body>",
        "<h1>seqbench capability card</h1>",
        "<div class='answer'>" + "".join(f"<p>{e(line)}</p>" for line in answer(card)) + "</div>",
        "<h2>Frontier · accuracy at the reference rung</h2>",
        _html_table(*frontier_rows(card)),
        f"<p class='caption'>{e(method_text(card))}</p>",
        *([f"<p class='caption'>{e(against_text(card))}</p>"] if "against" in card else []),
        "<h2>Cost</h2>",
        _html_table(*cost_rows(card)),
    ]
    for i, m in enumerate(card["models"]):
        div = ladder_figure(card, m["label"]).to_html(
            full_html=False, include_plotlyjs=False, div_id=f"fig-{i}", config={"displaylogo": False}
        )
        parts.append(f"<h2>{e(m['label'])}</h2><p class='caption'>{e(' '.join(m['settings']))}</p>{div}")
    parts.append("<p class='caption'>Also here: <a href='card.json'>card.json</a>, <a href='card.md'>card.md</a>.</p>")
    return "\n".join(parts + ["</body></html>"])


def write_card_files(folder: Path, card: Card) -> Path:
    """card.json, card.md, index.html and plotly.min.js in ``folder``; returns index.html."""
    write_card(folder, card)
    atomic_write(folder / "card.md", card_md(card))
    write_plotly_js(folder)
    index = folder / "index.html"
    atomic_write(index, page(card))
    return index
