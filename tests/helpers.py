"""Plain helpers the tests share: tiny settings for every registry entry and a CLI runner.

Every test imports them one way, ``from tests.helpers import ...`` (like the other support modules: those
shared across floors beside this one, ``tests.report_support``, ``tests.pg_server``, ``tests.probe_plugins``;
those of one floor in its folder, ``tests.models.model_probe``, ``tests.sweeps.claims.judge_support``,
``tests.sweeps.claims.verify_support``, ``tests.bench.plugin_support``, ``tests.reports.chromium``);
``conftest.py`` holds only the session setup and fixtures, which pytest supplies to every folder by name. The
tests sit in folders by the floor they test, as the package is (``tests/bench/core/``, ``tests/models/``, ...),
and the checks that cross floors in ``tests/system/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def benchmark_script(name: str) -> Any:
    """``benchmarks/<name>.py`` imported as a module (the folder is no package), registered under ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The base of the tiny claims the verify tests run: copy with 2 symbols, an 8-wide model, two steps.
TINY_CLAIM_BASE: dict[str, Any] = {
    "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 6},
    "model": {"d_model": 8},
    "train": {"max_steps": 2, "val_every": 2, "val_batches": 1, "batch_size": 4},
    "eval": {"test": False},
    "tracking": {"wandb": "off"},
}

# Small but valid settings per task, so every (model, task) pair trains in milliseconds.
# A task without an entry runs at its defaults (still correct, just slower): add one.
TINY_TASK: dict[str, dict[str, Any]] = {
    "copy": {"n_symbols": 2, "alphabet": 3, "delay": 4},
    "adding": {"length": 8},
    "induction": {"length": 8, "vocab": 4},
    "selective_copy": {"length": 8, "n_symbols": 2, "alphabet": 3},
    "assoc_recall": {"vocab": 16, "n_pairs": 2, "length": 8},
    "fuzzy_recall": {"vocab": 8, "n_pairs": 2, "key_len": 2, "value_len": 2},
    "noisy_recall": {"vocab": 12, "noise_vocab": 4, "n_pairs": 2, "noise": 0.25},
    "compression": {"length": 4, "alphabet": 3},
    "memorization": {"n_keys": 8, "n_values": 4, "length": 8},
    "reverse": {"length": 5, "vocab": 6},
    "sort": {"length": 5, "vocab": 6},
    "sentiment": {"max_len": 16, "vocab_size": 200},
    "lm": {"length": 16, "sample_tokens": 8},
    "parity": {"length": 8},
    "modular_arithmetic": {"length": 8},
    "cycle_navigation": {"length": 8},
    "permutation": {"length": 8, "group": "S3"},
    "even_pairs": {"length": 8},
    "duplicate_string": {"length": 6},
    "binary_addition": {"length": 8},
    "stack_manipulation": {"length": 8},
}
TINY_MODEL_FIELDS = {
    "d_model": 16,
    "n_layers": 1,
    "n_heads": 2,
    "d_ff": 32,
    "n_levels": 2,
    "kernel_size": 2,
    "max_len": 64,
}


def tiny_overrides(task: str, model: str, out_dir: Path | str, **extra: Any) -> list[str]:
    """Dotted overrides for a tiny, fast run of (task, model)."""
    from seqbench.bench.core.registry import MODELS

    ovs = [f"task={task}", f"model={model}"]
    ovs += [f"task.{k}={v}" for k, v in TINY_TASK.get(task, {}).items()]
    fields = MODELS.get(model).config_cls.model_fields
    ovs += [f"model.{k}={v}" for k, v in TINY_MODEL_FIELDS.items() if k in fields]
    ovs += [
        "train.max_steps=2",
        "train.val_every=2",
        "train.val_batches=1",
        "train.batch_size=4",
        "eval.test_batches=1",
        "tracking.wandb=off",
        f"out_dir={out_dir}",
    ]
    ovs += [f"{k}={v}" for k, v in extra.items()]
    return ovs


def compatible_pairs() -> list[tuple[str, str]]:
    """Every (task, model) pair the config validator accepts."""
    import seqbench.bench.config  # noqa: F401  (fills the registries)
    from seqbench.bench.core.registry import MODELS, TASKS

    pairs = []
    for t in TASKS:
        for m in MODELS:
            kind_ok = t.config_cls.facts.output_kind in m.config_cls.supported_kinds
            if kind_ok:
                pairs.append((t.name, m.name))
    return pairs


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` in a subprocess (the way a user runs it)."""
    # REPO first, then whatever PYTHONPATH the caller had (a GPU machine's packages may live there)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    e = {**os.environ, "PYTHONPATH": path, "WANDB_MODE": "disabled", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "seqbench", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
    )
