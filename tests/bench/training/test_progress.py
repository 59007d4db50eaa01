"""A run's progress: a live status line in a terminal, plain lines elsewhere (logs, pipes, sweeps)."""

from __future__ import annotations

import io
import sys

import pytest

from seqbench.bench.config import build_config
from seqbench.bench.training.train import train_run
from tests.helpers import tiny_overrides


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream_cls, live", [(Terminal, True), (io.StringIO, False)])
def test_a_terminal_gets_a_live_step_line_and_a_log_does_not(tmp_path, monkeypatch, stream_cls, live):
    out = stream_cls()
    monkeypatch.setattr(sys, "stdout", out)
    cfg = build_config({}, tiny_overrides("copy", "lstm", tmp_path, **{"train.max_steps": 20, "train.val_every": 10}))
    r = train_run(cfg, progress=True)
    text = out.getvalue()
    assert r["status"] == "completed" and r["steps"] == 20
    validation_lines = [line for line in text.split("\n") if "train/loss(mean)" in line]
    assert len(validation_lines) == 2  # one per validation, whatever the stream
    if live:
        assert "\r[copy/lstm] step" in text  # redrawn in place between validations
        # a validation line first clears the live line it replaces, then prints in full
        assert all(line.rsplit("\r", 1)[-1].startswith("\033[K[copy/lstm] step") for line in validation_lines)
        assert text.count("\r\033[K") >= 3  # each validation line and the end clear the live line
    else:
        assert "\r" not in text and "\033[K" not in text
