"""The run path end to end: files written, determinism, divergence, early stop, eval lengths."""
from __future__ import annotations

import csv
import json

import pytest
import torch
import yaml

from seqbench.bench.config import build_config
from seqbench.bench.train import run
from tests.conftest import tiny_overrides


def small(out_dir, *extra: str, task="copy", model="lstm"):
    return build_config({}, tiny_overrides(task, model, out_dir) + list(extra))


def test_run_writes_config_results_and_metrics(out_dir):
    cfg = small(out_dir, "train.max_steps=6", "train.val_every=2", "eval.lengths=[12]")
    r = run(cfg, argv=["seqbench", "run", "x=y"], progress=False)
    d = out_dir / "runs" / r["run_id"]
    assert yaml.safe_load((d / "config.yaml").read_text()) == cfg.to_dict()
    res = json.loads((d / "results.json").read_text())
    for key in ("final", "best", "baseline", "solved", "steps", "wall_time_s", "samples_per_s", "n_params",
                "seed", "config_hash", "git_sha", "versions", "argv", "status"):
        assert key in res, key
    assert res["status"] == "completed" and res["steps"] == 6 and res["argv"] == ["seqbench", "run", "x=y"]
    assert res["config_hash"] == cfg.config_hash() and res["versions"]["torch"].startswith("2.")
    assert {"val/loss", "val/acc", "test/acc", "test@12/acc"} <= set(res["final"])
    assert res["baseline"]["val/acc"] == pytest.approx(1 / 3)
    assert res["best"]["val/acc"] >= res["final"]["val/acc"]
    rows = list(csv.DictReader((d / "metrics.csv").open()))
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    assert {"lr", "train/loss", "val/loss", "val/acc", "wall_s"} <= set(rows[0])


def test_final_validation_at_the_last_step_when_not_a_multiple(out_dir):
    r = run(small(out_dir, "train.max_steps=5", "train.val_every=2"), progress=False)
    rows = list(csv.DictReader((out_dir / "runs" / r["run_id"] / "metrics.csv").open()))
    assert [int(x["step"]) for x in rows] == [2, 4, 5]


def test_same_seed_same_metrics(tmp_path):
    a = run(small(tmp_path / "a", "train.max_steps=8", "train.val_every=4"), progress=False)
    b = run(small(tmp_path / "b", "train.max_steps=8", "train.val_every=4"), progress=False)
    c = run(small(tmp_path / "c", "train.max_steps=8", "train.val_every=4", "seed=1"), progress=False)
    drop = {"time/train_s"}
    fa = {k: v for k, v in a["final"].items() if k not in drop}
    assert fa == {k: v for k, v in b["final"].items() if k not in drop}
    assert fa != {k: v for k, v in c["final"].items() if k not in drop}


def test_divergence_stops_the_run_and_says_why(out_dir):
    r = run(small(out_dir, "optim.lr=1e4", "optim.grad_clip=null", "optim.optimizer=sgd", "train.max_steps=50",
                  "train.val_every=50", "train.diverge_loss=5", task="adding", model="irnn"), progress=False)
    assert r["status"] == "diverged" and r["steps"] < 50
    assert "train.diverge_loss" in r["reason"] or "non-finite" in r["reason"]
    saved = json.loads((out_dir / "runs" / r["run_id"] / "results.json").read_text())
    assert saved["status"] == "diverged"


def test_early_stop_at_threshold(out_dir):
    # val/loss <= 10 holds at the first validation, so the run stops there
    r = run(small(out_dir, "train.max_steps=40", "train.val_every=2",
                  "train.early_stop={metric: val/loss, threshold: 10}"), progress=False)
    assert r["status"] == "completed" and r["steps"] == 2


def test_grad_clip_bounds_the_update(out_dir):
    def update_norm(clip: str) -> float:
        cfg = small(out_dir, "optim.optimizer=sgd", "optim.momentum=0", "optim.lr=1", f"optim.grad_clip={clip}",
                    "train.max_steps=1", "eval.test=false")
        from seqbench.bench.module import SeqModule
        from seqbench.bench.train import build_task
        import pytorch_lightning as pl

        pl.seed_everything(0, verbose=False)
        before = [p.detach().clone() for p in SeqModule(cfg, build_task(cfg)).net.parameters()]
        captured = {}

        class Grab(pl.Callback):
            def on_train_end(self, trainer, module):
                captured["after"] = [p.detach().clone() for p in module.net.parameters()]

        run(cfg, callbacks=[Grab()], progress=False)
        return torch.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(captured["after"], before))).item()

    assert update_norm("0.001") == pytest.approx(0.001, rel=1e-3)
    assert update_norm("null") > 0.01


def test_threads_setting_applies(out_dir):
    run(small(out_dir, "train.threads=1"), progress=False)
    assert torch.get_num_threads() == 1
