"""Shared by the verify tests (tests/sweeps/claims/test_verify*.py): a study table over rnn and gru at two lengths as
``sweeps.table`` builds it, a rule with defaults, and a table in which gru learns."""

from __future__ import annotations

import math

import pandas as pd

from seqbench.sweeps.claims.schema import Rule
from tests.sweeps.claims.judge_support import run_row

SWEPT = {"model.name": ["rnn", "gru"], "task.length": [50, 100]}


def table(values: dict[tuple[str, int], list[float | None]], baseline: float = 1 / 6) -> pd.DataFrame:
    """A study table as sweeps.table builds it: one row per run; None = a diverged seed."""
    rows = []
    for (model, length), per_seed in values.items():
        for seed, v in enumerate(per_seed):
            rows.append(
                run_row(
                    len(rows),
                    seed,
                    {"model.name": model, "task.length": length},
                    {"val/mse": math.nan if v is None else v},
                    run_id=f"{model}{length}s{seed}",
                    status="diverged" if v is None else "completed",
                    **{"baseline.val/mse": baseline},
                )
            )
    return pd.DataFrame(rows)


def rule(**kw) -> Rule:
    return Rule.model_validate({"name": "r", "metric": "val/mse", **kw})


GOOD = {
    ("gru", 50): [0.001, 0.002, 0.0015],
    ("gru", 100): [0.003, 0.004, 0.002],
    ("rnn", 50): [0.16, 0.17, 0.165],
    ("rnn", 100): [0.05, 0.17, 0.12],
}
