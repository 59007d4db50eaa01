"""An Optuna study plus its runs' files -> one tidy DataFrame, one row per run (trial x seed).

Built here, on the sweep floor, so that claims (``sweeps/claims/``) judge the very frame the dashboard
draws every figure from (``reports/``; ``trials.csv`` is the same frame on disk): anything a figure or a
verdict shows can be checked against the table. Columns:

- ``trial``, ``state`` (Optuna state name), ``seed``, ``run_id``, ``run_dir``, ``config_hash``
- ``param.<dotted key>`` for every swept key (``param.model.name``, ``param.optim.warmup_steps``)
- ``objective:<metric>`` the run's objective value (the seed's entry of the trial's ``per_seed``,
  else ``final[metric]`` from results.json) for COMPLETE and FAIL trials; NaN for pruned, running
  and retried trials, whose numbers stay in ``final.*``; ``trial_value:<metric>`` Optuna's value
- ``status`` (results.json status: completed/diverged/interrupted; ``incomplete`` when the run
  folder has no results.json yet; ``not-started`` for a trial without runs; ``skipped`` for a seed the
  spec's ladder did not train, ``sweeps/ladder.py``, and ``solved-elsewhere`` for one it did not train at a
  point because the seed solved that rung at another, ``skip_solved``), ``diverged``, ``solved``
- ``final.<key>``, ``best.<key>``, ``baseline.<key>`` from results.json; ``eval.<key>`` from `seqbench eval` records
- ``steps``, ``train_time_s``, ``wall_time_s``, ``n_params``, ``samples_per_s``, ``task``, ``model``,
  ``tokens_per_s``, ``model_flops_per_s``, ``mfu`` (throughput; absent in older runs)
- ``trial_wall_s``, ``fail_reason`` (or the prune reason)
- ``superseded`` (a FAIL attempt whose configuration was queued again: killed, interrupted, a full
  disk, ``--retry-failed``) and ``retry_of`` (on a retry: the trial it redoes, else NaN)

A trial that started no run (WAITING, RUNNING before its first seed, a FAIL before training) still
gets one row with an empty ``run_id`` so that trial counts by state come from the same frame.

A retry continues its failed twin's runs (same run ids): the twin's rows stay, marked ``superseded``,
so the history is kept, while everything that states a configuration's outcome reads ``outcomes(df)``
(no superseded row) and everything keyed by run (curves, diagnostics, throughput) reads
``run_rows(df)`` (each run once, as its latest attempt sees it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import (
    EVAL,
    FINAL,
    OBJECTIVE,
    PARAM,
    RESULT_PARTS,
    SKIPPED,
    SOLVED_ELSEWHERE,
    TRIAL_VALUE,
    eval_metrics,
    read_results,
    runs_path,
)
from seqbench.bench.core.errors import UserError
from seqbench.sweeps.liveness import superseded

_RUN_SCALARS = (
    "steps",
    "train_time_s",
    "wall_time_s",
    "n_params",
    "samples_per_s",
    "task",
    "model",
    "solved",
    "reason",
    "tokens_per_s",
    "model_flops_per_token",
    "model_flops_per_s",
    "mfu",
)


@dataclass(frozen=True)
class Objective:
    """One optimisation target: a metric key and its direction (Optuna's words)."""

    name: str
    goal: str  # "minimize" or "maximize"

    @property
    def column(self) -> str:
        return OBJECTIVE + self.name

    @property
    def trial_column(self) -> str:
        return TRIAL_VALUE + self.name

    @property
    def maximize(self) -> bool:
        return self.goal == "maximize"


def load_study(name: str, storage: Any) -> optuna.Study:
    """The named study, or a UserError listing the studies the storage holds."""
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        names = sorted(optuna.get_all_study_names(storage))
        have = ", ".join(names) if names else "none (run `seqbench sweep SPEC` first)"
        raise UserError(f"study: no study named {name!r} in this storage; studies there: {have}") from None


def objectives_of(study: optuna.Study) -> list[Objective]:
    """From the study's ``metrics`` attr; a study without it gets ``objective`` names per direction."""
    metrics = study.user_attrs.get("metrics") or []
    dirs = [d.name.lower() for d in study.directions]
    out = []
    for i, d in enumerate(dirs):
        m = metrics[i] if i < len(metrics) else {}
        out.append(
            Objective(
                name=m.get("name") or ("objective" if len(dirs) == 1 else f"objective_{i}"), goal=m.get("goal") or d
            )
        )
    return out


def runs_root(study: optuna.Study, fallback_out_dir: Path | str) -> Path:
    """Where the study's run folders are: the study's recorded out_dir, else ``fallback_out_dir``.

    A relative recorded out_dir is relative to where the sweep ran; the fallback covers a report
    built from another directory or machine with the outputs copied over.
    """
    recorded = study.user_attrs.get("out_dir")
    if recorded and runs_path(recorded).is_dir():
        return runs_path(recorded)
    return runs_path(fallback_out_dir)


def _num(v: Any) -> float:
    if v is None:
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _seed_value(per_seed: Any, i: int, k: int) -> float:
    """Objective k of seed i from the trial's ``per_seed`` (a list, or a list of lists)."""
    if not isinstance(per_seed, list) or i >= len(per_seed):
        return math.nan
    v = per_seed[i]
    if isinstance(v, (list, tuple)):
        return _num(v[k]) if k < len(v) else math.nan
    return _num(v) if k == 0 else math.nan


def _param_value(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def run_fields(run_dir: Path, res: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's own columns (status, diverged, final./best./baseline., scalars) from its results.json
    ``res``; the report's table and ``reports.runs.load_runs`` both take them from here."""
    row: dict[str, Any] = {}
    if res is None:
        row["status"] = "incomplete" if run_dir.is_dir() else "missing"
    else:
        row["status"] = res.get("status", "completed")
        for part in RESULT_PARTS:
            row.update({f"{part}.{k}": _num(v) for k, v in (res.get(part) or {}).items()})
        row.update({k: res.get(k) for k in _RUN_SCALARS})
    row.update({EVAL + k: _num(v) for k, v in eval_metrics(run_dir).items()})  # `seqbench eval` records
    row["diverged"] = row["status"] == "diverged"
    return row


def build_table(study: optuna.Study, runs: Path) -> pd.DataFrame:
    """One row per run of every trial of ``study`` (see the module docstring for the columns)."""
    return trials_table(study.get_trials(deepcopy=False), objectives_of(study), runs)


def trials_table(trials: list[FrozenTrial], objectives: list[Objective], runs: Path) -> pd.DataFrame:
    """:func:`build_table` of trials already read (a sweep's own: ``SweepResult.trials``, its spec's metrics)."""
    rows: list[dict[str, Any]] = []
    gone = superseded(trials)  # failed trials whose configuration was queued again
    for t in trials:
        rows += _trial_rows(t, objectives, runs, is_superseded=t.number in gone)
    lead = ["trial", "state", "seed", "run_id", "status", "diverged"]
    if not rows:  # a study with no trials yet: the columns every reader expects, no rows
        return pd.DataFrame(
            columns=lead
            + ["run_dir", "trial_wall_s", "superseded", "retry_of"]
            + [c for o in objectives for c in (o.column, o.trial_column)]
        )
    df = pd.DataFrame(rows)
    lead += sorted(c for c in df.columns if c.startswith(PARAM))
    lead += [o.column for o in objectives] + [o.trial_column for o in objectives]
    return df[lead + [c for c in df.columns if c not in lead]]


def _trial_rows(t: FrozenTrial, objectives: list[Objective], runs: Path, is_superseded: bool) -> list[dict[str, Any]]:
    """One trial's rows: one per run (its seed), or one ``not-started`` row when it has no run yet."""
    ua = t.user_attrs
    base: dict[str, Any] = {
        "trial": t.number,
        "state": t.state.name,
        "config_hash": ua.get("config_hash"),
        "fail_reason": ua.get("fail_reason") or ua.get("prune_reason"),
        "trial_wall_s": _num(ua.get("wall_s")),
        "superseded": is_superseded,
        "retry_of": _num(ua.get("retry_of")),
    }
    base.update({PARAM + k: _param_value(v) for k, v in t.params.items()})
    values = t.values or []
    for k, o in enumerate(objectives):
        base[o.trial_column] = _num(values[k]) if k < len(values) else math.nan
    # seeds of COMPLETE trials, and the surviving seeds of FAIL trials (one diverged seed fails a
    # trial, and those cells matter most); a pruned, running or retried run is not comparable
    scored = t.state in (TrialState.COMPLETE, TrialState.FAIL) and not is_superseded
    run_ids = list(ua.get("run_ids") or [])
    seeds = list(ua.get("seeds") or [])
    if not run_ids:
        return [
            {
                **base,
                "seed": math.nan,
                "run_id": "",
                "run_dir": "",
                "status": "not-started",
                "diverged": False,
                **{o.column: math.nan for o in objectives},
            }
        ]
    rows = []
    for i, run_id in enumerate(run_ids):
        if not run_id:  # a seed the ladder did not train: it failed an easier rung or solved this one elsewhere
            seed = seeds[i] if i < len(seeds) else math.nan
            rows.append(
                {
                    **base,
                    "seed": seed,
                    "run_id": "",
                    "run_dir": "",
                    "status": SOLVED_ELSEWHERE if seed in (ua.get("solved_elsewhere") or []) else SKIPPED,
                    "diverged": False,
                    **{o.column: math.nan for o in objectives},
                }
            )
            continue
        run_dir = runs / run_id
        res = read_results(run_dir)
        row = {
            **base,
            "seed": seeds[i] if i < len(seeds) else (res or {}).get("seed", math.nan),
            "run_id": run_id,
            "run_dir": str(run_dir),
            **run_fields(run_dir, res),
        }
        for k, o in enumerate(objectives):
            if not scored:
                row[o.column] = math.nan
            elif "per_seed" in ua:  # None/NaN there: the sweeper scored the seed as failed (diverged)
                row[o.column] = _seed_value(ua["per_seed"], i, k)
            else:
                row[o.column] = row.get(FINAL + o.name, math.nan)
        rows.append(row)
    return rows


def outcomes(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that state outcomes: every row but those of superseded attempts (their runs continue
    in the retry's rows; a configuration is ranked, counted and pooled once)."""
    if df.empty or "superseded" not in df.columns:
        return df
    return df[~df["superseded"].astype(bool)]
