"""Disk trouble: an unwritable out_dir or journal path, or a disk that refuses writes, fails a run or
a sweep with one line before any training or study; a W&B write failure mid-sweep warns once and
the trials still complete.

A full disk is simulated with RLIMIT_FSIZE in a subprocess (SIGXFSZ ignored, so a write past the
limit fails with EFBIG the way a full disk fails with ENOSPC): this sandbox cannot mount a tiny
filesystem. Running as root, permission bits do not stop writes, so "unwritable" is a path under a
regular file (ENOTDIR), which fails for every user.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import wandb
from optuna.trial import TrialState

import seqbench.bench.training.tracking
from seqbench.bench.cli import main
from seqbench.sweeps.storage import open_storage
from tests.helpers import REPO, tiny_overrides
from tests.sweeps.test_sweep_runner import TINY_BASE, write_spec

LIMIT = 16 * 1024  # bytes any one file may grow to in the "full disk" subprocess


def blocked(tmp_path: Path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("not a directory")
    return f / "out"


def one_line_exit_2(code: int, err: str, needle: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and needle in lines[0], err


def test_sweep_with_unwritable_out_dir_fails_before_any_study(tmp_path, capsys):
    journal = tmp_path / "j.journal"
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}})
    code = main(["sweep", str(p), "--out-dir", str(blocked(tmp_path)), "--storage", str(journal)])
    one_line_exit_2(code, capsys.readouterr().err, "out_dir: cannot write")
    assert not journal.exists()  # no study was created


def test_sweep_with_unwritable_journal_fails_before_any_run(tmp_path, capsys):
    out = tmp_path / "out"
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}})
    code = main(["sweep", str(p), "--out-dir", str(out), "--storage", str(blocked(tmp_path) / "x.journal")])
    one_line_exit_2(code, capsys.readouterr().err, "--storage: cannot use journal file")
    assert not (out / "runs").exists()


def _limited() -> None:  # in the child: file writes past LIMIT fail (EFBIG) instead of killing it
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def full_disk_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seqbench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        preexec_fn=_limited,
    )


@pytest.mark.slow  # two interpreter start-ups importing torch
def test_a_disk_that_refuses_writes_fails_run_and_sweep_fast(tmp_path):
    out = tmp_path / "run-out"
    r = full_disk_cli("run", *tiny_overrides("copy", "lstm", out))
    one_line_exit_2(r.returncode, r.stderr, "out_dir: cannot write")
    assert "File too large" in r.stderr and r.stdout == ""
    assert not (out / "runs").exists()

    out = tmp_path / "sweep-out"
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}})
    r = full_disk_cli("sweep", str(p), "--out-dir", str(out))
    one_line_exit_2(r.returncode, r.stderr, "out_dir: cannot write")
    assert not (out / "optuna.journal").exists() and not (out / "runs").exists()


def test_wandb_write_failures_mid_sweep_warn_once_and_trials_complete(tmp_path, monkeypatch, capsys):
    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setattr(seqbench.bench.training.tracking, "_warned", set())
    monkeypatch.setattr(wandb.Run, "log", full)
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        base={**TINY_BASE, "tracking": {"wandb": "offline"}},
        parameters={"model.name": {"values": ["rnn", "gru"]}},
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("W&B logging failed") == 1 and "No space left on device" in err, err
    trials = optuna.load_study(study_name="tiny", storage=open_storage(None, out)).get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    assert all((out / "runs" / t.user_attrs["run_ids"][0] / "results.json").exists() for t in trials)
