"""A run killed with SIGKILL and resumed ends with the same metrics as an uninterrupted run."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import torch

from seqbench.bench.config import build_config
from seqbench.bench.train import run
from tests.conftest import REPO

OVERRIDES = ["task=copy", "model=lstm", "task.delay=6", "task.n_symbols=2", "model.d_model=16", "model.n_layers=2",
             "model.dropout=0.2",  # dropout draws random numbers: the RNG state must survive the kill
             "train.max_steps=300", "train.val_every=20", "train.checkpoint_every=20", "train.batch_size=16",
             "train.deterministic=true", "eval.test_batches=2", "tracking.wandb=off"]


def _rows(run_dir):
    try:
        with (run_dir / "metrics.csv").open() as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def test_sigkill_then_resume_matches_uninterrupted(tmp_path):
    ref = run(build_config({}, OVERRIDES + [f"out_dir={tmp_path / 'ref'}"]), progress=False)

    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    proc = subprocess.Popen([sys.executable, "-m", "seqbench", "run", *OVERRIDES, f"out_dir={out}"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    ckpt_step = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]
    assert 0 < ckpt_step < 300

    resumed = run(build_config({}, OVERRIDES + [f"out_dir={out}", "resume=true"]), progress=False)
    assert resumed["run_id"] == run_dir.name and resumed["status"] == "completed" and resumed["steps"] == 300
    drop = "time/train_s"
    assert {k: v for k, v in resumed["final"].items() if k != drop} == \
        {k: v for k, v in ref["final"].items() if k != drop}
    rows, ref_rows = _rows(run_dir), _rows(tmp_path / "ref" / "runs" / ref["run_id"])
    assert [int(r["step"]) for r in rows] == list(range(20, 301, 20))  # history continued, no duplicates
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(rows) == strip(ref_rows)
    # a second resume finds the run finished and returns it without training
    again = run(build_config({}, OVERRIDES + [f"out_dir={out}", "resume=true"]), progress=False)
    assert again["run_id"] == run_dir.name
    assert json.loads((run_dir / "results.json").read_text())["final"] == resumed["final"]


def test_resume_with_nothing_to_resume_starts_fresh(tmp_path):
    r = run(build_config({}, OVERRIDES[:5] + ["train.max_steps=4", "train.val_every=2", "tracking.wandb=off",
                                              f"out_dir={tmp_path}", "resume=true"]), progress=False)
    assert r["status"] == "completed" and r["steps"] == 4


def test_checkpoints_load_with_weights_only(tmp_path):
    r = run(build_config({}, OVERRIDES[:5] + ["train.max_steps=4", "train.val_every=2", "train.checkpoint_every=2",
                                              "tracking.wandb=off", f"out_dir={tmp_path}"]), progress=False)
    ckpt = tmp_path / "runs" / r["run_id"] / "checkpoints" / "last.ckpt"
    state = torch.load(ckpt, weights_only=True)  # raises if the file needs pickled code
    assert state["global_step"] == 2 and "seqbench" in state


def test_sigterm_stops_gracefully_and_resume_finishes_the_run(tmp_path):
    ovs = ["task=copy", "task.delay=30", "task.n_symbols=2", "model.d_model=64", "train.batch_size=64",
           "train.max_steps=600", "train.val_every=20", "train.checkpoint_every=20", "eval.test=false",
           "tracking.wandb=off", f"out_dir={tmp_path}"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    proc = subprocess.Popen([sys.executable, "-m", "seqbench", "run", *ovs], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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

    done = run(build_config({}, ovs + ["resume=true"]), progress=False)
    assert done["run_id"] == dirs[0].name and done["status"] == "completed" and done["steps"] == 600
