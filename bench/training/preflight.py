"""The pre-flight: every configuration a command will train is built before anything trains and before any
run folder, study, report or card is made, so that what a run would refuse at its start (a plug-in mixer
that reads the future, returns the wrong shape or cannot be built; a plug-in model whose constructor
fails; a task whose data cannot be read) refuses the whole command in one line, exit 2.

``seqbench run`` (``bench.training.train.train_run``), ``sweep``, ``compare``, ``probe`` and ``verify``
(``sweeps.coordinator.preflight_specs``) call :func:`preflight` with every configuration they will train;
``cost`` builds its models through :func:`built_model` (``bench.training.cost.check_models``).

The configurations were validated before (fields, cross-field rules, every length the run builds, learned
positions: ``bench.config``, ``sweeps.spec.check_spec``); what is built here is what can still refuse at
build time, as a run builds it before its first step (``bench.training.train.run_in_process``): a task that
reads data (text files, a corpus) or is a plug-in's, set up; a model with a plug-in in it (a plug-in model,
or a stack on a plug-in mixer, which ``models.stack`` probes with one forward pass) for its task's spec.
Configurations that build the same task and model (other seeds, learning rates, budgets) are built once,
and one built cleanly is not built again in this process (a command's own check and its studies' share it).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from seqbench.bench.config import RunConfig
from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS, TASKS
from seqbench.models.base import build_model
from seqbench.models.configs.base import ModelConfig
from seqbench.tasks.base import Task

_BUILT: set[str] = set()  # (task, model) keys built cleanly in this process


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"[:300]


def built_model(cfg: ModelConfig, spec: TaskSpec) -> nn.Module:
    """``build_model``, with a plug-in model whose constructor fails refused in one line naming it (a shipped
    model's failure is a bug of seqbench's: it keeps its traceback). A plug-in mixer's probe
    (``models.stack.build_mixer``) refuses with its own line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build_model(cfg, spec)
    except UserError:
        raise
    except Exception as e:
        entry = MODELS.get(cfg.name)
        if entry.origin == "seqbench":
            raise
        raise UserError(
            f"model.name: {cfg.name} could not be built as {getattr(entry.cls, '__qualname__', cfg.name)}"
            f"(cfg, spec): {_why(e)}"
        ) from None


def task_spec(cfg: RunConfig) -> TaskSpec:
    """The spec of ``cfg``'s task, built and set up as a run builds it (a plug-in task that fails: one line)."""
    entry = TASKS.get(cfg.task.name)
    try:
        task = entry.cls(cfg.task, seed=cfg.seed)
        task.setup()
        return task.spec
    except UserError:
        raise
    except Exception as e:
        if entry.origin == "seqbench":
            raise
        raise UserError(f"task.name: {cfg.task.name} could not be set up: {_why(e)}") from None


def _key(part: Any) -> str:
    return json.dumps(part.model_dump(mode="json"), sort_keys=True, default=str)


def runs_plugin(cfg: RunConfig) -> bool:
    """Whether building ``cfg``'s model runs a plug-in's code: the model is one, or the stack's mixer."""
    if MODELS.get(cfg.model.name).origin != "seqbench":
        return True
    mixer = getattr(cfg.model, "mixer", None)
    return isinstance(mixer, str) and MIXERS.get(mixer).origin != "seqbench"


def reads_data(cfg: RunConfig) -> bool:
    """Whether setting ``cfg``'s task up can refuse it: a plug-in task, or one whose ``setup`` reads data (the
    text tasks' files and corpora); a shipped synthetic task makes its data from the seed, nothing to refuse."""
    entry = TASKS.get(cfg.task.name)
    return entry.origin != "seqbench" or entry.cls.setup is not Task.setup


def preflight(configs: Iterable[tuple[str, RunConfig]]) -> None:
    """Build, as a run builds them before training, what can refuse in ``configs`` (pairs of what names a
    configuration in an error, e.g. its grid point, and the configuration): each distinct task that reads
    data or is a plug-in's (:func:`reads_data`), and each distinct model with a plug-in in it
    (:func:`runs_plugin`: its mixer's probe runs) for its task's spec. A shipped model on a shipped mixer
    refuses nothing at build time (its config was validated: fields, lengths, positions), so a paper-sized
    one is not built twice. UserError with one line per problem, after every configuration was checked; a
    problem found at every configuration is said as it is, one found at some ``with <the first's name>: ...``.
    """
    specs: dict[str, TaskSpec | str] = {}  # task key -> its spec, or why it could not be built
    models: dict[tuple[str, TaskSpec], str | None] = {}  # (model key, spec) -> why not, or None
    found: dict[str, list[str]] = {}  # problem -> the configurations it shows at
    n = 0
    with torch.random.fork_rng(devices=[]):  # the caller's random stream is not consumed by the builds
        for where, cfg in configs:
            n += 1
            task_key, model_key = _key(cfg.task), _key(cfg.model)
            built, plugged = f"{task_key}\n{model_key}", runs_plugin(cfg)
            if built in _BUILT or not (plugged or reads_data(cfg)):
                continue
            if task_key not in specs:
                try:
                    specs[task_key] = task_spec(cfg)
                except UserError as e:
                    specs[task_key] = "\n".join(e.problems)
            spec = specs[task_key]
            if isinstance(spec, str):
                problems = spec.split("\n")
            elif plugged:
                if (model_key, spec) not in models:
                    try:
                        built_model(cfg.model, spec)  # built to be checked, then dropped
                        models[(model_key, spec)] = None
                    except UserError as e:
                        models[(model_key, spec)] = "\n".join(e.problems)
                why = models[(model_key, spec)]
                problems = [] if why is None else why.split("\n")
            else:
                problems = []
            if not problems:
                _BUILT.add(built)
            for p in problems:
                found.setdefault(p, []).append(where)
    if found:
        raise UserError(*(p if len(at) == n or not at[0] else f"with {at[0]}: {p}" for p, at in found.items()))
