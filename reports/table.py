"""An Optuna study plus its runs' files -> one tidy DataFrame, one row per run (trial x seed).

Every figure in the dashboard is drawn from this frame (``trials.csv`` is the same frame on
disk), so anything a figure shows can be checked against the table. Columns:

- ``trial``, ``state`` (Optuna state name), ``seed``, ``run_id``, ``run_dir``, ``config_hash``
- ``param.<dotted key>`` for every swept key (``param.model.name``, ``param.optim.warmup_steps``)
- ``objective:<metric>`` the run's objective value (the seed's entry of the trial's ``per_seed``,
  else ``final[metric]`` from results.json) for COMPLETE and FAIL trials; NaN for pruned, running
  and retried trials, whose numbers stay in ``final.*``; ``trial_value:<metric>`` Optuna's value
- ``status`` (results.json status: completed/diverged/interrupted; ``incomplete`` when the run
  folder has no results.json yet; ``not-started`` for a trial without runs), ``diverged``, ``solved``
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import optuna
import pandas as pd
from optuna.trial import TrialState

from seqbench.bench.core.artifacts import (
    EVAL,
    FINAL,
    OBJECTIVE,
    PARAM,
    RESULT_PARTS,
    TRIAL_VALUE,
    eval_metrics,
    read_metrics,
    read_results,
    runs_path,
)
from seqbench.bench.core.errors import UserError
from seqbench.sweeps.liveness import superseded

STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")
RETRIED = "RETRIED"  # state_counts' name for superseded FAIL attempts (the sweep summary says "retried")
_RUN_SCALARS = ("steps", "train_time_s", "wall_time_s", "n_params", "samples_per_s", "task", "model",
                "solved", "reason", "tokens_per_s", "model_flops_per_token", "model_flops_per_s", "mfu")


@dataclass(frozen=True)
class Objective:
    """One optimisation target: a metric key and its direction (Optuna's words)."""

    name: str
    goal: Literal["minimize", "maximize"]  # Optuna's words

    @property
    def column(self) -> str:
        return OBJECTIVE + self.name

    @property
    def trial_column(self) -> str:
        return TRIAL_VALUE + self.name

    @property
    def maximize(self) -> bool:
        return self.goal == "maximize"


@dataclass
class StudyInfo:
    """What the dashboard header says about the study (everything else comes from the frame)."""

    name: str
    question: str
    objectives: list[Objective]
    storage: str
    params: list[str]
    seqbench_version: str | None = None
    git_sha: str | None = None
    spec_path: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    out_dir: str | None = None


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
        out.append(Objective(name=m.get("name") or ("objective" if len(dirs) == 1 else f"objective_{i}"),
                             goal=_optuna_goal(m.get("goal") or d)))
    return out


def _optuna_goal(word: str) -> Literal["minimize", "maximize"]:
    """A stored goal (Optuna's words: the study attrs and its directions hold nothing else)."""
    return "maximize" if word == "maximize" else "minimize"


def study_info(study: optuna.Study, storage_label: str) -> StudyInfo:
    ua = study.user_attrs
    spec = ua.get("spec") or {}
    params = list((spec.get("parameters") or {}).keys())
    for t in study.get_trials(deepcopy=False):  # a hand-made study without a spec: params from trials
        params += [k for k in t.params if k not in params]
    return StudyInfo(name=study.study_name, question=ua.get("question") or spec.get("question") or "",
                     objectives=objectives_of(study), storage=storage_label, params=params,
                     seqbench_version=ua.get("seqbench_version"), git_sha=ua.get("git_sha"),
                     spec_path=ua.get("spec_path"), spec=spec, out_dir=ua.get("out_dir"))


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
    """One row per run of every trial (see the module docstring for the columns)."""
    objectives = objectives_of(study)
    rows: list[dict[str, Any]] = []
    trials = study.get_trials(deepcopy=False)
    gone = superseded(trials)  # failed trials whose configuration was queued again
    for t in trials:
        ua = t.user_attrs
        base: dict[str, Any] = {"trial": t.number, "state": t.state.name,
                                "config_hash": ua.get("config_hash"),
                                "fail_reason": ua.get("fail_reason") or ua.get("prune_reason"),
                                "trial_wall_s": _num(ua.get("wall_s")), "superseded": t.number in gone,
                                "retry_of": _num(ua.get("retry_of"))}
        base.update({PARAM + k: _param_value(v) for k, v in t.params.items()})
        values = t.values or []
        for k, o in enumerate(objectives):
            base[o.trial_column] = _num(values[k]) if k < len(values) else math.nan
        # seeds of COMPLETE trials, and the surviving seeds of FAIL trials (one diverged seed fails a
        # trial, and those cells matter most); a pruned, running or retried run is not comparable
        scored = t.state in (TrialState.COMPLETE, TrialState.FAIL) and t.number not in gone
        run_ids = list(ua.get("run_ids") or [])
        seeds = list(ua.get("seeds") or [])
        if not run_ids:
            rows.append({**base, "seed": math.nan, "run_id": "", "run_dir": "", "status": "not-started",
                         "diverged": False, **{o.column: math.nan for o in objectives}})
            continue
        for i, run_id in enumerate(run_ids):
            run_dir = runs / run_id
            res = read_results(run_dir)
            row = {**base, "seed": seeds[i] if i < len(seeds) else (res or {}).get("seed", math.nan),
                   "run_id": run_id, "run_dir": str(run_dir), **run_fields(run_dir, res)}
            for k, o in enumerate(objectives):
                if not scored:
                    row[o.column] = math.nan
                elif "per_seed" in ua:  # None/NaN there: the sweeper scored the seed as failed (diverged)
                    row[o.column] = _seed_value(ua["per_seed"], i, k)
                else:
                    row[o.column] = row.get(FINAL + o.name, math.nan)
            rows.append(row)
    lead = ["trial", "state", "seed", "run_id", "status", "diverged"]
    if not rows:  # a study with no trials yet: the columns every reader expects, no rows
        return pd.DataFrame(columns=lead + ["run_dir", "trial_wall_s", "superseded", "retry_of"]
                            + [c for o in objectives for c in (o.column, o.trial_column)])
    df = pd.DataFrame(rows)
    lead += sorted(c for c in df.columns if c.startswith(PARAM))
    lead += [o.column for o in objectives] + [o.trial_column for o in objectives]
    return df[lead + [c for c in df.columns if c not in lead]]


def outcomes(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that state outcomes: every row but those of superseded attempts (their runs continue
    in the retry's rows; a configuration is ranked, counted and pooled once)."""
    if df.empty or "superseded" not in df.columns:
        return df
    return df[~df["superseded"].astype(bool)]


def run_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run folder: a run shared by a failed attempt and its retry appears once, as the
    latest attempt sees it (a retry still waiting leaves the failed attempt's row, so its curve stays)."""
    if df.empty:
        return df
    runs = df[df["run_id"].astype(bool)]
    if "trial" in runs.columns:  # a frame of runs alone (no trials) has each run once already
        runs = runs.sort_values("trial", kind="stable")
    return runs.drop_duplicates("run_id", keep="last").sort_index()


def load_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Every run's ``metrics.csv`` as a long frame: run_id, step, metric, value (each run once)."""
    parts = []
    for run_id, run_dir in run_rows(df)[["run_id", "run_dir"]].itertuples(index=False):
        rows = read_metrics(Path(run_dir))
        if not rows:
            continue
        long = pd.DataFrame(rows).melt(id_vars=["step"], var_name="metric", value_name="value").dropna()
        long["value"] = long["value"].astype(float)
        long.insert(0, "run_id", run_id)
        parts.append(long)
    if not parts:
        return pd.DataFrame(columns=["run_id", "step", "metric", "value"])
    return pd.concat(parts, ignore_index=True)


def failed_configurations(df: pd.DataFrame, objectives: list[Objective]) -> pd.DataFrame:
    """The FAIL trials (not superseded) without one scored seed: trial, swept settings, why. A report
    lists them as failed, never leaves them out (a crash is a finding, or work --retry-failed redoes)."""
    rows = outcomes(df)
    if rows.empty or "state" not in rows.columns or not (rows["state"] == "FAIL").any():
        return pd.DataFrame(columns=["trial", "fail_reason"])
    failed = rows[rows["state"] == "FAIL"].assign(fail_reason=rows.get("fail_reason"))
    scored = failed[[o.column for o in objectives if o.column in failed]].notna().any(axis=1)
    failed = failed[~failed["trial"].isin(failed.loc[scored, "trial"])].drop_duplicates("trial")
    params = [c for c in df.columns if c.startswith(PARAM)]
    out = failed[["trial", *params, "fail_reason"]].rename(columns=lambda c: c[len(PARAM):] if c.startswith(PARAM)
                                                           else c)
    return out.reset_index(drop=True)


def state_counts(df: pd.DataFrame) -> dict[str, int]:
    """Trials (not runs) by Optuna state, every state listed; superseded attempts count as ``RETRIED``
    (listed when there are some), not as FAIL."""
    trials = df.drop_duplicates("trial") if not df.empty else df
    if not df.empty and "superseded" in df.columns:
        trials = trials.assign(state=trials["state"].where(~trials["superseded"].astype(bool), RETRIED))
    per_trial = trials["state"].value_counts() if not df.empty else {}
    counts = {s: int(per_trial.get(s, 0)) for s in STATES}
    counts.update({s: int(n) for s, n in dict(per_trial).items() if s not in counts})
    return counts


def compute_seconds(df: pd.DataFrame) -> float:
    """Total compute: the trials' wall time where recorded, else their runs' wall time."""
    if df.empty:
        return 0.0
    total = 0.0
    for _, g in df.groupby("trial"):
        w = g["trial_wall_s"].iloc[0]
        if not math.isnan(w):
            total += w
        elif "wall_time_s" in g:
            total += float(pd.to_numeric(g["wall_time_s"], errors="coerce").fillna(0).sum())
    return total

