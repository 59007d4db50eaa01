"""The answer a report opens with, stated from the measured numbers before any table.

``headline(table, objective)`` reads the report's run table (``sweeps.table``) and returns a few
sentences: the best configuration (as ``seqbench verify`` states one: mean, 95% interval, n; "on all 3
seeds" where the seeds tied), which configurations stay at or below the task's memoryless baseline
(grouped by architecture when architectures were compared), and the winner against each rival on the
same seeds, by the test the judge uses for the metric (``bench.core.seed_tests``)::

    Best (tied): transformer at every task.delay, val/acc 1 on all 3 seeds.
    rnn stays at the memoryless baseline at every task.delay (0.219 at task.delay=12, 0.24 at task.delay=40 vs 0.25).
    Above the baseline: lstm 0.996 at task.delay=12, 0.619 at task.delay=40.
    Paired on the same seeds (val/acc, winner against rival, per seed: sign test): transformer vs lstm at
    task.delay=12 ahead on 2 of 3 seeds, 1 tied (+0.00434, sign test p=0.5); transformer vs rnn at
    task.delay=12 ahead on 3 of 3 seeds (+0.781, sign test p=0.25); ... A sign test over 3 seeds cannot
    decide at 5%: 3 of 3 give p=0.25 at best; 6 untied seeds can.

A pure function of the table, so the dashboard, summary.md and ``compare`` say the same thing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from seqbench.bench.core.artifacts import FINAL, PARAM
from seqbench.bench.core.seed_tests import NO_TEST, PAIRED_T, RATIO, SIGN
from seqbench.bench.core.text import text_table
from seqbench.reports.aggregate import ARCH_KEY, finite_values, fmt_ci, label, per_trial, swept, test_lengths
from seqbench.reports.comparisons import (
    Comparison,
    comparisons,
    order_key,
    ranked,
    trial_baselines,
    undecidable_note,
    versus_baseline,
)
from seqbench.reports.table import failed_configurations
from seqbench.sweeps.table import Objective, outcomes

MAX_PRINTED = 30  # paired statements `seqbench compare` prints in the terminal (all are in summary.md)

MAX_PAIRED = 4  # paired statements in the opening lines; the full list follows in its own section
PARAM_ARCH = PARAM + ARCH_KEY


def _num(v: Any) -> str:
    return f"{v:.3g}"


def _where(row: pd.Series, others: list[str]) -> str:
    """`` at task.delay=40`` (the row's other swept keys), or nothing when there are none."""
    return f" at {', '.join(f'{label(k)}={row[k]}' for k in others)}" if others else ""


def _in_order(g: pd.DataFrame, others: list[str]) -> pd.DataFrame:
    """Rows in the order of the other keys' levels (delay 12 before 40)."""
    return g.iloc[sorted(range(len(g)), key=lambda i: [order_key(g.iloc[i][k]) for k in others])]


def _setting(row: pd.Series, keys: list[str]) -> str:
    """``lstm at task.delay=40``: the architecture by name, the other swept keys as key=value."""
    name = str(row[PARAM_ARCH]) if PARAM_ARCH in keys else ""
    rest = ", ".join(f"{label(k)}={row[k]}" for k in keys if k != PARAM_ARCH)
    return " at ".join(p for p in (name, rest) if p) or "the study's one configuration"


def _baseline_lines(t: pd.DataFrame, keys: list[str], obj: Objective) -> list[str]:
    """Which configurations are no better than the memoryless baseline, grouped by architecture."""
    have = t[t["versus"].notna()]
    if have.empty:
        return []
    btext = " / ".join(_num(b) for b in sorted({round(b, 6) for b in have["baseline"]}))
    low = have[have["versus"] != "above"]
    if low.empty:
        return [f"Every configuration is above the memoryless baseline ({obj.name} {btext})."]
    others = [k for k in keys if k != PARAM_ARCH]
    lines = []
    for arch, g in low.groupby(PARAM_ARCH, sort=False) if PARAM_ARCH in keys else [(None, low)]:
        g = _in_order(g, others)
        word = "below" if (g["versus"] == "below").all() else "at or below" if (g["versus"] == "below").any() else "at"
        vals = ", ".join(_num(r["mean"]) + _where(r, others) for _, r in g.iterrows())
        if arch is None:
            lines.append(f"{word.capitalize()} the memoryless baseline: {vals} vs {btext}.")
        elif len(g) == int((have[PARAM_ARCH] == arch).sum()):
            every = f" at every {', '.join(label(k) for k in others)}" if others and len(g) > 1 else ""
            lines.append(f"{arch} stays {word} the memoryless baseline{every} ({vals} vs {btext}).")
        else:
            lines.append(f"{arch} is {word} the memoryless baseline ({vals} vs {btext}) and above it elsewhere.")
    return lines


def headline(table: pd.DataFrame, obj: Objective, max_paired: int = MAX_PAIRED) -> list[str]:
    """The opening sentences of a report for objective ``obj`` (see the module docstring); empty
    when no run scored."""
    t = per_trial(table, obj) if not table.empty else pd.DataFrame()
    if t.empty or not np.isfinite(t["mean"].astype(float)).any():
        return _failed_line(table, obj)
    t = t[np.isfinite(t["mean"].astype(float))].copy()
    keys = swept(table)
    base = trial_baselines(table, obj)
    t["baseline"] = [base.get(tr, math.nan) for tr in t["trial"]]
    t["versus"] = [
        versus_baseline(float(m), float(lo), float(hi), b, obj.maximize)
        for m, lo, hi, b in zip(t["mean"], t["lo"], t["hi"], t["baseline"])
    ]
    t = t.sort_values("mean", ascending=not obj.maximize, kind="stable")
    best = t.iloc[0]
    tied = t[np.isclose(t["mean"].astype(float), float(best["mean"]))]
    who = _who(tied, t, keys)
    stat = fmt_ci(best["mean"], best["lo"], best["hi"], int(best["n"]), form=best["form"])
    if best["versus"] in ("at", "below"):
        lines = [
            f"No configuration beats the memoryless baseline of {obj.name} {_num(best['baseline'])}: "
            f"the best, {who}, reaches {stat}."
        ]
    else:
        lines = [f"Best{' (tied)' if len(tied) > 1 else ''}: {who}, {obj.name} {stat}."]
        lines += _baseline_lines(t, keys, obj)
        lines += _rest_line(t, tied, keys)
    lines += _paired_line(table, obj, best, keys, max_paired)
    return lines + _failed_line(table, obj)


def _failed_line(table: pd.DataFrame, obj: Objective) -> list[str]:
    """The configurations that failed without a result: named, never left out of the answer."""
    failed = failed_configurations(table, [obj]) if not table.empty else pd.DataFrame()
    if failed.empty:
        return []
    keys = [c for c in failed.columns if c not in ("trial", "fail_reason")]
    named = "; ".join(", ".join(f"{k}={r[k]}" for k in keys) or f"trial {r['trial']}" for _, r in failed.iterrows())
    return [f"Failed, no result ({len(failed)}): {named} (reasons in the failed configurations table)."]


def _who(tied: pd.DataFrame, t: pd.DataFrame, keys: list[str]) -> str:
    """The tied best configurations; an architecture best at every setting of the other keys is
    named once ("transformer at every task.delay")."""
    others = [k for k in keys if k != PARAM_ARCH]
    parts = []
    for arch, g in tied.groupby(PARAM_ARCH, sort=False) if PARAM_ARCH in keys else [(None, tied)]:
        if arch is not None and others and len(g) > 1 and len(g) == int((t[PARAM_ARCH] == arch).sum()):
            parts.append(f"{arch} at every {', '.join(label(k) for k in others)}")
        else:
            parts += [_setting(r, keys) for _, r in g.iterrows()]
    return " and ".join(parts)


def _rest_line(t: pd.DataFrame, tied: pd.DataFrame, keys: list[str]) -> list[str]:
    """The other architectures above the baseline, with their mean at each setting of the other keys."""
    if PARAM_ARCH not in keys:
        return []
    others = [k for k in keys if k != PARAM_ARCH]
    above = t[(t["versus"] == "above") | t["versus"].isna()]
    parts = []
    for arch, g in above.groupby(PARAM_ARCH, sort=False):
        if arch in set(tied[PARAM_ARCH]) and len(g) == len(tied[tied[PARAM_ARCH] == arch]):
            continue
        rows = _in_order(g, others).iterrows()
        parts.append(f"{arch} " + ", ".join(_num(r["mean"]) + _where(r, others) for _, r in rows))
    head = "Above the baseline" if t["versus"].notna().any() else "The others"
    return [f"{head}: {'; '.join(parts)}."] if parts else []


def _pair_name(c: Comparison) -> str:
    """``transformer vs lstm at task.delay=40`` (architectures), ``vs optim.lr=0.01`` (another key)."""
    if c.key != ARCH_KEY:
        return f"vs {c.key}={c.b}"
    return f"{c.a} vs {c.b}" + (" at " + ", ".join(f"{k}={v}" for k, v in c.context) if c.context else "")


def _paired_line(table: pd.DataFrame, obj: Objective, best: pd.Series, keys: list[str], limit: int) -> list[str]:
    """The winner against each rival on the same seeds: where architectures were compared, the best
    architecture at each setting of the other keys against each rival; otherwise the best configuration
    against each rival that differs from it in one swept key. Each by the test the judge uses for the
    metric (``seed_tests.PairTest.short``), named in the line; when a sign test cannot decide at this
    n, one sentence says so after the pairs."""
    comps = comparisons(table, obj)
    if PARAM_ARCH in keys:
        first: dict[tuple, Any] = {}
        for c in comps:
            if c.key == ARCH_KEY:
                first.setdefault(c.context, c.a)  # each context's first pair starts with its best level
        mine = [c for c in comps if c.key == ARCH_KEY and c.a == first[c.context]]
    else:
        at_best = {label(k): best[k] for k in keys}
        mine = [
            c
            for c in comps
            if str(at_best.get(c.key)) == str(c.a) and all(str(at_best.get(k)) == str(v) for k, v in c.context)
        ]
    if not mine:
        return []
    shown = mine[:limit]
    parts = [f"{_pair_name(c)} {c.result.short()}" for c in shown]
    more = f"; {len(mine) - limit} more in the paired comparisons" if len(mine) > limit else ""
    tests = list(dict.fromkeys(c.result.test for c in shown if c.result.test != NO_TEST))
    how = {SIGN: "per seed: sign test", RATIO: "winner over rival: ratio, t on logs", PAIRED_T: "winner minus rival"}
    what = ", ".join(how.get(t, t) for t in tests) if tests else "winner minus rival"
    if SIGN in tests:
        what = "winner against rival, " + what
    note = undecidable_note(shown)
    return [
        f"Paired on the same seeds ({obj.name}, {what}): "
        + "; ".join(parts)
        + more
        + "."
        + (f" {note}" if note else "")
    ]


def ranked_text(table: pd.DataFrame, obj: Any, limit: int = MAX_PRINTED) -> str:
    """The answer (``reports.headline``), the one ranked table (mean, 95% interval, n; rows no better
    than the memoryless baseline marked in its ``baseline`` column) and the paired statements."""
    t = ranked(table, obj)
    marked = "; a baseline cell marks a row no better than the memoryless baseline" if "baseline" in t else ""
    lines = headline(table, obj) + [
        f"ranked by {obj.name} ({obj.goal}): mean [95% CI] over seeds, n scored seeds" + marked
    ]
    lines.append(text_table(list(t.columns), [list(row) for row in t.itertuples(index=False)], indent="  "))
    comps = comparisons(table, obj)
    if comps:
        lines.append("paired comparisons (same seeds; better level first):")
        lines += [f"  {c.sentence()}" for c in comps[:limit]]
        if len(comps) > limit:
            lines.append(f"  ... {len(comps) - limit} more in summary.md")
        note = undecidable_note(comps)
        if note:
            lines.append(f"  {note}")
    else:
        lines.append("paired comparisons: none (no two scored settings differ in one key on shared seeds)")
    lines += length_text(table, obj.name.split("/")[-1])
    return "\n".join(lines)


def length_text(table: pd.DataFrame, metric: str) -> list[str]:
    """Accuracy against length in the terminal: where the runs were tested at longer lengths
    (``eval.lengths``) on ``metric`` (the objective's, e.g. ``acc``), one row per configuration with the
    mean over its seeds at the training lengths (``test/<metric>``) and at each evaluated length; empty
    without such runs."""
    out: list[str] = []
    params = swept(table) or [c for c in table.columns if c.startswith(PARAM)]
    done = outcomes(table)
    lens = test_lengths(done).get(metric, [])
    if lens:
        cols = [f"{FINAL}test/{metric}", *(f"{FINAL}test@{n}/{metric}" for n in lens)]
        rows = []
        for _, g in done.groupby("trial", sort=True):
            cells = [f"{finite_values(g[c]).mean():.3f}" if c in g and len(finite_values(g[c])) else "–" for c in cols]
            rows.append([*(str(g[p].iloc[0]) for p in params), *cells])
        out.append(f"test {metric} against length (mean over seeds; 'trained' = the training lengths):")
        out.append(text_table([*(label(p) for p in params), "trained", *map(str, lens)], rows, indent="  "))
    return out
