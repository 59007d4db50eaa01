"""``seqbench cost`` outputs: cost.csv, cost.md, cost.json and the time/memory figures (the measurement is
``bench/training/cost.py``)."""

from __future__ import annotations

import csv
import json
from dataclasses import fields
from pathlib import Path
from typing import Literal

import plotly.graph_objects as go

from seqbench.bench.core.cost_format import CostMeasurement, CostMeta, CostPoint, CostSummary
from seqbench.bench.core.text import markdown_table


def _fmt(v: float | int | str | None, nd: int = 2) -> str:
    return "" if v is None else f"{v:.{nd}f}" if isinstance(v, float) else str(v)


Measured = Literal["time_ms", "peak_mem_mib"]  # what a figure plots against T


def write_outputs(result: CostMeasurement, out_dir: Path) -> list[Path]:
    """cost.csv (one row per model and length), cost.json (the whole result), cost.md and the figures."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, meta = result.rows, result.meta
    cols = [f.name for f in fields(CostPoint)]  # model, length, status, time_ms, ..., detail
    with open(out_dir / "cost.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(r.to_json() for r in rows)
    (out_dir / "cost.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    (out_dir / "cost.md").write_text("\n".join(cost_markdown(rows, result.summary, meta)) + "\n")
    paths = [out_dir / "cost.csv", out_dir / "cost.md", out_dir / "cost.json"]
    paths += _figures(rows, out_dir, meta)
    return paths


def cost_markdown(rows: list[CostPoint], summary: dict[str, CostSummary], meta: CostMeta) -> list[str]:
    """cost.md's lines: the setup, the measurements, the scaling exponents and how to read them."""
    lines = [
        f"# Cost vs sequence length ({meta.device}, d_model={meta.d_model}, "
        f"n_layers={meta.n_layers}, batch {meta.batch_size}, {meta.threads} thread(s), "
        f"torch {meta.torch})",
        "",
        f"Time: median of {meta.repeats} forward+backward steps after {meta.warmup} warm-up. "
        f"Memory: {meta.memory_method}.",
        "",
        markdown_table(
            ["model", "T", "status", "time ms", "peak MiB", "tokens/s"],
            [
                [r.model, str(r.length), r.status, _fmt(r.time_ms), _fmt(r.peak_mem_mib, 1), _fmt(r.tokens_per_s, 0)]
                for r in rows
            ],
            align="lrlrrr",
        ),
    ]
    lines += ["", "## Scaling exponents in T (log-log least squares) and the complexity table", ""]
    lines.append(_exponents_table(summary))
    lines += [
        "",
        "RNN O(T·d²): T sequential steps of a d×d matmul; self-attention O(T²·d): all pairs of "
        "positions; convolution O(k·T·d²): k taps per layer at every position. Short lengths sit "
        "below the asymptote (fixed per-step costs), so the upper-half exponent is the one to compare.",
    ]
    return lines


def _exponents_table(summary: dict[str, CostSummary]) -> str:
    return markdown_table(
        [
            "model",
            "complexity",
            "expected (T >> d)",
            "time exp (all)",
            "time exp (upper half)",
            "memory exp (all)",
            "stopped",
        ],
        [
            [
                m,
                s.complexity,
                _fmt(s.expected_time_exponent),
                _fmt(s.time_exponent),
                _fmt(s.time_exponent_upper),
                _fmt(s.memory_exponent),
                s.stopped or "",
            ]
            for m, s in summary.items()
        ],
        align="llrrrrl",
    )


def fig_cost(rows: list[CostPoint], key: Measured, title: str, meta: CostMeta) -> go.Figure | None:
    """``key`` (time_ms or peak_mem_mib) against T, log-log, one line per model; None when nothing measured."""
    fig = go.Figure()
    for m in dict.fromkeys(r.model for r in rows):
        pts = [(r.length, v) for r in rows if r.model == m and r.status == "ok" and (v := getattr(r, key))]
        if pts:
            fig.add_trace(go.Scatter(x=[t for t, _ in pts], y=[v for _, v in pts], mode="lines+markers", name=m))
    if not fig.data:
        return None
    fig.update_layout(
        title=f"{title} vs sequence length, d_model={meta.d_model} on {meta.device}",
        xaxis_title="sequence length T",
        yaxis_title=title,
        xaxis_type="log",
        yaxis_type="log",
    )
    return fig


def _figures(rows: list[CostPoint], out_dir: Path, meta: CostMeta) -> list[Path]:
    out = []
    figures: list[tuple[Measured, str, str]] = [
        ("time_ms", "forward+backward time (ms)", "cost_time.html"),
        ("peak_mem_mib", f"peak memory (MiB, {meta.memory_method})", "cost_memory.html"),
    ]
    for key, title, fname in figures:
        fig = fig_cost(rows, key, title, meta)
        if fig is None:
            continue
        fig.write_html(out_dir / fname, include_plotlyjs=True, full_html=True)
        out.append(out_dir / fname)
    return out
