"""seqbench: measure what the textbooks claim about sequence architectures.

The notebook API is the commands' own typed entries (imported lazily, so ``import seqbench`` stays
cheap and pulls in torch only when a name that needs it is used)::

    import seqbench
    seqbench.list_tasks(), seqbench.list_models()   # registered names
    cfg = seqbench.build_config(["task=copy", "model=lstm", "train.max_steps=200"])
    r = seqbench.run(cfg)                 # RunResult: run_id, status, run_dir, results (results.json)
    s = seqbench.sweep("demo", trials=4)  # SweepResult: study, trials, out_dir
    c = seqbench.compare(["model=lstm,gru", "task=copy", "seeds=3"])  # CompareResult: table, report
    seqbench.report("demo")               # ReportResult: index.html of a study
    seqbench.cost(["models=lstm,transformer", "lengths=64,128,256"])  # CostResult: rows, exponents
    seqbench.verify(["vanishing_gradients"])  # VerifyResult: each claim's verdict, the table, the page
    p = seqbench.probe(["model=lstm", "model=stack", "model.mixer=mamba"])  # ProbeResult: the card, its files
    runs = seqbench.load_runs("outputs")  # every run folder as one pandas frame (the report's columns)
    model = seqbench.load_model(run_id)   # the trained SeqModule (eval mode); model.cfg is its RunConfig

The installed package is ``seqbench`` alone; its parts are ``seqbench.bench`` (config, training,
commands, CLI), ``seqbench.tasks``, ``seqbench.models``, ``seqbench.sweeps`` and ``seqbench.reports``.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

try:
    __version__ = metadata.version("seqbench")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

# public name -> (module, attribute)
_API = {
    "build_config": ("seqbench.bench.config.build", "build_config"),
    "RunConfig": ("seqbench.bench.config.run", "RunConfig"),
    "load_config": ("seqbench.bench.config.build", "load_config"),
    "list_tasks": ("seqbench.bench.commands.list", "list_tasks"),
    "list_models": ("seqbench.bench.commands.list", "list_models"),
    "run": ("seqbench.bench.commands.run", "run"),
    "RunResult": ("seqbench.bench.core.artifacts", "RunResult"),
    "sweep": ("seqbench.bench.commands.sweep", "sweep"),
    "SweepResult": ("seqbench.sweeps.coordinator", "SweepResult"),
    "compare": ("seqbench.bench.commands.compare", "compare"),
    "CompareResult": ("seqbench.bench.commands.compare", "CompareResult"),
    "report": ("seqbench.bench.commands.report", "report"),
    "ReportResult": ("seqbench.bench.commands.report", "ReportResult"),
    "cost": ("seqbench.bench.commands.cost", "cost"),
    "CostResult": ("seqbench.bench.commands.cost", "CostResult"),
    "runs": ("seqbench.bench.commands.runs", "runs"),
    "RunsResult": ("seqbench.bench.commands.runs", "RunsResult"),
    "verify": ("seqbench.bench.commands.verify", "verify"),
    "probe": ("seqbench.bench.commands.probe", "probe"),
    "ProbeResult": ("seqbench.bench.commands.probe", "ProbeResult"),
    "VerifyResult": ("seqbench.bench.commands.verify", "VerifyResult"),
    "load_runs": ("seqbench.reports.runs", "load_runs"),
    "UserError": ("seqbench.bench.core.errors", "UserError"),
    "evaluate": ("seqbench.bench.commands.eval", "evaluate"),
    "EvalResult": ("seqbench.bench.commands.eval", "EvalResult"),
    "load_model": ("seqbench.bench.training.trained", "load_model"),
}

__all__ = ["__version__", *_API]  # noqa: PLE0604  (the notebook API's names: _API's keys, all strings)

if TYPE_CHECKING:  # the same names for mypy, pyright and IDEs (real signatures); never run, so nothing loads
    from seqbench.bench.commands.compare import CompareResult as CompareResult
    from seqbench.bench.commands.compare import compare as compare
    from seqbench.bench.commands.cost import CostResult as CostResult
    from seqbench.bench.commands.cost import cost as cost
    from seqbench.bench.commands.eval import EvalResult as EvalResult
    from seqbench.bench.commands.eval import evaluate as evaluate
    from seqbench.bench.commands.list import list_models as list_models
    from seqbench.bench.commands.list import list_tasks as list_tasks
    from seqbench.bench.commands.probe import ProbeResult as ProbeResult
    from seqbench.bench.commands.probe import probe as probe
    from seqbench.bench.commands.report import ReportResult as ReportResult
    from seqbench.bench.commands.report import report as report
    from seqbench.bench.commands.run import run as run
    from seqbench.bench.commands.runs import RunsResult as RunsResult
    from seqbench.bench.commands.runs import runs as runs
    from seqbench.bench.commands.sweep import sweep as sweep
    from seqbench.bench.commands.verify import VerifyResult as VerifyResult
    from seqbench.bench.commands.verify import verify as verify
    from seqbench.bench.config.build import build_config as build_config
    from seqbench.bench.config.build import load_config as load_config
    from seqbench.bench.config.run import RunConfig as RunConfig
    from seqbench.bench.core.artifacts import RunResult as RunResult
    from seqbench.bench.core.errors import UserError as UserError
    from seqbench.bench.training.trained import load_model as load_model
    from seqbench.reports.runs import load_runs as load_runs
    from seqbench.sweeps.coordinator import SweepResult as SweepResult


def __getattr__(name: str) -> Any:
    try:
        module, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'seqbench' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
