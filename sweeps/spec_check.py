"""A sweep spec checked before any training (``sweeps.spec.parse_spec`` calls ``check_spec``): every grid
point (for grid) or every corner of the search space (otherwise) is composed and built into a RunConfig,
so a bad key, value or combination fails one line per problem naming the field, and each metric must be
one the swept tasks report.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from seqbench.bench.config import chosen, foreign_field, validate
from seqbench.bench.core.contract import TRAIN_TIME
from seqbench.bench.core.errors import UserError, did_you_mean
from seqbench.bench.core.registry import MODELS, TASKS

if TYPE_CHECKING:  # the spec module imports this one to check what it parsed
    from seqbench.sweeps.spec import SweepSpec

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
