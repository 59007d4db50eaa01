"""Load: four local workers on one journal study, and two on PostgreSQL, run a 24-point grid to the
end: no duplicate or missing grid point, no trial left RUNNING or WAITING, every COMPLETE trial has
its runs' files. Two steps per trial, so process start-up and the storage are what is exercised."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from seqbench.sweeps.storage import open_storage
from tests.pg_server import postgres_or_skip
from tests.sweeps.test_sweep_runner import TINY_BASE, sweep_cli, write_spec

pytestmark = pytest.mark.slow

GRID = {"model.name": ["rnn", "gru", "lstm"], "task.delay": [2, 3, 4, 5], "optim.lr": [0.01, 0.001]}
POINTS = sorted(json.dumps(dict(zip(GRID, combo)), sort_keys=True) for combo in itertools.product(*GRID.values()))


def spec(tmp_path: Path) -> Path:
    base = {**TINY_BASE, "train": {**TINY_BASE["train"], "max_steps": 2, "val_every": 2}}
    return write_spec(tmp_path, name="load", base=base, parameters={k: {"values": v} for k, v in GRID.items()})


def check_study(study: optuna.Study, out: Path, workers: int, text: str) -> None:
    trials = study.get_trials()
    counted = [t for t in trials if not (t.state == TrialState.FAIL and t.user_attrs.get("retried"))]
    assert sorted(json.dumps(t.params, sort_keys=True) for t in counted) == POINTS, text  # none twice, none missing
    assert not [t.number for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)], text
    assert [t.state for t in counted] == [TrialState.COMPLETE] * len(POINTS), text
    for t in counted:
        for run_id in t.user_attrs["run_ids"]:
            run = out / "runs" / run_id
            assert all((run / f).is_file() for f in ("config.yaml", "metrics.csv", "results.json")), run_id
            assert json.loads((run / "results.json").read_text())["status"] == "completed"
    assert len({t.system_attrs["worker"] for t in counted}) == workers, text  # every worker took trials


def test_four_workers_on_one_journal_finish_a_24_point_grid(tmp_path):
    out = tmp_path / "out"
    proc = sweep_cli(str(spec(tmp_path)), "--out-dir", str(out), "--workers", "4")
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    check_study(optuna.load_study(study_name="load", storage=open_storage(None, out)), out, 4, text)
    assert "24 trials: 24 complete" in text


def test_two_workers_on_postgres_finish_a_24_point_grid(tmp_path):
    out = tmp_path / "out"
    with postgres_or_skip() as url:
        proc = sweep_cli(str(spec(tmp_path)), "--out-dir", str(out), "--workers", "2", "--storage", url)
        text, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, text
        check_study(optuna.load_study(study_name="load", storage=open_storage(url)), out, 2, text)
    assert "24 trials: 24 complete" in text


def test_sigkilled_sweep_rerun_continues_the_trial_from_its_checkpoint(tmp_path, capsys):
    """The retry of a trial killed mid-run keeps the run's rows up to the checkpoint (not a restart)
    and ends with the metrics of an uninterrupted sweep."""
    import os
    import signal
    import time

    import torch

    from seqbench.bench.cli import main

    base = {
        **TINY_BASE,
        "train": {
            **TINY_BASE["train"],
            "max_steps": 300,
            "val_every": 20,
            "checkpoint_every": 20,
            "deterministic": True,
        },
    }
    p = write_spec(tmp_path, name="kill", base=base, parameters={"task.delay": {"values": [3]}})
    out = tmp_path / "out"
    args = (str(p), "--out-dir", str(out), "--heartbeat", "0.5")
    proc = sweep_cli(*args, start_new_session=True)
    try:
        deadline = time.time() + 300
        ckpt = None
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
            found = list(out.glob("runs/*/checkpoints/last.ckpt"))
            if found and torch.load(found[0], map_location="cpu", weights_only=True)["global_step"] >= 40:
                ckpt = found[0]
                break
        assert ckpt is not None, "the run never wrote a checkpoint at step >= 40 before ending"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    run = ckpt.parent.parent
    step = torch.load(ckpt, map_location="cpu", weights_only=True)["global_step"]
    assert not (run / "results.json").exists() and step < 300
    before = [r for r in (run / "metrics.csv").read_text().splitlines()[1:] if int(r.split(",")[0]) <= step]

    assert main(["sweep", *args]) == 0
    trials = optuna.load_study(study_name="kill", storage=open_storage(None, out)).get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE]
    assert trials[1].user_attrs["run_ids"] == [run.name]  # the retry continued the killed run's folder
    rows = (run / "metrics.csv").read_text().splitlines()[1:]
    assert rows[: len(before)] == before  # kept as written before the kill (wall_s too): not restarted
    steps = [int(r.split(",")[0]) for r in rows]
    assert steps == sorted(set(steps)) and steps[-1] == 300

    whole = tmp_path / "whole"
    assert main(["sweep", str(p), "--out-dir", str(whole)]) == 0
    again = optuna.load_study(study_name="kill", storage=open_storage(None, whole)).get_trials()
    assert again[0].value == trials[1].value
    final = json.loads((run / "results.json").read_text())["final"]
    ref = json.loads((whole / "runs" / again[0].user_attrs["run_ids"][0] / "results.json").read_text())["final"]
    assert {k: v for k, v in final.items() if k != "time/train_s"} == {
        k: v for k, v in ref.items() if k != "time/train_s"
    }
