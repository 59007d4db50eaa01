"""Adding problem (Hochreiter & Schmidhuber 1997; Le, Jaitly & Hinton 2015).

Worked example (length=6): each step is (value, marker)::

    value : 0.31 0.72 0.05 0.90 0.44 0.18
    marker:   0    1    0    0    1    0      -> target 0.72 + 0.44 = 1.16

One marker falls in the first half, one in the second half, so the answer depends on
inputs up to ``length`` steps before the end. Loss and metric: mean squared error.

Memoryless baseline: always answer 1.0 (the mean of the sum of two U(0,1)), MSE equal
to the variance of that sum, 2/12 = 1/6 ~ 0.1667 (a widely copied README says 0.1767;
that is wrong). Solved: ``val/mse < 0.01`` (6% of the baseline).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TaskConfig

SOLVED_MSE = 0.01


@TASKS.config("adding")
class AddingConfig(TaskConfig):
    """Adding problem: regress the sum of the two marked values in a long sequence."""

    name: Literal["adding"] = "adding"
    facts = TaskFacts(OutputKind.REGRESSION, causal=True, metrics=(MetricDef("mse", Goal.MIN),), primary="mse")

    length: int = Field(100, ge=4, description="sequence length T; markers fall in each half")

    def seq_len(self) -> int:
        return self.length

    def min_length(self) -> tuple[int, str]:
        return 2, "one marked number in each half"
