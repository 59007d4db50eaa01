"""The report's reading of a study's run table (``sweeps.table`` builds it: one row per run, its columns
listed there): the runs once each, their learning curves, the failed configurations, trial counts by
state, compute time, and what the dashboard header says about the study."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from seqbench.bench.core.artifacts import PARAM, read_metrics
from seqbench.sweeps.table import Objective, objectives_of, outcomes

STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")
RETRIED = "RETRIED"  # state_counts' name for superseded FAIL attempts (the sweep summary says "retried")


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


def study_info(study: optuna.Study, storage_label: str) -> StudyInfo:
    ua = study.user_attrs
    spec = ua.get("spec") or {}
    params = list((spec.get("parameters") or {}).keys())
    for t in study.get_trials(deepcopy=False):  # a hand-made study without a spec: params from trials
        params += [k for k in t.params if k not in params]
    return StudyInfo(
        name=study.study_name,
        question=ua.get("question") or spec.get("question") or "",
        objectives=objectives_of(study),
        storage=storage_label,
        params=params,
        seqbench_version=ua.get("seqbench_version"),
        git_sha=ua.get("git_sha"),
        spec_path=ua.get("spec_path"),
        spec=spec,
        out_dir=ua.get("out_dir"),
    )


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
    out = failed[["trial", *params, "fail_reason"]].rename(
        columns=lambda c: c[len(PARAM) :] if c.startswith(PARAM) else c
    )
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
