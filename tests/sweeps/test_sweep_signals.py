"""Stopping a sweep of several workers: a stop signal to the command reaches every worker (each saves its
step and records its trial, as a single run does); a ``kill -9`` of the command leaves no worker behind;
a re-run retries the trials of dead workers on this machine at once and says what it waits for when
a worker on another machine may still be running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import psutil
import pytest
from optuna.trial import TrialState

from seqbench.bench.cli import main
from seqbench.sweeps.liveness import gone_here, this_worker
from seqbench.sweeps.optuna_adapter import set_trial_flag
from seqbench.sweeps.storage import open_storage
from tests.sweeps.test_sweep_runner import TINY_BASE, sweep_cli, write_spec


def trials(out: Path) -> list:
    return optuna.load_study(study_name="tiny", storage=open_storage(None, out)).get_trials()


def start_two_workers(tmp_path: Path, steps: int) -> tuple[subprocess.Popen, Path, list[str]]:
    """A 2-worker sweep whose two trials are both training (each has written a checkpoint)."""
    out = tmp_path / "out"
    train = {**TINY_BASE["train"], "max_steps": steps, "val_every": 50, "checkpoint_every": 50}
    p = write_spec(tmp_path, base={**TINY_BASE, "train": train}, parameters={"task.delay": {"values": [3, 4]}})
    args = [str(p), "--out-dir", str(out), "--workers", "2", "--heartbeat", "0.5"]
    proc = sweep_cli(*args, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.3)
        if len(list(out.glob("runs/*/checkpoints/last.ckpt"))) == 2:
            return proc, out, args
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"the two workers never both trained: {proc.communicate()[0]}")


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.mark.slow  # a sweep process with two workers, each training until stopped
def test_sigterm_to_the_command_reaches_every_worker_and_each_saves_its_step(tmp_path):
    proc, out, _ = start_two_workers(tmp_path, steps=20000)
    try:
        proc.send_signal(signal.SIGTERM)  # the command only, as `kill PID` or a scheduler's stop does
        text, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, text
    ts = trials(out)
    stopped = [t for t in ts if t.state == TrialState.FAIL]
    assert len(stopped) == 2 and all(t.user_attrs["retried"] for t in stopped), text  # both recorded and queued
    for t in stopped:
        res = json.loads((out / "runs" / t.user_attrs["run_ids"][0] / "results.json").read_text())
        assert res["status"] == "interrupted" and "checkpoint saved" in res["reason"], res
    assert not [t for t in ts if t.state == TrialState.RUNNING]


@pytest.mark.slow
def test_a_sigkilled_command_leaves_no_worker_and_the_rerun_reclaims_at_once(tmp_path, capsys):
    proc, out, args = start_two_workers(tmp_path, steps=1500)
    workers = [c.pid for c in psutil.Process(proc.pid).children()]
    assert len(workers) == 1  # the command is one worker, its forked copy the other
    os.kill(proc.pid, signal.SIGKILL)  # the command alone: its worker is not in the signal's way
    proc.communicate()
    deadline = time.time() + 5
    while alive(workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(workers), "a worker outlived its killed command"

    before = trials(out)
    assert sum(t.state == TrialState.RUNNING for t in before) == 1  # the killed command's own trial
    args[args.index("--heartbeat") + 1] = "30"  # a 180 s grace: the re-run must not wait it out
    args[args.index("--workers") + 1] = "1"
    t0 = time.monotonic()
    assert main(["sweep", *args]) == 0
    assert time.monotonic() - t0 < 170
    text = capsys.readouterr().out
    assert "on this machine has exited" in text, text
    done = [t for t in trials(out) if t.state == TrialState.COMPLETE]
    assert sorted(t.params["task.delay"] for t in done) == [3, 4]


def test_a_worker_on_another_machine_is_waited_for_with_a_line_then_retried(tmp_path, capsys):
    out = tmp_path / "out"
    p = write_spec(tmp_path, parameters={"task.delay": {"values": [3]}})
    study = optuna.create_study(study_name="tiny", storage=open_storage(None, out), direction="maximize")
    from seqbench.sweeps.spec import load_spec
    from seqbench.sweeps.study import Job, study_attrs

    spec = load_spec(p)
    for k, v in study_attrs(
        Job(spec=spec.to_dict(), spec_path=str(p), study="tiny", storage=None, out_dir=str(out)), spec
    ).items():
        study.set_user_attr(k, v)
    study.enqueue_trial({"task.delay": 3})
    t = study.ask()
    t.set_user_attr("worker", {"host": "elsewhere", "boot": "x", "pid": 1, "started": 1.0})
    set_trial_flag(study, t, "heartbeat", time.time())
    from seqbench.sweeps.optuna_adapter import set_study_flag
    from seqbench.sweeps.study import READY_ATTR

    set_study_flag(study, READY_ATTR, True)

    assert main(["sweep", str(p), "--out-dir", str(out), "--heartbeat", "0.3"]) == 0
    text = capsys.readouterr().out
    assert "waiting for trial 0: its worker elsewhere:1 is on another machine" in text, text
    assert "no heartbeat for" in text
    assert [s.state for s in trials(out)] == [TrialState.FAIL, TrialState.COMPLETE]


def test_gone_here_knows_exited_and_orphaned_local_workers_and_not_other_machines(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def running(worker: dict) -> optuna.trial.FrozenTrial:
        t = optuna.trial.create_trial(state=TrialState.RUNNING, user_attrs={"worker": worker})
        t._trial_id = 10**6  # no trial of this process has that id
        return t

    me = this_worker()
    assert "has exited" in gone_here(running({**me, "pid": dead.pid, "started": me["started"]}))
    assert "this process" in gone_here(running(me))
    assert gone_here(running({**me, "host": "elsewhere"})) is None
    assert gone_here(running({**me, "pid": os.getppid(), "started": None})) is None  # alive
