"""The Task interface: what a task declares to models and to the training loop.

A task owns its data (generated or loaded), its loss, its metrics and its memoryless
baseline. The Lightning module only talks to tasks through this interface, so a new
task is one new file plus one import in ``tasks/__init__.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.bench.core.schema import Section


class TaskConfig(Section):
    """Fields every task has. Subclasses add ``name: Literal[...]``, their knobs and ``facts``."""

    name: str
    # The task's facts, declared once per class: the config validator (model compatibility, early
    # stopping), sweeps (metric names, default objective) and ``Task.build_spec`` read them.
    facts: ClassVar[TaskFacts]
    # A plug-in declared without torch (``seqbench.plugin``): the Task class, "pkg.module:Class", imported when
    # the task is built; None for the shipped tasks and a plug-in registered by its class.
    implementation: ClassVar[str | None] = None

    def seq_len(self) -> int:
        """Training sequence length (input side): the longest training sequence's positions."""
        raise NotImplementedError

    def train_lengths(self) -> tuple[int, int] | None:
        """``(shortest, longest)`` problem lengths the training batches draw from, one length per batch
        (``LengthRangeConfig``); None for a task trained at one length (``seq_len``)."""
        return None

    def positions(self, n: int) -> int:
        """Input positions of a sequence of problem length ``n`` (an ``eval.lengths`` entry); the
        identity where the length is counted in positions (every task but those whose answer
        occupies positions of its own, e.g. ``duplicate_string``)."""
        return n

    def mean_train_positions(self) -> float:
        """Input positions of an average training sequence: ``seq_len`` at one length, the mean of
        ``positions`` over the drawn range otherwise (throughput counts tokens with it)."""
        r = self.train_lengths()
        if r is None:
            return float(self.seq_len())
        return sum(self.positions(n) for n in range(r[0], r[1] + 1)) / (r[1] - r[0] + 1)

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


class LengthRangeConfig(TokenTaskConfig):
    """A token task whose training batches each draw a problem length uniformly from
    ``[length_min, length]`` (Delétang et al. 2023, Sec. 3: train on lengths 1-40, test on 41-500):
    the length-generalisation protocol. Validation and the final test at the training length draw
    the same way; an ``eval.lengths`` entry is one fixed length. ``length_min = length`` trains at
    one length."""

    length: int = Field(40, ge=1, description="longest training problem length (Delétang: 40)")
    length_min: int = Field(
        1, ge=1, description="shortest training problem length; each batch draws one in [length_min, length]"
    )

    def seq_len(self) -> int:
        return self.positions(self.length)

    def train_lengths(self) -> tuple[int, int] | None:
        return (self.length_min, self.length)

    @model_validator(mode="after")
    def _range(self) -> LengthRangeConfig:
        shortest, why = self.min_length()
        if self.length_min > self.length:
            raise ValueError(
                f"task.length_min: {self.length_min} exceeds task.length={self.length}; the training range "
                "[length_min, length] would be empty"
            )
        if self.length_min < shortest:
            raise ValueError(
                f"task.length_min: {self.length_min} is shorter than task {self.name!r} can build: its "
                f"shortest sequence is {shortest} ({why}); use task.length_min >= {shortest}"
            )
        return self


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
