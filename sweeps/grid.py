"""One grid study from settings: what every trial shares, the axes, the seeds and the objective become the
validated, typed ``SweepSpec`` (``spec.py``) that ``sweep()`` runs, with the same spec as its YAML reads.

``seqbench compare`` (a comma list is an axis), ``seqbench probe`` (a probe's ladder x learning rates, per
model) and ``seqbench verify`` (a claim's profile) each read their own words; this module is where those
words become a spec, the one way all three reach the runner:

- :func:`grid_study` takes the pieces: dotted settings for the base (composed as ``run`` composes its
  overrides: choices first, a mapping as a leaf), the axes (the first varies slowest, so a ladder's rungs
  go first), the seeds (a count or a list), the metric (a name gets the direction the tasks declare; none:
  the tasks' primary validation metric, written out so the YAML says what is optimised), the question,
  ``per_model``/``per_task`` blocks and a ladder;
- :func:`grid_of` takes a spec as a file writes it (a claim's resolved profile) as it is;
- both give a :class:`GridStudy`: the typed spec, its YAML (keys in one order, so the same settings write
  the same file) and its study name, a digest of what makes the study (the spec without budget and prose,
  ``study.comparable``), so the same settings, in any order, continue the same study.

The YAML a command writes beside its study is provenance: ``seqbench sweep THAT.yaml --study NAME`` loads
it as the same spec and continues the study.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from seqbench.bench.config import DEFAULT_NAMES, compose, metric_goal_of
from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.settings import parse_value
from seqbench.sweeps.spec import SweepSpec, parse_spec
from seqbench.sweeps.study import comparable

# a spec's keys in the order its YAML is written; a key not here (a claim's trials:, pruner:) follows them
ORDER = ("question", "base", "method", "metric", "parameters", "per_model", "per_task", "seeds", "ladder")
Blocks = Mapping[str, Mapping[str, Any]]  # per_model / per_task: name -> {dotted key: value}


class NotAGrid(UserError):
    """The spec's ``method:`` is not ``grid``: a grid study runs every configuration of its grid."""


# -- words -> values ---------------------------------------------------------------------------


def values_of(key: str, text: str) -> list[Any]:
    """The value of ``key=text``, or its comma list's values (a YAML list or mapping stays one value)."""
    if text.strip().startswith(("[", "{")):
        return [parse_value(text)]
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise UserError(f"{key}: empty value in {text!r}; give key=a,b,c")
    values = [parse_value(p) for p in parts]
    if len({json.dumps(v, sort_keys=True, default=str) for v in values}) != len(values):
        raise UserError(f"{key}: a value repeats in {text!r}; list each once")
    return values


def seeds_of(text: str) -> list[int] | int:
    """``seeds=3`` (a count: the spec checks its range) or ``seeds=0,1,2`` (the seeds themselves)."""
    values = values_of("seeds", text)
    if len(values) == 1 and isinstance(values[0], int) and not isinstance(values[0], bool):
        return values[0]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UserError(f"seeds: give a count (seeds=3) or distinct integers (seeds=0,1,2), got {text!r}")
    return values


# -- the study ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GridStudy:
    """A grid study's spec: typed (what ``sweep()`` runs) and as its YAML reads (what is written beside it)."""

    spec: SweepSpec  # validated: every grid point's RunConfig built
    raw: dict[str, Any]  # the same spec as its YAML reads (a seed count stays a count)

    def name(self, prefix: str) -> str:
        """``<prefix><digest>`` of what makes the study: equal specs give the same name."""
        return study_name(prefix, self.spec)

    def yaml(self, name: str, notes: Sequence[str] = (), command: str = "compare") -> str:
        """The spec's YAML, headed by the command that wrote it and how to continue its study, and ``notes``."""
        head = [
            f"# written by seqbench {command}; `seqbench sweep THIS.yaml --study {name}` continues the same study",
            *(f"# {n}" for n in notes),
        ]
        return "\n".join(head) + "\n" + yaml.safe_dump(self.raw, sort_keys=False, default_flow_style=None)

    def write(self, out_dir: str | Path, name: str, notes: Sequence[str] = (), command: str = "compare") -> Path:
        """Write :meth:`yaml` to ``<out_dir>/specs/<name>.yaml`` (atomically) and return that path."""
        path = Path(out_dir) / "specs" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.yaml(name, notes, command))
        return path


def study_name(prefix: str, spec: SweepSpec) -> str:
    """``<prefix>`` and a digest of ``spec`` without budget and prose (``study.comparable``): the values of a
    parameter in any order, or the spec loaded back from its YAML, give the same name."""
    canon = comparable(spec.to_dict())
    return prefix + hashlib.sha1(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:10]


def grid_study(
    settings: Mapping[str, Any],
    axes: Mapping[str, Sequence[Any]],
    seeds: Sequence[int] | int,
    *,
    metric: str | None = None,
    goal: Literal["maximize", "minimize"] | None = None,
    question: str = "",
    per_model: Blocks | None = None,
    per_task: Blocks | None = None,
    ladder: str | None = None,
    best_of: Sequence[str] | None = None,
    skip_solved: bool = False,
    source: str = "",
) -> GridStudy:
    """The grid study of ``settings`` ({dotted key: value} every trial shares) x ``axes`` ({dotted key:
    values}, the first varying slowest) on ``seeds`` (a count or the seeds).

    ``metric``: the objective's name, its goal ``goal`` else the one the tasks declare; None: the tasks'
    primary validation metric (``MixedPrimaryMetrics`` when they differ), written into the spec. ``ladder``:
    the axis whose values go from easy to hard (the first axis), a seed judged at its best of ``best_of``
    (default: every other axis); ``skip_solved``: a seed that solved a rung at one of those is not trained at
    the others (``sweeps/ladder.py``). ``source`` names the spec in an error (``compare``, ``probe recall x lstm``).
    """
    params = {k: {"values": list(v)} for k, v in axes.items()}
    raw: dict[str, Any] = {
        "question": question,
        "base": compose({}, settings).data,  # as run composes its overrides: choices first, mappings as leaves
        "method": "grid",
        "parameters": params,
        **({"per_model": dict(per_model)} if per_model else {}),
        **({"per_task": dict(per_task)} if per_task else {}),
        "seeds": seeds if isinstance(seeds, int) else list(seeds),
    }
    if metric is not None:  # an unknown metric gets some goal here; the spec check refuses it by name
        raw["metric"] = {"name": metric, "goal": goal or metric_goal_of(metric, _tasks(raw["base"], axes))}
    if ladder is not None:
        others = [k for k in params if k != ladder]
        raw["ladder"] = {"param": ladder, "best_of": list(others if best_of is None else best_of)}
        if skip_solved:  # written only when set: every other spec, and its study name, as before
            raw["ladder"]["skip_solved"] = True
    study = grid_of(raw, source=source)
    if metric is not None:
        return study
    m = study.spec.metrics()[0]  # written out, so the YAML says what is optimised
    with_metric = _ordered({**study.raw, "metric": {"name": m.name, "goal": m.goal}})
    return GridStudy(SweepSpec.model_validate(with_metric), with_metric)  # checked above: the same grid


def grid_of(raw: Mapping[str, Any], *, source: str = "") -> GridStudy:
    """The grid study of a spec as a file writes it (a claim's resolved profile): validated and checked
    (``spec.parse_spec``: every grid point's RunConfig built), its keys in the YAML's order; NotAGrid when
    its ``method:`` is not grid."""
    ordered = _ordered(raw)
    spec = parse_spec(ordered, source=source)
    if spec.method != "grid":
        raise NotAGrid(
            f"method: a grid study runs every configuration of its grid; use method: grid (not {spec.method})"
        )
    return GridStudy(spec, ordered)


def _ordered(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: raw[k] for k in ORDER if k in raw}, **{k: v for k, v in raw.items() if k not in ORDER}}


def _tasks(base: Mapping[str, Any], axes: Mapping[str, Sequence[Any]]) -> list[str]:
    """The task names the study's trials can get (the swept ones, else the base's), as ``SweepSpec.choices``."""
    if "task.name" in axes:
        return [str(v) for v in axes["task.name"]]
    node = base.get("task")
    return [str(node if isinstance(node, str) else (node or {}).get("name", DEFAULT_NAMES["task"]))]
