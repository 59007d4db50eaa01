"""``seqbench probe``'s plan, before anything trains: the settings' words -> the models of the card
(``model=NAME`` groups, comma lists as products) and what every run shares -> one grid study per probe x
model (``sweeps.grid``, the builder ``compare`` and ``verify`` use too), named by a digest of its spec
(``bench/commands/probe.py`` runs them and writes the card).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seqbench.bench.core.contract import Goal
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.sweeps.grid import GridStudy, grid_study, seeds_of, values_of
from seqbench.sweeps.probes import Battery, Probe
from seqbench.sweeps.spec import SweepSpec

# what probe sets itself, in probe's words: each names the argument that sets it
REFUSED = {
    "seed": "probe runs every rung on the profile's seeds; set seeds=N (or seeds=0,1,2)",
    "out_dir": "pass --out-dir DIR",
    "run_id": "each run of a rung gets its own run id",
    "resume": "re-running the same probe command continues its studies (--retry-failed runs failed trials again)",
}

# -- settings -> models --------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbedModel:
    """One model of the card."""

    label: str  # the card's name for it: the model, or the mixer of a stack, plus settings given
    settings: dict[str, Any]  # {model.<field>: value} as given (model.name included)


@dataclass(frozen=True)
class Plan:
    """What the settings ask for: the models, and what every run shares."""

    models: list[ProbedModel]
    common: dict[str, Any]  # {dotted key: value} for every run
    seeds: list[int]
    lrs: list[float]
    notes: list[str]


def _groups(settings: Sequence[str]) -> tuple[list[list[tuple[str, str]]], dict[str, str]]:
    groups: list[list[tuple[str, str]]] = []
    common: dict[str, str] = {}
    for word in settings:
        key, eq, text = word.partition("=")
        key = key.strip()
        if not eq:
            raise UserError(f"{word}: settings look like key=value, e.g. model=lstm model=stack model.mixer=mamba")
        if key == "task" or key.startswith("task."):
            raise UserError(f"{key}: probe sets the tasks and their ladders; choose probes with --probes NAME,...")
        if key.split(".")[0] in REFUSED:
            raise UserError(f"{key}: set by probe; {REFUSED[key.split('.')[0]]}")
        if key in ("model", "model.name"):
            groups.append([("model.name", text)])
        elif key.startswith("model."):
            if not groups:
                raise UserError(f"{key}: comes before any model=NAME; start each model with model=NAME")
            groups[-1].append((key, text))
        elif key in common:
            raise UserError(f"{key}: given twice; give it once")
        else:
            common[key] = text
    if not groups:
        raise UserError(
            "probe: name a model to probe, e.g. model=lstm (several: model=lstm model=stack model.mixer=mamba)"
        )
    return groups, common


def _fields(name: str) -> set[str]:
    return set(MODELS.get(str(name)).config_cls.model_fields)


def expand(group: list[tuple[str, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """A group's models (its comma lists as a product), fields a model lacks dropped with a note."""
    axes: dict[str, list[Any]] = {}
    for key, text in group:
        if key in axes:
            raise UserError(f"{key}: given twice for one model; give it once (a comma list makes several models)")
        axes[key] = values_of(key, text)
    names = axes["model.name"]
    for key in axes:
        field = key.split(".")[1]
        if key != "model.name" and not any(field in _fields(n) for n in names):
            raise UserError(
                f"{key}: no field {field!r} in {', '.join(map(str, names))}; "
                f"allowed: {', '.join(sorted(_fields(names[0]) - {'name'}))}"
            )
    out, notes = [], []
    for combo in itertools.product(*axes.values()):
        d = dict(zip(axes, combo))
        kept = {k: v for k, v in d.items() if k == "model.name" or k.split(".")[1] in _fields(d["model.name"])}
        if len(kept) < len(d):
            notes.append(
                f"note: {', '.join(sorted(set(d) - set(kept)))} left out for model={d['model.name']} (no such field)"
            )
        if kept not in out:
            out.append(kept)
    return out, list(dict.fromkeys(notes))


def label(settings: dict[str, Any]) -> str:
    """``lstm``, ``mamba`` (a stack's mixer), ``TokenShift`` (an import path's class), plus the settings given."""
    name = str(settings["model.name"])
    head = str(settings.get("model.mixer", name)) if name == "stack" else name
    head = head.rsplit(":", 1)[-1]
    extra = [f"{k.removeprefix('model.')}={v}" for k, v in settings.items() if k not in ("model.name", "model.mixer")]
    return head + (f"[{', '.join(extra)}]" if extra else "")


def _shared(common_text: dict[str, str], prof: Battery) -> tuple[dict[str, Any], list[int], list[float]]:
    """The settings for every run, the seeds and the learning rates (the profile's unless given)."""
    common: dict[str, Any] = {}
    seeds: list[int] | int = prof.seeds
    lrs = list(prof.lrs)
    for key, text in common_text.items():
        if key == "seeds":
            seeds = seeds_of(text)
            continue
        values = values_of(key, text)
        if key == "optim.lr":
            lrs = [float(v) for v in values]
        elif len(values) > 1:
            raise UserError(
                f"{key}: probe sweeps only models (model=a,b), rungs and learning rates (optim.lr=a,b); "
                f"give {key} one value, or compare it with seqbench compare"
            )
        else:
            common[key] = values[0]
    seed_list = list(range(seeds)) if isinstance(seeds, int) else seeds
    if not seed_list:
        raise UserError("seeds: must be >= 1")
    return common, seed_list, lrs


def plan(settings: Sequence[str], prof: Battery) -> Plan:
    """The models (groups expanded, duplicates once) and the shared settings of ``settings``."""
    groups, common_text = _groups(settings)
    models, notes = [], []
    for g in groups:
        found, said = expand(g)
        models += [m for m in found if m not in models]
        notes += said
    probed = [ProbedModel(label(m), m) for m in models]
    labels = [m.label for m in probed]
    twice = [x for x in labels if labels.count(x) > 1]
    if twice:
        raise UserError(f"probe: two models share the label {twice[0]!r}; give them different settings")
    return Plan(probed, *_shared(common_text, prof), notes)


# -- models x probes -> studies -------------------------------------------------------------------


def metric_of(probe: Probe) -> tuple[str, bool]:
    facts = TASKS.get(probe.task).config_cls.facts
    return f"val/{facts.primary}", facts.primary_goal is Goal.MAX


def study_spec(probe: Probe, model: ProbedModel, p: Plan, prof: Battery) -> GridStudy:
    """The grid study of one probe x model: rungs x learning rates (x weight decays) on the plan's seeds."""
    fields = _fields(model.settings["model.name"])
    flat = {
        "task.name": probe.task,
        **{f"task.{k}": v for k, v in probe.settings.items()},
        **{f"model.{k}": v for k, v in prof.model.items() if k in fields},
        **model.settings,
        "train.max_steps": probe.steps,
        **prof.run,
        **p.common,
    }
    metric, maximize = metric_of(probe)
    if "train.early_stop" not in p.common and probe.stop_at is not None:  # a solved run stops: budget for the rest
        flat["train.early_stop"] = {"metric": metric, "threshold": probe.stop_at}
    axes: dict[str, list[Any]] = {"optim.lr": list(p.lrs)}
    if probe.ladder.evaluated:  # one training per seed and rate, tested at every rung's length
        given = [k for k in ("eval.test", "eval.lengths") if k in p.common]
        if given:
            raise UserError(
                f"{given[0]}: probe {probe.name} sets it (its ladder is the evaluation lengths "
                f"{', '.join(map(str, probe.ladder.rungs))}); leave it out, or choose other probes with --probes"
            )
        flat.update({"eval.test": True, "eval.lengths": list(probe.ladder.rungs)})
    else:
        axes = {probe.ladder.setting: list(probe.ladder.rungs), **axes}
    if len(prof.weight_decays) > 1 and "optim.weight_decay" not in p.common:
        axes["optim.weight_decay"] = list(prof.weight_decays)
    # every grid point's config built: fails now, naming the probe and the model
    return grid_study(
        flat,
        axes,
        p.seeds,
        metric=metric,
        goal="maximize" if maximize else "minimize",
        question=f"Probe {probe.name} ({probe.skill}): where does {model.label} stop on {probe.ladder.setting}?",
        # a seed that fails a rung at every rate is not trained on harder ones (the rates: best of), and one
        # that solved a rung at one rate is not trained there at the others: the frontier reads the best rate
        ladder=None if probe.ladder.evaluated else probe.ladder.setting,
        skip_solved=not probe.ladder.evaluated,
        source=f"probe {probe.name} x {model.label}",
    )


def card_name(p: Plan, prof_name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", "+".join(m.label for m in p.models))
    if len(name) > 60:
        name = name[:48] + "-" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name}-{prof_name}"


@dataclass(frozen=True)
class Job:
    """One probe x model: its grid study and the study's name."""

    probe: Probe
    model: ProbedModel
    grid: GridStudy  # the typed spec sweep() runs, and its YAML
    study: str  # probe-<probe>-<digest of the spec>: seeds included, a study's seed list is fixed once it runs

    @property
    def spec(self) -> SweepSpec:
        return self.grid.spec

    @property
    def raw(self) -> dict[str, Any]:
        """The sweep spec as its YAML reads."""
        return self.grid.raw

    @property
    def per_seed(self) -> int:
        """Runs per seed and rung: the grid's other axes (learning rates, weight decays)."""
        axes = self.spec.parameters.items()
        return math.prod(len(v.values or ()) for k, v in axes if k != self.probe.ladder.setting)


def specs(settings: Sequence[str], prof: Battery, probes: tuple[Probe, ...]) -> tuple[Plan, list[Job]]:
    p = plan(settings, prof)
    jobs = []
    for pr in probes:
        for m in p.models:
            grid = study_spec(pr, m, p, prof)
            jobs.append(Job(pr, m, grid, grid.name(f"probe-{pr.name}-")))
    return p, jobs
