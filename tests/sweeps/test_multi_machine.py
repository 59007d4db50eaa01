"""Two workers in different working directories (as on two machines, or two SLURM tasks) share one
PostgreSQL study: every grid point runs once, and each worker's runs land under its own directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from seqbench.sweeps.storage import open_storage
from tests.helpers import REPO
from tests.pg_server import postgres_or_skip
from tests.sweeps.test_sweep_runner import grid_points, write_spec

pytestmark = pytest.mark.slow


def worker(cwd: Path, spec: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """``seqbench sweep`` as a user on another machine runs it: relative --out-dir, its own directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "seqbench",
            "sweep",
            str(spec),
            "--storage",
            url,
            "--study",
            "two-dirs",
            "--out-dir",
            "outputs",
            *extra,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_workers_in_different_directories_share_one_postgres_study(tmp_path):
    # in turn, so that each surely takes trials (tests/sweeps/test_sweep_postgres.py runs two at once): the
    # first stops after 3 grid points (--trials), the second finds them done and runs the other 3
    with postgres_or_skip() as url:
        a, b = tmp_path / "machine-a", tmp_path / "machine-b"
        a.mkdir(), b.mkdir()
        spec = write_spec(
            tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}, "task.delay": {"values": [2, 3, 4]}}
        )
        first = worker(a, spec, url, "--trials", "3")
        assert first.returncode == 0, first.stdout + first.stderr
        second = worker(b, spec, url)
        assert second.returncode == 0 and "3 done" in second.stdout, second.stdout + second.stderr
        runs_a = sorted((a / "outputs" / "runs").iterdir())
        again = worker(a, spec, url)  # the grid is complete: nothing runs
        assert again.returncode == 0 and "6 done" in again.stdout
        assert sorted((a / "outputs" / "runs").iterdir()) == runs_a and len(runs_a) == 3
        study = optuna.load_study(study_name="two-dirs", storage=open_storage(url))
        trials = study.get_trials()
        assert [t.state for t in trials] == [TrialState.COMPLETE] * 6
        assert grid_points(study) == sorted(
            json.dumps({"model.name": m, "task.delay": d}, sort_keys=True) for m in ("rnn", "gru") for d in (2, 3, 4)
        )
        for t in trials:  # each run is in the directory of the worker that ran it, and only there
            mine, other = (a, b) if t.number < 3 else (b, a)
            run_id = t.user_attrs["run_ids"][0]
            assert (mine / "outputs" / "runs" / run_id / "results.json").is_file()
            assert not (other / "outputs" / "runs" / run_id).exists()
        assert len({t.system_attrs["worker"] for t in trials}) == 2
        assert study.user_attrs["out_dir"] == "outputs"  # relative: each machine reads its own
