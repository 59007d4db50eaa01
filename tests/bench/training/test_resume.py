"""A run killed with SIGKILL and resumed ends with the same metrics as an uninterrupted run."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import pytorch_lightning as pl
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.train import train_run
from tests.helpers import REPO, run_cli

OVERRIDES = [
    "task=copy",
    "model=lstm",
    "task.delay=6",
    "task.n_symbols=2",
    "model.d_model=16",
    "model.n_layers=2",
    "model.dropout=0.2",  # dropout draws random numbers: the RNG state must survive the kill
    "train.max_steps=300",
    "train.val_every=20",
    "train.checkpoint_every=20",
    "train.batch_size=16",
    "train.deterministic=true",
    "eval.test_batches=2",
    "tracking.wandb=off",
]


def _rows(run_dir):
    try:
        with (run_dir / "metrics.csv").open() as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def test_sigkill_then_resume_matches_uninterrupted(tmp_path):
    ref = train_run(build_config({}, OVERRIDES + [f"out_dir={tmp_path / 'ref'}"]), progress=False)

    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "seqbench", "run", *OVERRIDES, f"out_dir={out}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            dirs = list((out / "runs").glob("*")) if (out / "runs").exists() else []
            if dirs and len(_rows(dirs[0])) >= 5 and (dirs[0] / "checkpoints" / "last.ckpt").exists():
                break
            assert proc.poll() is None, "the run finished before it could be killed"
            time.sleep(0.05)
        else:
            raise AssertionError("no checkpoint within the deadline")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    run_dir = dirs[0]
    assert not (run_dir / "results.json").exists()
    killed = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert 0 < killed["global_step"] < 300

    resumed = train_run(build_config({}, OVERRIDES + [f"out_dir={out}", "resume=true"]), progress=False)
    assert resumed["run_id"] == run_dir.name and resumed["status"] == "completed" and resumed["steps"] == 300
    # training time carries the killed process's share (kept in the checkpoint) on top of this one's
    carried = killed["callbacks"]["TrainClock"]
    assert 0 < carried["train_s"] < resumed["train_time_s"] <= resumed["wall_time_s"]
    # the final checkpoint is the last step, with the whole run's clock
    final = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    assert final["global_step"] == 300
    assert final["callbacks"]["TrainClock"]["train_s"] == pytest.approx(resumed["train_time_s"], abs=1e-2)
    assert resumed["final"]["time/train_s"] == pytest.approx(resumed["train_time_s"], abs=1e-3)
    drop = "time/train_s"
    assert {k: v for k, v in resumed["final"].items() if k != drop} == {
        k: v for k, v in ref["final"].items() if k != drop
    }
    rows, ref_rows = _rows(run_dir), _rows(tmp_path / "ref" / "runs" / ref["run_id"])
    assert [int(r["step"]) for r in rows] == list(range(20, 301, 20))  # history continued, no duplicates
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(rows) == strip(ref_rows)
    # a second resume finds the run finished and returns it without training
    again = train_run(build_config({}, OVERRIDES + [f"out_dir={out}", "resume=true"]), progress=False)
    assert again["run_id"] == run_dir.name
    assert json.loads((run_dir / "results.json").read_text())["final"] == resumed["final"]


class Paced(pl.Callback):
    """Each training step sleeps: the step time is mostly the sleep, so throughput compares across
    runs on a loaded machine; ``crash_at`` ends the process there (as a kill would, results unwritten)."""

    def __init__(self, crash_at: int | None = None):
        self.crash_at = crash_at

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        time.sleep(0.02)
        if trainer.global_step == self.crash_at:
            raise RuntimeError("simulated crash")


def test_throughput_after_a_crash_and_resume_matches_an_uninterrupted_run(tmp_path):
    ovs = OVERRIDES[:5] + [
        "train.max_steps=100",
        "train.val_every=10",
        "train.checkpoint_every=10",
        "eval.test=false",
        "tracking.wandb=off",
    ]
    ref = train_run(build_config({}, ovs + [f"out_dir={tmp_path / 'ref'}"]), callbacks=[Paced()], progress=False)
    cfg = build_config({}, ovs + [f"out_dir={tmp_path / 'crashed'}"])
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_run(cfg, callbacks=[Paced(crash_at=55)], progress=False)
    resumed = train_run(
        build_config({}, ovs + [f"out_dir={tmp_path / 'crashed'}", "resume=true"]), callbacks=[Paced()], progress=False
    )
    assert resumed["status"] == "completed" and resumed["steps"] == 100
    # the resumed process trained 50 of the 100 steps: counting only it would double the throughput
    for key in ("samples_per_s", "tokens_per_s"):
        assert resumed[key] == pytest.approx(ref[key], rel=0.2), (key, resumed[key], ref[key])
    assert resumed["train_time_s"] == pytest.approx(ref["train_time_s"], rel=0.2)


def test_resume_with_nothing_to_resume_starts_fresh(tmp_path):
    r = train_run(
        build_config(
            {},
            OVERRIDES[:5]
            + ["train.max_steps=4", "train.val_every=2", "tracking.wandb=off", f"out_dir={tmp_path}", "resume=true"],
        ),
        progress=False,
    )
    assert r["status"] == "completed" and r["steps"] == 4


def test_checkpoints_load_with_weights_only(tmp_path):
    r = train_run(
        build_config(
            {},
            OVERRIDES[:5]
            + [
                "train.max_steps=4",
                "train.val_every=2",
                "train.checkpoint_every=2",
                "tracking.wandb=off",
                f"out_dir={tmp_path}",
            ],
        ),
        progress=False,
    )
    ckpt = tmp_path / "runs" / r["run_id"] / "checkpoints" / "last.ckpt"
    state = torch.load(ckpt, weights_only=True)  # raises if the file needs pickled code
    assert state["global_step"] == 4 and "seqbench" in state  # every 2 steps and the last


def test_sigterm_stops_gracefully_and_resume_finishes_the_run(tmp_path):
    ovs = [
        "task=copy",
        "task.delay=30",
        "task.n_symbols=2",
        "model.d_model=64",
        "train.batch_size=64",
        "train.max_steps=600",
        "train.val_every=20",
        "train.checkpoint_every=20",
        "eval.test=false",
        "tracking.wandb=off",
        f"out_dir={tmp_path}",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "seqbench", "run", *ovs],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 240
    while time.time() < deadline:
        dirs = list((tmp_path / "runs").glob("*")) if (tmp_path / "runs").exists() else []
        if dirs and len(_rows(dirs[0])) >= 3:
            break
        assert proc.poll() is None, "the run finished before it could be stopped"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    res = json.loads((dirs[0] / "results.json").read_text())
    assert res["status"] == "interrupted" and 0 < res["steps"] < 600
    # the checkpoint was written at the step the signal stopped, not at the last checkpoint_every
    ckpt = torch.load(dirs[0] / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == res["steps"] and f"SIGTERM at step {res['steps']}" in res["reason"]
    # the exact command that continues it
    assert f"seqbench run {' '.join(ovs)} resume=true run_id={dirs[0].name}" in err, err

    trained: list[int] = []

    class Steps(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            trained.append(trainer.global_step)

    done = train_run(
        build_config({}, ovs + ["resume=true", f"run_id={dirs[0].name}"]), callbacks=[Steps()], progress=False
    )
    assert done["run_id"] == dirs[0].name and done["status"] == "completed" and done["steps"] == 600
    assert trained == list(range(res["steps"] + 1, 601))  # no step trained twice, none skipped
    steps = [int(r["step"]) for r in _rows(dirs[0])]
    assert steps == sorted(set(steps)) and steps[-1] == 600


def test_resuming_an_unknown_run_id_is_refused_with_the_known_ones(tmp_path):
    base = OVERRIDES[:5] + ["train.max_steps=2", "train.val_every=2", "eval.test=false", f"out_dir={tmp_path}"]
    r = train_run(build_config({}, base), progress=False)
    with pytest.raises(UserError, match=rf"run_id: no run 'typo' under .* to resume; known: {r['run_id']}$"):
        train_run(build_config({}, base + ["resume=true", "run_id=typo"]), progress=False)
    with pytest.raises(
        UserError,
        match=r"resume: run .* was made with another configuration; continue it with "
        r"seqbench run --config .*config.yaml resume=true run_id=",
    ):
        train_run(build_config({}, base + ["resume=true", f"run_id={r['run_id']}", "seed=3"]), progress=False)
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [r["run_id"]]  # no new folder either way
    cli = run_cli("run", *base, "resume=true", "run_id=typo", cwd=tmp_path)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and r["run_id"] in cli.stderr, cli.stderr


def test_a_kill_just_before_a_validation_row_loses_no_row(tmp_path):
    """Killed after step 40's training but before its metrics.csv row: the checkpoint must not already be at
    step 40 (Lightning does not repeat the validation of the step it resumes at, so that row would be gone
    for good); the resumed history has every validation, once."""
    ovs = OVERRIDES[:5] + [
        "train.max_steps=60",
        "train.val_every=20",
        "train.checkpoint_every=20",
        "eval.test=false",
        "tracking.wandb=off",
        f"out_dir={tmp_path}",
    ]
    script = (
        "import os, sys\n"
        "from seqbench.bench.training import tracking\n"
        "from seqbench.bench.config import build_config\n"
        "from seqbench.bench.training.train import train_run\n"
        "log = tracking.RunTracker.log_eval\n"
        "def dying(self, row):\n"
        "    if row['step'] == 40:\n"
        "        os._exit(9)  # as SIGKILL would, between the step's training and its row\n"
        "    log(self, row)\n"
        "tracking.RunTracker.log_eval = dying\n"
        f"train_run(build_config({{}}, {ovs!r}), progress=False)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    p = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert p.returncode == 9, p.stderr[-2000:]
    run_dir = next((tmp_path / "runs").glob("*"))
    assert [int(r["step"]) for r in _rows(run_dir)] == [20]
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 20
    resumed = train_run(build_config({}, ovs + ["resume=true"]), progress=False)
    assert resumed["run_id"] == run_dir.name and resumed["status"] == "completed"
    assert [int(r["step"]) for r in _rows(run_dir)] == [20, 40, 60]
