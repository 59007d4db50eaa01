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

``skip_solved: true`` saves the other side: a seed that solved a rung at one ``best_of`` point (in a trial
finished or still running) is not trained at the rung's other points, since its best there is already a
solve and a frontier reads only whether the best solves. The trial records it as ``solved_elsewhere``
(a ``solved-elsewhere`` row in the study table, never counted as skipped), so the rung's mean is over the
runs trained. The points of a rung train their seeds in turns rotated by the point's place
(``seed_order``: with 3 seeds and 2 rates, 0-1-2 and 1-2-0), so two workers on one rung start on
different seeds and each can skip what the other solved. Off by default: a claim that judges each seed at
its best of the rates on another metric needs every rate trained.

The spec::

    parameters:
      task.n_pairs: {values: [1, 2, 4, 8, 16]}   # the first key varies slowest: rungs in order
      optim.lr: {values: [0.003, 0.01]}
    ladder: {param: task.n_pairs, best_of: [optim.lr], skip_solved: true}

Pure Optuna bookkeeping: no torch.
"""

from __future__ import annotations

import itertools
import math
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
    skip_solved: bool = Field(
        False, description="a seed that solved a rung at one best_of point is not trained at the rung's other points"
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


def solved_elsewhere(
    trials: Sequence[FrozenTrial], ladder: LadderSpec, params: Mapping[str, Any], seed: int, number: int
) -> dict[str, Any] | None:
    """The ``best_of`` values at which ``seed`` solved ``params``' rung in another trial (finished or still
    running; not trial ``number`` itself, nor a retried attempt), or None: nowhere, or the ladder does not
    ``skip_solved``."""
    if not ladder.skip_solved or not ladder.best_of:
        return None
    fixed = {k: v for k, v in params.items() if k not in ladder.best_of}  # the rung and every other setting
    for t in trials:
        ua = t.user_attrs
        if t.number == number or ua.get("retried") or t.state not in (*FINISHED, TrialState.RUNNING):
            continue
        if any(not same_value(t.params.get(k), v) for k, v in fixed.items()):
            continue
        if seed in (ua.get("solved_seeds") or []):
            return {k: t.params.get(k) for k in ladder.best_of}
    return None


def seed_order(
    ladder: LadderSpec | None, grid: Mapping[str, Sequence[Any]], params: Mapping[str, Any], n: int
) -> list[int]:
    """The order (indices of the spec's ``n`` seeds) in which the grid point ``params`` trains them: the
    spec's, or, where the ladder has ``skip_solved``, rotated by the point's place among the rung's
    ``best_of`` points so that the points start on seeds spread evenly over the list."""
    if ladder is None or not ladder.skip_solved or not ladder.best_of:
        return list(range(n))
    place, points = 0, math.prod(len(grid[k]) for k in ladder.best_of)
    for k in ladder.best_of:
        place = place * len(grid[k]) + max(0, _index(grid[k], params[k]))
    start = place * n // points
    return [(j + start) % n for j in range(n)]
