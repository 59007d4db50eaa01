"""Optuna's own views (history, importances, parallel coordinates, Pareto front), drawn from the tidy table.

The table is turned back into an in-memory study (completed trials only, their Optuna values,
parameter distributions inferred from the values seen), so these views too are a pure function
of ``trials.csv``. A view that does not fit the study is skipped with the reason, never an error.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import optuna
import pandas as pd
import plotly.graph_objects as go
from optuna import visualization as vis
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.study import StudyDirection
from optuna.trial import TrialState

from seqbench.bench.core.artifacts import PARAM
from seqbench.sweeps.table import Objective

MIN_TRIALS_IMPORTANCE = 4  # fANOVA on fewer completed trials is noise


def _distribution(values: list[Any]) -> BaseDistribution:
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(nums) == len(values) and len(set(values)) > 1:
        lo, hi = min(nums), max(nums)
        if all(float(v).is_integer() for v in nums):
            return IntDistribution(int(lo), int(hi))
        return FloatDistribution(float(lo), float(hi), log=lo > 0 and hi / lo >= 100)
    return CategoricalDistribution(sorted(set(values), key=str))


def _plain(v: Any) -> Any:
    """numpy scalars -> Python; JSON-encoded lists (see table._param_value) stay strings."""
    return v.item() if hasattr(v, "item") else v


def study_from_table(df: pd.DataFrame, objectives: list[Objective]) -> optuna.Study:
    """An in-memory study holding the table's completed trials with their Optuna values."""
    params = [c for c in df.columns if c.startswith(PARAM)]
    trials = df.drop_duplicates("trial").sort_values("trial")
    done = trials[trials["state"] == "COMPLETE"]
    dists: dict[str, BaseDistribution] = {}
    for p in params:
        vals = [_plain(v) for v in done[p] if not (isinstance(v, float) and math.isnan(v))]
        if vals:
            dists[p] = _distribution(vals)
    # Objective.goal is Optuna's word for a direction ("minimize"), the enum's name in lower case
    study = optuna.create_study(directions=[StudyDirection[o.goal.upper()] for o in objectives])
    for _, t in done.iterrows():
        values = [float(t[o.trial_column]) for o in objectives]
        if not all(math.isfinite(v) for v in values):
            continue
        ps = {p[len(PARAM) :]: _plain(t[p]) for p in dists if not (isinstance(t[p], float) and math.isnan(t[p]))}
        ds = {p[len(PARAM) :]: dists[p] for p in dists if p[len(PARAM) :] in ps}
        ps = {k: (v if not isinstance(ds[k], IntDistribution) else int(v)) for k, v in ps.items()}
        study.add_trial(
            optuna.trial.create_trial(state=TrialState.COMPLETE, params=ps, distributions=ds, values=values)
        )
    return study


def _try(name: str, make: Callable[[], go.Figure]) -> tuple[str, go.Figure | str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning etc.
            fig = make()
        fig.update_layout(template="plotly_white")
        return name, fig
    except Exception as e:  # noqa: BLE001 - a view that cannot be drawn is skipped, with its reason
        return name, f"skipped: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def optuna_figures(df: pd.DataFrame, objectives: list[Objective]) -> list[tuple[str, go.Figure | str]]:
    """[(title, figure or 'skipped: reason')] for the Optuna views that fit this study."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = study_from_table(df, objectives)
    n = len(study.trials)
    varying = [k for k, d in _dists(study).items() if _varies(study, k)]
    multi = len(objectives) > 1
    names = [o.name for o in objectives]
    out: list[tuple[str, go.Figure | str]] = []
    if n == 0:
        return [("Optuna views", "skipped: no completed trial with a finite value")]
    for k, o in enumerate(objectives if multi else objectives[:1]):
        target = (lambda t, k=k: t.values[k]) if multi else None
        out.append(
            _try(
                f"Optimisation history ({o.name})",
                partial(vis.plot_optimization_history, study, target=target, target_name=o.name),
            )
        )
    if len(varying) < 2:
        out.append(("Parameter importances", f"skipped: needs >= 2 varying parameters (have {len(varying)})"))
    elif n < MIN_TRIALS_IMPORTANCE:
        out.append(("Parameter importances", f"skipped: needs >= {MIN_TRIALS_IMPORTANCE} completed trials (have {n})"))
    else:
        for k, o in enumerate(objectives):
            target = (lambda t, k=k: t.values[k]) if multi else None
            out.append(
                _try(
                    f"Parameter importances ({o.name})",
                    partial(vis.plot_param_importances, study, target=target, target_name=o.name),
                )
            )
    if varying:
        out.append(
            _try(
                "Parallel coordinates",
                lambda: vis.plot_parallel_coordinate(
                    study, target=(lambda t: t.values[0]) if multi else None, target_name=names[0]
                ),
            )
        )
    if multi:
        out.append(_try("Pareto front", lambda: vis.plot_pareto_front(study, target_names=names)))
    return out


def _dists(study: optuna.Study) -> dict[str, BaseDistribution]:
    d: dict[str, BaseDistribution] = {}
    for t in study.trials:
        d.update(t.distributions)
    return d


def _varies(study: optuna.Study, key: str) -> bool:
    return len({json.dumps(t.params.get(key), default=str) for t in study.trials}) > 1
