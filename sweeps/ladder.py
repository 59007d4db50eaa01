"""A ladder in a grid sweep: one parameter whose values go from easy to hard (``ladder:`` in a spec).

A seed that fails every run of a rung cannot move its frontier by solving a harder one (a frontier is
the hardest rung solved with every easier rung solved, ``sweeps/frontier.py``), so it is not trained on
the harder rungs: the trial records it as skipped (``skipped`` in its user attrs, a ``skipped`` row in
the study table) and a trial whose every seed was skipped is PRUNED. A rung counts as failed by a seed
once, at every grid point of that rung sharing the trial's other parameters (all but the ladder and the
``best_of`` ones, e.g. the learning rates a seed is judged at its best of), the seed's run finished
without meeting the task's ``solved`` criterion (a diverged run included) or was itself skipped; a seed
whose run did not finish (an error, a killed worker) has not failed the rung. A rung still running is
not failed yet, so a parallel worker may train a seed a rung too far: cost, never a wrong frontier.

The spec::

    parameters:
      task.n_pairs: {values: [1, 2, 4, 8, 16]}   # the first key varies slowest: rungs in order
      optim.lr: {values: [0.003, 0.01]}
    ladder: {param: task.n_pairs, best_of: [optim.lr]}

Pure Optuna bookkeeping: no torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from optuna.trial import FrozenTrial, TrialState
from pydantic import Field

from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import same_value

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class LadderSpec(Section):
    param: str = Field(description="the grid parameter whose values go from easy to hard, in the order given")
    best_of: list[str] = Field(
        default_factory=list,
        description="grid parameters a seed is judged at its best of (it fails a rung only if it fails at every one)",
    )


def failed_rung(
    trials: Sequence[FrozenTrial],
    ladder: LadderSpec,
    grid: Mapping[str, Sequence[Any]],
    params: Mapping[str, Any],
    seed: int,
) -> Any | None:
    """The easiest rung below ``params``' that ``seed`` failed (every grid point of it finished, none
    solved by the seed), or None. ``grid``: each grid parameter's values; ``trials``: the study's."""
    rungs = list(grid[ladder.param])
    here = next(i for i, v in enumerate(rungs) if same_value(v, params[ladder.param]))
    fixed = {k: v for k, v in params.items() if k != ladder.param and k not in ladder.best_of}
    points = set(itertools.product(*(range(len(grid[k])) for k in ladder.best_of)))
    for rung in rungs[:here]:
        failed: set[tuple[int, ...]] = set()  # best_of points where the seed ran (or was skipped) unsolved
        solved = False
        for t in trials:
            ua = t.user_attrs
            if t.state not in FINISHED or ua.get("retried") or not same_value(t.params.get(ladder.param), rung):
                continue
            if any(not same_value(t.params.get(k), v) for k, v in fixed.items()):
                continue
            solved = solved or seed in (ua.get("solved_seeds") or [])
            if seed in (ua.get("unsolved_seeds") or []) or seed in (ua.get("skipped") or []):
                failed.add(tuple(_index(grid[k], t.params.get(k)) for k in ladder.best_of))
        if not solved and points <= failed:
            return rung
    return None


def _index(values: Sequence[Any], v: Any) -> int:
    return next((i for i, x in enumerate(values) if same_value(x, v)), -1)
