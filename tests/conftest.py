"""Session setup (one torch thread, W&B off, offline Hugging Face, the CI fuzz profile) and fixtures.
Shared helpers live in ``tests/helpers.py``: ``from tests.helpers import ...``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

import seqbench.bench.config  # noqa: F401  (fills the registries)

torch.set_num_threads(1)
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# CI replays a fixed set of fuzz cases (green stays green); local runs explore new ones each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    return tmp_path / "outputs"


@pytest.fixture(autouse=True)
def shipped_registries():
    """A plug-in named by import path is registered for the rest of the process; each test gets the registries
    back as it found them, so a later test (``seqbench list`` against a fresh interpreter's) never sees it."""
    from seqbench.bench.core.registry import MIXERS, MODELS, TASKS

    saved = [(reg, dict(reg._entries)) for reg in (MIXERS, MODELS, TASKS)]
    yield
    for reg, entries in saved:
        if reg._entries != entries:
            reg._entries.clear()
            reg._entries.update(entries)
            reg.generation += 1
