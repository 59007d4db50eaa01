"""The dashboard: ``index.html`` (self-contained; plotly.min.js written beside it), ``summary.md``, ``trials.csv``.

The page loads only ``plotly.min.js`` from its own folder, so it opens from file:// with no
network, and the folder can be zipped, mailed or committed as it is.
"""

from __future__ import annotations

import html
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.disk import disk_full, is_disk_full
from seqbench.bench.core.provenance import git_sha, package_version
from seqbench.bench.core.text import MISSING, duration, markdown_table
from seqbench.reports import aggregate as A
from seqbench.reports import figures as F
from seqbench.reports.comparisons import ALL_PAIRS_UP_TO, comparisons, comparisons_table, undecidable_note
from seqbench.reports.diagnostics import diagnostics_figures
from seqbench.reports.headline import headline
from seqbench.reports.optuna_views import optuna_figures
from seqbench.reports.table import StudyInfo, compute_seconds, failed_configurations, run_rows, state_counts
from seqbench.reports.throughput import throughput_items
from seqbench.sweeps.table import Objective, outcomes

PLOTLY_JS = "plotly.min.js"
MAX_STATEMENTS = 60  # paired statements listed per objective (a big factorial has hundreds)


@dataclass
class Section:
    title: str
    caption: str
    items: list[tuple[str, Any]] = field(default_factory=list)  # (title, go.Figure | pd.DataFrame | "skipped: why")


def _frame_cells(t: pd.DataFrame) -> pd.DataFrame:
    """A display copy: mean, 95% interval and n joined into one cell as ``aggregate.fmt_ci`` writes it
    ('n=1, no interval' for one run, '1 on all 3 seeds' where the seeds tied), std kept beside it,
    floats shortened."""
    t = t.copy()
    for pre, n_col in (("best ", "seeds"), ("", "seeds scored")):
        cols = [pre + "mean", pre + "lo", pre + "hi", n_col]
        if all(c in t.columns for c in cols):
            forms = t[pre + "form"] if pre + "form" in t.columns else [None] * len(t)
            cells = [A.fmt_ci(m, lo, hi, n, form=f) for m, lo, hi, n, f in zip(*(t[c] for c in cols), forms)]
            t.insert(list(t.columns).index(pre + "mean"), f"{pre}mean [95% CI]", cells)
            t = t.drop(columns=[c for c in (pre + "mean", pre + "lo", pre + "hi", pre + "form") if c in t.columns])
    for c in t.columns:
        if pd.api.types.is_float_dtype(t[c]):
            t[c] = [(MISSING if v != v else f"{v:.4g}") for v in t[c]]
    return t


def sections(
    info: StudyInfo, df: pd.DataFrame, curves: pd.DataFrame, diag: pd.DataFrame, color_by: str | None = None
) -> list[Section]:
    """What the dashboard shows, chosen from what the study swept (see reports.aggregate's heuristics)."""
    runs = run_rows(df)  # before outcomes: a run whose retry waits still shows its curve
    df = outcomes(df)  # a superseded attempt's runs are its retry's: pooled and ranked once
    out: list[Section] = []
    for obj in info.objectives:
        out += [summary_section(df, obj), paired_section(df, obj)]
    obj = info.objectives[0]
    out += factor_sections(df, obj)
    out += length_sections(df, obj)
    out += curve_sections(curves, runs, obj, color_by or A.color_column(df))
    out.append(
        Section(
            "Throughput and utilisation",
            "Training tokens per second of each configuration (mean ± std "
            "over its runs) and, on a GPU, model FLOPs utilisation: analytic training FLOPs per token "
            "(bench/training/flops.py) times tokens/s, over the device's dense peak for the precision.",
            throughput_items(runs),
        )
    )
    out.append(
        Section(
            "Optuna views",
            "Optuna's own plots over the completed trials (trial value = mean over seeds).",
            optuna_figures(df, info.objectives),
        )
    )
    if not diag.empty:
        out.append(
            Section(
                "Diagnostics",
                "Gradient diagnostics the runs recorded (diagnostics.gradients=true; "
                "definitions in each run's diagnostics.json): how far back the loss still reaches, "
                "per-layer and global gradient norms before clipping, recurrent spectral norms.",
                diagnostics_figures(diag, runs),
            )
        )
    return out


def factor_sections(df: pd.DataFrame, obj: Objective) -> list[Section]:
    """The factorial heatmap (two or more discrete factors swept) and every run by factor level."""
    out: list[Section] = []
    axes = A.heatmap_axes(df)
    if axes:
        x, y, facet = axes
        out.append(
            Section(
                "Factorial view",
                f"Mean {obj.name} over runs in each cell (seeds and any other swept "
                "factor pooled); the text gives mean, 95% interval, ± std, n and diverged runs.",
                [("heatmap", F.fig_heatmap(df, obj, x, y, facet))],
            )
        )
    if A.swept(df):
        out.append(
            Section(
                "Factors",
                "Every run's objective at each level of each swept factor.",
                [("factors", F.fig_factors(df, obj))],
            )
        )
    return out


def length_sections(df: pd.DataFrame, obj: Objective) -> list[Section]:
    """The objective against a swept dependency length and the test metrics at evaluated lengths, if any."""
    arch = A.arch_column(df)
    length = A.length_column(df)
    tl = A.test_lengths(df)
    if not (length or tl):
        return []
    s = Section(
        "Long-range dependencies",
        "The objective against the dependency length, one line per "
        "architecture, with the task's memoryless baseline (the score of a model with no memory); "
        "and, where runs were evaluated at longer lengths (eval.lengths), the test metric there.",
    )
    if length:
        s.items.append(("length", F.fig_length(df, obj, length, arch)))
    for metric in tl:
        s.items.append((f"generalisation {metric}", F.fig_length_generalisation(df, metric, arch, length)))
    return [s]


def curve_sections(curves: pd.DataFrame, runs: pd.DataFrame, obj: Objective, color: str | None) -> list[Section]:
    """Each run's curves of the objective (or the loss) and of the training loss, coloured by ``color``."""
    curve_metric = A.curve_metric(curves, obj)
    if not curve_metric:
        return []
    s = Section(
        "Learning curves",
        "Each run's validation curves from its metrics.csv" + (f", coloured by {A.label(color)}." if color else "."),
    )
    for m in dict.fromkeys([curve_metric, "train/loss"]):
        if m in set(curves["metric"]):
            s.items.append((m, F.fig_learning_curves(curves, runs, m, color)))
    return [s]


def summary_section(df: pd.DataFrame, obj: Objective) -> Section:
    """The best configurations for one objective: per level of each factor, the top trials, the failed ones."""
    s = Section(
        f"Summary: {obj.name} ({obj.goal})",
        "Best configuration at every level of each swept factor: the trial with the best seed-mean "
        "at that level, stated as seqbench verify states a configuration (mean, 95% Student-t interval "
        "kept in the metric's range and n over its seeds; a loss-like metric: geometric mean, t on the "
        "logs; an accuracy whose seeds all scored 0 or 1: the share at 1, exact interval; seeds that "
        "tied: the value on all n seeds, no interval; one seed: n=1, no interval), the mean over all runs "
        "at the level, and how many runs diverged.",
    )
    s.items.append(("Best per level", _frame_cells(A.summary_table(df, obj))))
    s.items.append(("Top trials", _frame_cells(A.top_trials(df, obj))))
    failed = failed_configurations(df, [obj])
    if not failed.empty:  # a configuration with no result is listed as failed, never left out
        s.items.append(("Failed configurations (no scored seed)", failed))
    return s


def paired_section(df: pd.DataFrame, obj: Objective, limit: int = MAX_STATEMENTS) -> Section:
    """Paired statements between settings that differ in one swept key and share seeds."""
    comps = comparisons(df, obj)
    more = f" The first {limit} of {len(comps)} are listed." if len(comps) > limit else ""
    note = undecidable_note(comps)
    s = Section(
        f"Paired comparisons: {obj.name}",
        "Settings that differ in exactly one swept key, compared over the seeds they share (same data "
        "streams), better level first, by the test seqbench verify judges the metric with: a bounded "
        "metric (accuracy, exact match, solved) or seeds that tie per seed, as the share of seeds the "
        "better level is ahead on with its exact Clopper-Pearson interval and an exact sign test over "
        "the untied seeds (ties counted and said); a loss-like metric as the geometric mean of the "
        "per-seed ratios with a paired t on their logs; any other as the mean difference with its "
        "Student-t interval, the paired t-test and Cohen's d_z (either by exact sign flips where verify "
        "tests such a mean so: differences on a lattice). 'smallest p at n' is the least p the "
        "test could give with these seeds: where it exceeds 0.05 the statement says the seeds cannot "
        f"decide. Each level is compared with the best level of its key (every pair when a key has at "
        f"most {ALL_PAIRS_UP_TO} levels)." + (f" {note}" if note else "") + more,
    )
    if comps:
        s.items.append(("Paired statements", _frame_cells(comparisons_table(comps[:limit]))))
    else:
        s.items.append(("Paired statements", "no two scored settings differ in one swept key on shared seeds"))
    return s


def answer(info: StudyInfo, df: pd.DataFrame) -> list[str]:
    """The report's opening: the answer to the study's question from the measured numbers
    (``reports.headline``), one objective after the other."""
    return [line for obj in info.objectives for line in headline(outcomes(df), obj)]


def header_facts(info: StudyInfo, df: pd.DataFrame, built: dict[str, Any]) -> list[tuple[str, str]]:
    counts = state_counts(df)
    runs = run_rows(df)
    by_status = runs["status"].value_counts().to_dict() if not runs.empty else {}
    made = " ".join(x for x in (info.seqbench_version, f"({info.git_sha})" if info.git_sha else "") if x)
    return [
        ("objective", ", ".join(f"{o.name} ({o.goal})" for o in info.objectives)),
        ("storage", info.storage),
        ("trials", " · ".join(f"{n} {s.lower()}" for s, n in counts.items()) + f"  (total {sum(counts.values())})"),
        ("runs", " · ".join(f"{n} {s}" for s, n in by_status.items()) + f"  (total {len(runs)})"),
        ("compute time", duration(compute_seconds(df))),
        ("swept", ", ".join(info.params) or "nothing"),
        ("sweep spec", info.spec_path or MISSING),
        ("study made with", f"seqbench {made}" if made else MISSING),
        ("report built", f"seqbench {built['version']} ({built['git_sha']}) on {built['when']}"),
    ]


_CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0 auto;max-width:1280px;padding:16px 28px;
color:#222}
h1{margin-bottom:4px} .question{font-size:1.25em;font-style:italic;color:#333;margin:6px 0 14px}
.answer{font-size:1.1em;border-left:4px solid #2a6fdb;padding:2px 12px;margin:0 0 14px} .answer p{margin:6px 0}
table{border-collapse:collapse;font-size:13px;margin:8px 0 18px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f3f5f8} table.facts th{width:150px} .caption{color:#555;font-size:14px;max-width:980px}
.skipped{color:#777;font-style:italic;font-size:13px} section{margin-top:26px;border-top:2px solid #e6e9ef}
figure.panel{margin:8px 0 18px} .files{color:#555;font-size:13px}
"""


def _table_html(t: pd.DataFrame) -> str:
    return t.to_html(index=False, border=0, classes="data", na_rep=MISSING, escape=True)


def page(info: StudyInfo, df: pd.DataFrame, secs: list[Section], built: dict[str, Any]) -> str:
    e = html.escape
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>seqbench report: {e(info.name)}</title>",
        f"<script src='{PLOTLY_JS}' charset='utf-8'></script><style>{_CSS}</style></head><body>",
        f"<h1>seqbench report: {e(info.name)}</h1>",
        f"<div class='question'>{e(info.question) or 'No question recorded with this study.'}</div>",
        "<div class='answer'>" + "".join(f"<p>{e(line)}</p>" for line in answer(info, df)) + "</div>",
        "<table class='facts'>"
        + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in header_facts(info, df, built))
        + "</table>",
        "<p class='files'>Also here: <a href='summary.md'>summary.md</a> (these tables in Markdown), "
        "<a href='trials.csv'>trials.csv</a> (the table every figure is drawn from).</p>",
    ]
    n = 0
    for s in secs:
        parts.append(f"<section><h2>{e(s.title)}</h2><p class='caption'>{e(s.caption)}</p>")
        for title, item in s.items:
            if isinstance(item, go.Figure):
                n += 1
                div = item.to_html(
                    full_html=False,
                    include_plotlyjs=False,
                    div_id=f"fig-{n}",
                    config={"displaylogo": False, "responsive": True},
                )
                parts.append(f"<figure class='panel' data-title='{e(title)}'>{div}</figure>")
            elif isinstance(item, pd.DataFrame):
                parts.append(f"<h3>{e(title)}</h3>" + _table_html(item))
            else:
                parts.append(f"<p class='skipped'>{e(title)}: {e(str(item))}</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _md_table(t: pd.DataFrame) -> str:
    if t.empty:
        return "_(no rows)_\n"
    rows = [
        [MISSING if (isinstance(v, float) and math.isnan(v)) else str(v) for v in row]
        for row in t.itertuples(index=False)
    ]  # values as the frame holds them
    return markdown_table([str(c) for c in t.columns], rows) + "\n"


def summary_md(info: StudyInfo, df: pd.DataFrame, secs: list[Section], built: dict[str, Any]) -> str:
    out = [f"# seqbench report: {info.name}", "", f"> {info.question}" if info.question else "", ""]
    out += [x for line in answer(info, df) for x in (line, "")]  # one paragraph each
    out += [f"- **{k}**: {v}" for k, v in header_facts(info, df, built)] + [""]
    for s in secs:
        tables = [(t, i) for t, i in s.items if isinstance(i, pd.DataFrame)]
        for title, t in tables:
            out += [f"## {s.title}: {title}", "", _md_table(t)]
    return "\n".join(out)


def _plotly_stamp() -> str:
    return f"/* plotly.js for plotly.py {plotly.__version__} */\n"


def write_plotly_js(folder: Path) -> None:
    """plotly.min.js beside a page (rewritten only when plotly's version changed)."""
    if not _plotly_current(folder):
        atomic_write(folder / PLOTLY_JS, _plotly_stamp() + get_plotlyjs())


def _plotly_current(folder: Path) -> bool:
    js = folder / PLOTLY_JS
    return js.is_file() and js.read_text(errors="ignore").startswith(_plotly_stamp())


def write_report(
    info: StudyInfo,
    df: pd.DataFrame,
    curves: pd.DataFrame,
    diag: pd.DataFrame,
    report_dir: Path,
    built: dict[str, Any],
    color_by: str | None = None,
) -> Path:
    """Write index.html, plotly.min.js, summary.md and trials.csv into ``report_dir``; return index.html.
    A full disk is one line naming the folder and the report's size; a page already there stays whole."""
    secs = sections(info, df, curves, diag, color_by)
    files = {
        "trials.csv": df.to_csv(index=False),
        "summary.md": summary_md(info, df, secs, built),
        "index.html": page(info, df, secs, built),
    }  # the page last: a reader finds it complete
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
        write_plotly_js(report_dir)
        for name, text in files.items():
            atomic_write(report_dir / name, text)
    except OSError as e:
        if not is_disk_full(e):
            raise
        need = sum(len(t.encode()) for t in files.values()) + (
            0 if _plotly_current(report_dir) else len(get_plotlyjs())
        )
        raise disk_full(
            "--out",
            report_dir,
            need,
            e,
            then="free space or choose another --out DIR, and build it again (the study is untouched)",
        ) from None
    return report_dir / "index.html"


def built_by() -> dict[str, Any]:
    version = package_version() or "unknown"
    sha = git_sha()
    return {
        "version": version,
        "git_sha": (sha[:12] + ("+dirty" if sha.endswith("+dirty") else "")) if sha else "no git",
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
