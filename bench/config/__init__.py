"""RunConfig: one typed, frozen, validated tree per run, one module per part.

- ``run.py``: ``RunConfig``, the root: its ``task`` and ``model`` unions (read from the registries when its
  schema is first built, after start-up), the rules that span sections, the config hash;
- its sections: ``optim.py`` (``OptimConfig``), ``train.py`` (``TrainConfig``, ``EarlyStopConfig``),
  ``evaluation.py`` (``EvalConfig``), ``tracking.py`` (``TrackingConfig``), ``diagnostics.py``
  (``DiagnosticsConfig``);
- ``build.py``: the build API (``build_config``, ``load_config``, ``resolve``, ``override``, ``validate``,
  ``metric_goal_of``), each of which starts the registries first (``bench/startup.py``).

Configs come from YAML and/or dotted ``key=value`` overrides, composed into one dict by
``bench/composition.py`` (whose names this package re-exports, with ``bench/core/settings.py``'s readers);
every change rebuilds and re-validates the whole tree. Import the names from here
(``from seqbench.bench.config import RunConfig, build_config``). Importing this package builds nothing.
"""

from __future__ import annotations

from seqbench.bench.composition import DEFAULT_NAMES, Composed, chosen, compose, foreign_field, notes
from seqbench.bench.config.build import (
    build_config,
    load_config,
    metric_goal_of,
    override,
    resolve,
    section_fields,
    validate,
)
from seqbench.bench.config.diagnostics import DiagnosticsConfig
from seqbench.bench.config.evaluation import EvalConfig
from seqbench.bench.config.optim import ADAM_BETAS, OptimConfig
from seqbench.bench.config.run import Registered, RunConfig
from seqbench.bench.config.tracking import TrackingConfig
from seqbench.bench.config.train import EarlyStopConfig, TrainConfig
from seqbench.bench.core.settings import load_yaml, parse_value, safe_load
from seqbench.bench.startup import start

# Every class the one-module config defined is named here too: a config pickled by that version names its
# classes ``seqbench.bench.config.<Class>``, and unpickling looks them up by that name.
__all__ = [
    "ADAM_BETAS",
    "DEFAULT_NAMES",
    "Composed",
    "DiagnosticsConfig",
    "EarlyStopConfig",
    "EvalConfig",
    "OptimConfig",
    "Registered",
    "RunConfig",
    "TrackingConfig",
    "TrainConfig",
    "build_config",
    "chosen",
    "compose",
    "foreign_field",
    "load_config",
    "load_yaml",
    "metric_goal_of",
    "notes",
    "override",
    "parse_value",
    "resolve",
    "safe_load",
    "section_fields",
    "start",
    "validate",
]
