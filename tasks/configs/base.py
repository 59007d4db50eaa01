"""The Task interface: what a task declares to models and to the training loop.

A task owns its data (generated or loaded), its loss, its metrics and its memoryless
baseline. The Lightning module only talks to tasks through this interface, so a new
task is one new file plus one import in ``tasks/__init__.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.bench.core.schema import Section


class TaskConfig(Section):
    """Fields every task has. Subclasses add ``name: Literal[...]``, their knobs and ``facts``."""

    name: str
    # The task's facts, declared once per class: the config validator (model compatibility, early
    # stopping), sweeps (metric names, default objective) and ``Task.build_spec`` read them.
    facts: ClassVar[TaskFacts]

    def seq_len(self) -> int:
        """Training sequence length (input side)."""
        raise NotImplementedError

    def target_len(self) -> int | None:
        """Decoder positions of one training sequence when every target has the same length (a seq2seq
        task with a fixed layout); None for any other task (FLOP counting reads it: ``bench.training.flops``)."""
        return None

    def min_length(self) -> tuple[int, str]:
        """The shortest sequence the task can build (an ``eval.lengths`` entry below it is refused before
        training) and why, in words: ``(21, "10 symbols, a delay of at least 1 step and 10 recall steps")``."""
        return 1, "one step"

    def check_length(self, n: int) -> None:
        """Refuse an ``eval.lengths`` entry shorter than ``min_length`` (one line: the smallest and why)."""
        shortest, why = self.min_length()
        if n < shortest:
            raise ValueError(
                f"eval.lengths: {n} is shorter than task {self.name!r} can build: its shortest "
                f"sequence is {shortest} ({why}); use lengths >= {shortest}"
            )


class TokenTaskConfig(TaskConfig):
    """Per-step classification scored by accuracy on the answer positions (copy, recall, ...)."""

    facts = TaskFacts(OutputKind.TOKENS, causal=True, metrics=(MetricDef("acc", Goal.MAX),), primary="acc")


def positive_int(description: str, default: int) -> Any:
    """A strictly positive integer field with its one-line reason."""
    return Field(default, ge=1, description=description)


def metric_goal_of(metric: str, tasks: list[str]) -> str:
    """ "maximize" or "minimize" for a metric key, as the runs' tasks declare it (``TaskFacts``; time:
    minimize). A metric none of the tasks declares reads "maximize"; callers refuse it by name. The
    tasks must be registered (``seqbench.bench.config`` imports them all and re-exports this)."""
    if metric.startswith("time/"):
        return "minimize"
    for t in tasks:
        if t not in TASKS:
            continue
        try:
            return TASKS.get(t).config_cls.facts.goal(metric).optuna
        except KeyError:
            continue
    return "maximize"
