"""Sweep specs: a YAML file that says what to vary, what to measure and how to search.

Close to W&B sweep configs::

    question: Does an LSTM bridge delays a tanh RNN cannot?   # shown by `seqbench list`
    base:                         # a RunConfig fragment shared by every trial
      task: {name: copy, n_symbols: 3, alphabet: 4}
      model: {d_model: 64}        # fields every swept model has
      train: {max_steps: 1200}
    method: grid                  # grid | tpe | random | nsga2
    metric: {name: val/acc, goal: maximize}      # or a list of them (multi-objective)
    parameters:                   # dotted RunConfig keys
      model.name: {values: [rnn, lstm]}
      task.delay: {values: [12, 40]}
      optim.lr: {distribution: log_uniform, min: 1.0e-4, max: 1.0e-2}   # not with grid
    per_model:                    # applied only to trials that choose that model
      lstm: {model.forget_bias: 1.0}
      transformer: {model.n_heads: 4, optim.lr: 3.0e-4}
    per_task:                     # the same for task.name
      adding: {task.length: 50}
    seeds: [0, 1, 2]              # replicates per configuration (or a count: 3)
    pruner: {name: median, warmup_steps: 200}   # none | median | hyperband
    trials: 24                    # budget; grid defaults to (and at most) its size
    timeout: 3600                 # seconds per worker before it stops starting trials
    ladder: {param: task.delay, best_of: [optim.lr]}   # grid: a seed failing a rung skips harder ones
    exclude:                      # grid: points left out (each entry: every point matching all its keys)
      - {model.name: rnn, task.delay: 40}

Comparing architectures is the common case, so ``model.name`` and ``task.name`` can be
swept. A swept name keeps the other fields of ``base.model`` / ``base.task``: put there
only the fields every chosen model (task) has, and the fields only one has under
``per_model.<name>`` (``per_task.<name>``), as dotted keys. A trial's config is composed
like a run's (``bench.config.compose``): ``base``, the swept parameters (names first), then
its model's and task's blocks, merged leaf by leaf.

Every grid point (for grid) or every corner of the search space (otherwise) is built into
a RunConfig when the spec loads (:func:`check_spec`), so a bad key, value or combination
fails before any training, one line per problem naming the field, like a bad run config does.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from seqbench.bench.config import DEFAULT_NAMES, Composed, chosen, compose, foreign_field, validate
from seqbench.bench.core.contract import TRAIN_TIME
from seqbench.bench.core.errors import UserError, did_you_mean, validation_problems
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import load_yaml, same_value, set_dotted
from seqbench.sweeps.ladder import LadderSpec

Scalar = bool | int | float | str | None
_NOT_SWEPT = ("seed", "out_dir", "run_id", "tracking")  # the runner owns these
_MAX_SEEDS = 1000  # replicates per configuration; a huge count is a typo, not a plan


class Metric(Section):
    name: str = Field(description="key of results.json `final`: val/<m>, test/<m> or time/train_s")
    goal: Literal["maximize", "minimize"] | None = Field(
        None, description="Optuna direction; default: the direction the task declares for the metric"
    )


class Param(Section):
    values: list[Scalar] | None = Field(None, min_length=1, description="the choices (grid: every one)")
    distribution: Literal["uniform", "log_uniform", "int_uniform"] | None = Field(
        None, description="sampled range for tpe/random/nsga2"
    )
    min: float | None = Field(None, description="lower bound of the distribution")
    max: float | None = Field(None, description="upper bound of the distribution")

    @model_validator(mode="after")
    def _one_kind(self) -> Param:
        if (self.values is None) == (self.distribution is None):
            raise ValueError(
                "give either values: [...] or distribution: uniform|log_uniform|int_uniform with min and max"
            )
        if self.distribution is not None:
            if self.min is None or self.max is None:
                raise ValueError(f"distribution {self.distribution} needs min and max")
            if self.min >= self.max:
                raise ValueError(f"min {self.min} must be below max {self.max}")
            if self.distribution == "log_uniform" and self.min <= 0:
                raise ValueError(f"log_uniform needs min > 0 (got {self.min})")
            if self.distribution == "int_uniform" and not (self.min.is_integer() and self.max.is_integer()):
                raise ValueError("int_uniform needs integer min and max")
        elif self.min is not None or self.max is not None:
            raise ValueError("min/max go with distribution:, not with values:")
        return self

    def corners(self) -> list[Any]:
        """Values that bound what a trial can get (all choices, or the two ends of the range)."""
        if self.values is not None:
            return list(self.values)
        if self.distribution == "int_uniform":
            return [int(self.min), int(self.max)]  # type: ignore[arg-type]
        return [self.min, self.max]


class Pruner(Section):
    name: Literal["none", "median", "hyperband"] = Field("none", description="Optuna pruner")
    warmup_steps: int = Field(
        0,
        ge=0,
        description="training steps before any trial can be pruned (median: n_warmup_steps; hyperband: min_resource)",
    )
    startup_trials: int = Field(4, ge=0, description="median: trials that must finish before pruning starts")
    reduction_factor: int = Field(3, ge=2, description="hyperband: keep 1/reduction_factor per rung")


class SweepSpec(Section):
    question: str = Field("", description="what the sweep answers (shown by `seqbench list` and reports)")
    base: dict[str, Any] = Field(default_factory=dict, description="RunConfig fragment shared by all trials")
    method: Literal["grid", "tpe", "random", "nsga2"] = Field("grid", description="search strategy")
    metric: list[Metric] = Field(
        default_factory=list, description="objective(s); default: the task's primary validation metric"
    )
    parameters: dict[str, Param] = Field(default_factory=dict, description="dotted RunConfig key -> choices")
    per_model: dict[str, dict[str, Any]] = Field(default_factory=dict, description="model name -> overrides")
    per_task: dict[str, dict[str, Any]] = Field(default_factory=dict, description="task name -> overrides")
    seeds: list[int] = Field(
        default_factory=lambda: [0], min_length=1, max_length=_MAX_SEEDS, description="replicates per config"
    )
    pruner: Pruner = Field(default_factory=Pruner, description="stop hopeless trials early")
    trials: int | None = Field(None, ge=1, description="budget; grid: the first N points (default all)")
    timeout: float | None = Field(None, gt=0, description="seconds a worker keeps starting trials")
    ladder: LadderSpec | None = Field(
        None, description="grid only: a parameter stepped easy to hard; a seed that fails a rung skips the harder ones"
    )
    exclude: list[dict[str, Scalar | list[Scalar]]] = Field(
        default_factory=list,
        description="grid only: points left out; an entry {dotted key: value or [values]} leaves out every "
        "grid point that matches all of its keys",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, d: Any) -> Any:
        if not isinstance(d, dict):
            return d
        d = dict(d)
        if isinstance(d.get("metric"), dict):
            d["metric"] = [d["metric"]]
        if isinstance(d.get("seeds"), int) and not isinstance(d.get("seeds"), bool):
            if not 1 <= d["seeds"] <= _MAX_SEEDS:
                raise ValueError(f"seeds: a count must be between 1 and {_MAX_SEEDS} (got {d['seeds']})")
            d["seeds"] = list(range(d["seeds"]))
        if isinstance(d.get("pruner"), str):
            d["pruner"] = {"name": d["pruner"]}
        return d

    @model_validator(mode="after")
    def _rules(self) -> SweepSpec:
        if self.method == "grid":
            for k, p in self.parameters.items():
                if p.values is None:
                    raise ValueError(
                        f"parameters.{k}: method grid needs values: [...], not a distribution; "
                        "use method tpe or random to sample a range"
                    )
            self._check_exclude()
            if self.trials is not None and self.trials > self.grid_size():
                raise ValueError(
                    f"trials: {self.trials} > the grid's {self.grid_size()} points; drop trials: to run the whole grid"
                )
        elif self.trials is None:
            raise ValueError(f"trials: method {self.method} needs a budget; set trials: N")
        elif self.exclude:
            raise ValueError(
                f"exclude: leaves out grid points; method {self.method} samples its parameters, so it has none "
                "(use method grid, or narrow the ranges)"
            )
        for sec in ("task", "model"):
            node = self.base.get(sec)
            if node is not None and not isinstance(node, (str, dict)):
                raise ValueError(
                    f"base.{sec}: give a {sec} name or a mapping with name: ... "
                    f"(got {type(node).__name__} {node!r:.40})"
                )
        if self.ladder is not None:
            if self.method != "grid":
                raise ValueError("ladder: needs method grid (its rungs are grid values, run easiest first)")
            keys = list(self.parameters)
            for k in (self.ladder.param, *self.ladder.best_of):
                if k not in self.parameters:
                    raise ValueError(f"ladder: {k} is not a grid parameter; choose from {', '.join(keys)}")
            if keys[0] != self.ladder.param:
                raise ValueError(
                    f"ladder.param: {self.ladder.param} must be the first key of parameters: (the grid varies it "
                    "slowest, so easier rungs run first)"
                )
            if self.ladder.skip_solved and not self.ladder.best_of:
                raise ValueError(
                    "ladder.skip_solved: needs best_of (without best_of parameters a rung trains each seed once, "
                    "so there is no other point to skip)"
                )
        if len(self.metric) > 1 and self.pruner.name != "none":
            raise ValueError("pruner: Optuna cannot prune multi-objective studies; set pruner: none")
        if len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError(f"seeds: replicates need distinct seeds >= 0 (got {self.seeds})")
        for k in self.parameters:
            if k.split(".")[0] in _NOT_SWEPT:
                raise ValueError(
                    f"parameters.{k}: set by the runner (seeds come from seeds:, "
                    "out_dir/tracking from the command line); not sweepable"
                )
            if k in ("model", "task"):
                raise ValueError(f"parameters.{k}: sweep {k}.name to switch the {k}")
        for block in ("per_model", "per_task"):
            for name, ovs in getattr(self, block).items():
                for k in ovs:
                    if k.split(".")[0] in ("seed", "out_dir", "run_id"):
                        raise ValueError(
                            f"{block}.{name}.{k}: set by the runner (seeds come from seeds:, "
                            "out_dir from the command line); not settable per block"
                        )
                    if k in ("model", "task") or k.endswith(".name") and k.count(".") == 1:
                        raise ValueError(f"{block}.{name}.{k}: a block cannot switch the {k.split('.')[0]}")
                    if k in self.parameters:
                        raise ValueError(f"{block}.{name}.{k}: also swept in parameters; keep one")
        return self

    def _check_exclude(self) -> None:
        """Each ``exclude:`` entry names grid parameters and their values; the grid keeps a point; no ladder."""
        if not self.exclude:
            return
        if self.ladder is not None:
            raise ValueError(
                "exclude: not with ladder: (a seed skips a harder rung only when it failed every point of an "
                "easier one, which a left-out point would never let it do); drop one of them"
            )
        for i, entry in enumerate(self.exclude):
            if not entry:
                raise ValueError(f"exclude[{i}]: empty; give {{dotted key: value}} of the grid points to leave out")
            for k, v in entry.items():
                if k not in self.parameters:
                    raise ValueError(
                        f"exclude[{i}].{k}: not a grid parameter;{did_you_mean(k, list(self.parameters))} "
                        f"choose from {', '.join(self.parameters)}"
                    )
                values = self.parameters[k].values or []
                for x in _as_list(v):
                    if not any(same_value(y, x) for y in values):
                        raise ValueError(f"exclude[{i}].{k}: {x!r} is not among its values {values}")
        if not self._points():
            raise ValueError("exclude: leaves out every grid point; keep at least one")

    def excluded(self, point: dict[str, Any]) -> bool:
        """Whether ``exclude:`` leaves out the grid point ``point`` (an entry matching all of its keys)."""
        return any(
            all(any(same_value(point.get(k), x) for x in _as_list(v)) for k, v in entry.items())
            for entry in self.exclude
        )

    # -- the search space -----------------------------------------------------------------
    def grid_size(self) -> int:
        """The grid's points, those ``exclude:`` leaves out not counted (``trials:`` not applied)."""
        return len(self._points())

    def left_out(self) -> int:
        """How many grid points ``exclude:`` leaves out (0 without it, or for a sampler)."""
        if not self.exclude:
            return 0
        return math.prod(len(p.values or ()) for p in self.parameters.values()) - len(self._points())

    def _points(self) -> list[dict[str, Any]]:
        keys = list(self.parameters)
        points = [
            dict(zip(keys, combo)) for combo in itertools.product(*(self.parameters[k].values or [] for k in keys))
        ]
        return [p for p in points if not self.excluded(p)] if self.exclude else points

    def grid(self) -> list[dict[str, Any]]:
        """Grid points in a fixed order (the first key varies slowest), each {dotted key: value}, without
        those ``exclude:`` leaves out; the first ``trials`` of them when the spec sets it."""
        points = self._points()
        return points[: self.trials] if self.trials else points

    def budget(self) -> int:
        return len(self.grid()) if self.method == "grid" else int(self.trials or 0)

    def metrics(self) -> list[Metric]:
        """The objectives with their goals (the task's primary validation metric when the spec names
        none; a metric without ``goal`` gets the direction its task declares)."""
        if not self.metric:
            return [_primary_metric(self)]
        return [m if m.goal else Metric(name=m.name, goal=_declared_goal(self, m.name)) for m in self.metric]

    def choices(self, section: str) -> list[str]:
        """Every task/model name a trial can get."""
        key = f"{section}.name"
        if key in self.parameters:
            return [str(v) for v in self.parameters[key].corners()]
        node = self.base.get(section)
        if isinstance(node, str):
            return [node]
        return [str((node or {}).get("name", DEFAULT_NAMES[section]))]

    def compose(self, params: dict[str, Any], seed: int | None = None) -> Composed:
        """One trial's config before validation: base, then params, then its model's and task's
        blocks, composed like every config (``bench.config.compose``). A base field the trial's
        model (task) lacks comes back in ``dropped``: the spec refuses it (it belongs in a block)."""
        composed = compose(self.base, params, per_model=self.per_model, per_task=self.per_task)
        if seed is not None:
            composed.data["seed"] = seed
        return composed

    def config_dict(self, params: dict[str, Any], seed: int | None = None) -> dict[str, Any]:
        """The RunConfig dict of one trial (:meth:`compose`'s data)."""
        return self.compose(params, seed).data

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON; ``exclude`` only when set, so a spec without it (and its study name, and a study
        stored before the field existed) reads as before."""
        d = self.model_dump(mode="json")
        if not d.get("exclude"):
            d.pop("exclude", None)
        return d


def _as_list(v: Any) -> list[Any]:
    """An ``exclude:`` entry's value: one grid value or a list of them."""
    return v if isinstance(v, list) else [v]


class MixedPrimaryMetrics(UserError):
    """The swept tasks have different primary metrics, so the spec must name its ``metric:``."""


def _primary_metric(spec: SweepSpec) -> Metric:
    facts = {TASKS.get(t).config_cls.facts for t in spec.choices("task") if t in TASKS}
    prim = {(f.primary, f.primary_goal) for f in facts}
    if len(prim) != 1:
        raise MixedPrimaryMetrics("metric: the swept tasks have different primary metrics; set metric: {name, goal}")
    name, goal = prim.pop()
    return Metric(name=f"val/{name}", goal=goal.optuna)


def _declared_goal(spec: SweepSpec, name: str) -> str:
    tasks = [t for t in spec.choices("task") if t in TASKS]
    for t in tasks:
        if name not in allowed_metrics(t):
            raise UserError(
                f"metric.name: {name!r} is not reported by task {t!r}; choose from {', '.join(allowed_metrics(t))}"
            )
    goals = {TASKS.get(t).config_cls.facts.goal(name).optuna for t in tasks}
    if len(goals) != 1:
        raise UserError(f"metric.goal: the swept tasks disagree on the direction of {name}; set goal: explicitly")
    return goals.pop()


# -- the check before any training ----------------------------------------------------------
# Every grid point (for grid) or every corner of the search space (otherwise) composed and built into a
# RunConfig, so a bad key, value or combination fails one line per problem naming the field, and each
# metric must be one the swept tasks report (:func:`parse_spec` calls :func:`check_spec`).

_CORNER_CAP = 4096  # search-space corners validated jointly; beyond this, one parameter at a time


def allowed_metrics(task: str) -> list[str]:
    """Objective keys a run of ``task`` reports in results.json ``final``."""
    return TASKS.get(task).config_cls.facts.keys("val", "test") + [TRAIN_TIME.name]


def check_spec(spec: SweepSpec) -> None:
    """Build the RunConfig of every grid point / search-space corner; UserError naming every culprit."""
    problems = []
    for block, reg, section in (("per_model", MODELS, "model"), ("per_task", TASKS, "task")):
        names = spec.choices(section)
        for name in getattr(spec, block):
            if name not in reg:
                problems.append(
                    f"{block}.{name}: unknown {section};{did_you_mean(name, reg.names())} "
                    f"choose from {', '.join(reg.names())}"
                )
            elif name not in names:
                problems.append(
                    f"{block}.{name}: {section} {name!r} is never chosen ({section}.name takes {', '.join(names)})"
                )
    for section, reg in (("model", MODELS), ("task", TASKS)):
        for name in spec.choices(section):
            if name not in reg:
                where = f"parameters.{section}.name" if f"{section}.name" in spec.parameters else f"base.{section}"
                problems.append(
                    f"{where}: unknown {section} {name!r};{did_you_mean(name, reg.names())} "
                    f"choose from {', '.join(reg.names())}"
                )
    if problems:
        raise UserError(*problems)
    points = spec.grid() if spec.method == "grid" else _corners(spec)
    found: dict[str, list[str]] = {}  # problem -> the points it shows at
    for point in points:
        for p in _problems(spec, point):
            found.setdefault(p, []).append(" ".join(f"{k}={v}" for k, v in point.items()) or "base")
    # a problem at every point (a base or swept key) is the spec's; one at some points names the first
    problems = [p if len(at) == len(points) else f"with {at[0]}: {p}" for p, at in found.items()]
    if problems:
        raise UserError(*problems)
    metrics = spec.metrics()
    for t in spec.choices("task"):
        allowed = allowed_metrics(t)
        for m in metrics:
            if m.name not in allowed:
                raise UserError(
                    f"metric.name: {m.name!r} is not reported by task {t!r};"
                    f"{did_you_mean(m.name, allowed)} choose from {', '.join(allowed)}"
                )
            if m.name.startswith("test/") and not spec.base.get("eval", {}).get("test", True):
                raise UserError(f"metric.name: {m.name} needs the test split; drop eval.test=false from base")
    if spec.pruner.name != "none" and not metrics[0].name.startswith(("val/", "test/")):
        raise UserError(
            f"pruner: pruning watches a validation curve; {metrics[0].name} has none; "
            "set pruner: none or use a val/ metric"
        )


def _corners(spec: SweepSpec) -> list[dict[str, Any]]:
    keys = list(spec.parameters)
    sizes = [len(spec.parameters[k].corners()) for k in keys]
    total = 1
    for s in sizes:
        total *= s
    if total <= _CORNER_CAP:
        return [dict(zip(keys, c)) for c in itertools.product(*(spec.parameters[k].corners() for k in keys))]
    # too many jointly: each parameter's corners with every model/task choice
    names = {k: spec.parameters[k].corners() for k in ("model.name", "task.name") if k in spec.parameters}
    base_pts = [dict(zip(names, c)) for c in itertools.product(*names.values())] or [{}]
    return [{**b, k: v} for b in base_pts for k in keys if k not in names for v in spec.parameters[k].corners()]


def _problems(spec: SweepSpec, point: dict[str, Any]) -> list[str]:
    """What is wrong with the RunConfig of one point (its first seed), one line per problem."""
    composed = spec.compose(point, seed=spec.seeds[0])
    problems = [f"{key}: unknown field{unknown_field_hint(composed.data, key)}" for key in composed.dropped]
    try:
        validate(composed.data, blocks_hint=True)
    except UserError as e:
        problems += e.problems
    return problems


def unknown_field_hint(d: dict[str, Any], key: str) -> str:
    """What follows "unknown field" for a dotted key the composition dropped: the model or task that has it."""
    section, field = key.split(".", 1)
    return foreign_field(section, chosen(d, section), field, blocks_hint=True) or ""


# -- loading --------------------------------------------------------------------------------


def load_spec(path: str | Path, overrides: list[str] | tuple[str, ...] = (), trials: int | None = None) -> SweepSpec:
    """Read, validate and check a spec; ``overrides`` (dotted key=value) change its ``base``."""
    return resolve_spec(path, overrides, trials)[0]


def resolve_spec(
    path: str | Path, overrides: list[str] | tuple[str, ...] = (), trials: int | None = None
) -> tuple[SweepSpec, Composed | None]:
    """:func:`load_spec`, and how the overrides were composed into the base (None without any).

    Overrides compose into ``base`` the way ``seqbench run`` composes them into a config file
    (``bench.config.compose``: choices first, in any order). One the spec itself sets for its
    trials (a swept key, or a key of a ``per_model``/``per_task`` block) would be overwritten
    there, so it is refused instead.
    """
    raw = load_yaml(path)
    composed = None
    if overrides:
        base = raw.get("base")
        composed = compose(base if isinstance(base, dict) else {}, overrides)
        _refuse_spec_owned(raw, composed.keys)
        raw["base"] = composed.data
    if trials is not None:
        raw["trials"] = trials
    return parse_spec(raw, source=str(path)), composed


def _refuse_spec_owned(raw: dict[str, Any], keys: list[str]) -> None:
    params = p if isinstance(p := raw.get("parameters"), dict) else {}
    for key in keys:
        if key in params:
            raise UserError(f"{key}: the spec sweeps it (parameters.{key}); drop the override or edit the spec")
        for block in ("per_model", "per_task"):
            blocks = b if isinstance(b := raw.get(block), dict) else {}
            for name, ovs in blocks.items():
                if isinstance(ovs, dict) and key in ovs:
                    raise UserError(
                        f"{key}: {block}.{name} sets it for {name} trials; drop the override or edit the spec"
                    )


def parse_spec(raw: dict[str, Any], source: str = "") -> SweepSpec:
    pre = f"{source}: " if source else ""
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as e:
        problems = validation_problems(e, tagged=frozenset(), allowed_fields=_spec_fields)
        raise UserError(*(pre + p for p in problems)) from None
    try:
        check_spec(spec)
    except UserError as e:
        raise e.prefixed(pre) from None
    return spec


def _spec_fields(loc: tuple) -> list[str] | None:
    classes: dict[tuple, type[BaseModel]] = {(): SweepSpec, ("pruner",): Pruner, ("ladder",): LadderSpec}
    if len(loc) == 2 and loc[0] == "parameters":
        return list(Param.model_fields)
    if len(loc) == 2 and loc[0] == "metric" or loc == ("metric",):
        return list(Metric.model_fields)
    cls = classes.get(tuple(loc))
    return list(cls.model_fields) if cls else None


def trial_config(spec: SweepSpec, params: dict[str, Any], seed: int, extra: dict[str, Any]):
    """The validated RunConfig of one seed of one trial; ``extra`` are runner-owned dotted keys."""
    composed = spec.compose(params, seed=seed)
    if composed.dropped:  # check_spec refused these when the spec loaded; a trial never loses a field
        raise UserError(*(f"{k}: unknown field{unknown_field_hint(composed.data, k)}" for k in composed.dropped))
    for k, v in extra.items():
        set_dotted(composed.data, k, v)
    return validate(composed.data, typed=[*composed.typed, *extra])
