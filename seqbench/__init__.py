"""seqbench: measure what the textbooks claim about sequence architectures.

The notebook API (imported lazily, so ``import seqbench`` stays cheap and pulls in torch only when a
name that needs it is used)::

    import seqbench
    cfg = seqbench.build_config(["task=copy", "model=lstm", "train.max_steps=200"])
    result = seqbench.run(cfg)            # trains, writes outputs/runs/<id>/, returns the results dict
    seqbench.list_tasks(), seqbench.list_models()
    runs = seqbench.load_runs("outputs")  # every run folder as one pandas frame (the report's columns)
    model = seqbench.load_model(run_id)   # the trained SeqModule (eval mode); model.cfg is its RunConfig

The installed package is ``seqbench`` alone; its parts are ``seqbench.bench`` (config, training,
CLI), ``seqbench.tasks``, ``seqbench.models``, ``seqbench.sweeps`` and ``seqbench.reports``.
"""
from __future__ import annotations

import importlib
from importlib import metadata

try:
    __version__ = metadata.version("seqbench")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

# public name -> (module, attribute)
_API = {
    "build_config": ("seqbench.bench.config", "build_config"),
    "RunConfig": ("seqbench.bench.config", "RunConfig"),
    "load_config": ("seqbench.bench.config", "load_config"),
    "run": ("seqbench.bench.training.train", "run"),
    "UserError": ("seqbench.bench.core.errors", "UserError"),
    "load_runs": ("seqbench.reports.runs", "load_runs"),
    "load_model": ("seqbench.bench.training.trained", "load_model"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    try:
        module, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'seqbench' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
