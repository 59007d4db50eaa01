"""The run path end to end: files written, determinism, divergence, early stop, eval lengths."""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import time

import pytest
import pytorch_lightning as pl
import torch
import yaml

from seqbench.bench.config import build_config
from seqbench.bench.training.module import CHECK_EVERY
from seqbench.bench.training.train import train_run
from tests.helpers import REPO, tiny_overrides


def small(out_dir, *extra: str, task="copy", model="lstm"):
    return build_config({}, tiny_overrides(task, model, out_dir) + list(extra))


def test_run_writes_config_results_and_metrics(out_dir):
    cfg = small(out_dir, "train.max_steps=6", "train.val_every=2", "eval.lengths=[12]")
    r = train_run(cfg, argv=["seqbench", "run", "x=y"], progress=False)
    d = out_dir / "runs" / r["run_id"]
    assert yaml.safe_load((d / "config.yaml").read_text()) == cfg.to_dict()
    res = json.loads((d / "results.json").read_text())
    for key in (
        "final",
        "best",
        "baseline",
        "solved",
        "steps",
        "wall_time_s",
        "samples_per_s",
        "n_params",
        "seed",
        "config_hash",
        "git_sha",
        "versions",
        "argv",
        "status",
    ):
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
    r = train_run(small(out_dir, "train.max_steps=5", "train.val_every=2"), progress=False)
    rows = list(csv.DictReader((out_dir / "runs" / r["run_id"] / "metrics.csv").open()))
    assert [int(x["step"]) for x in rows] == [2, 4, 5]


def test_same_seed_same_metrics(tmp_path):
    a = train_run(small(tmp_path / "a", "train.max_steps=8", "train.val_every=4"), progress=False)
    b = train_run(small(tmp_path / "b", "train.max_steps=8", "train.val_every=4"), progress=False)
    c = train_run(small(tmp_path / "c", "train.max_steps=8", "train.val_every=4", "seed=1"), progress=False)
    drop = {"time/train_s"}
    fa = {k: v for k, v in a["final"].items() if k not in drop}
    assert fa == {k: v for k, v in b["final"].items() if k not in drop}
    assert fa != {k: v for k, v in c["final"].items() if k not in drop}


def test_divergence_stops_the_run_and_says_why(out_dir):
    r = train_run(
        small(
            out_dir,
            "optim.lr=1e4",
            "optim.grad_clip=null",
            "optim.optimizer=sgd",
            "train.max_steps=200",
            "train.val_every=200",
            "train.diverge_loss=5",
            task="adding",
            model="irnn",
        ),
        progress=False,
    )
    assert r["status"] == "diverged" and r["steps"] <= CHECK_EVERY
    assert "train.diverge_loss" in r["reason"] or "non-finite" in r["reason"]
    saved = json.loads((out_dir / "runs" / r["run_id"] / "results.json").read_text())
    assert saved["status"] == "diverged"


def test_early_stop_at_threshold(out_dir):
    # val/loss <= 10 holds at the first validation, so the run stops there
    r = train_run(
        small(out_dir, "train.max_steps=40", "train.val_every=2", "train.early_stop={metric: val/loss, threshold: 10}"),
        progress=False,
    )
    assert r["status"] == "completed" and r["steps"] == 2


def test_grad_clip_bounds_the_update(out_dir):
    def update_norm(clip: str) -> float:
        cfg = small(
            out_dir,
            "optim.optimizer=sgd",
            "optim.momentum=0",
            "optim.lr=1",
            f"optim.grad_clip={clip}",
            "train.max_steps=1",
            "eval.test=false",
        )
        import pytorch_lightning as pl

        from seqbench.bench.training.module import SeqModule, build_task

        pl.seed_everything(0, verbose=False)
        before = [p.detach().clone() for p in SeqModule(cfg, build_task(cfg)).net.parameters()]
        captured = {}

        class Grab(pl.Callback):
            def on_train_end(self, trainer, module):
                captured["after"] = [p.detach().clone() for p in module.net.parameters()]

        train_run(cfg, callbacks=[Grab()], progress=False)
        return torch.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(captured["after"], before))).item()

    assert update_norm("0.001") == pytest.approx(0.001, rel=1e-3)
    assert update_norm("null") > 0.01


def test_threads_setting_applies(out_dir):
    assert torch.get_num_threads() == 1  # conftest's value; the run must change it
    try:
        train_run(small(out_dir, "train.threads=2"), progress=False)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


class NaNAt(pl.Callback):
    """Poison the weights before optimizer step ``k``: its loss and every later one are NaN."""

    def __init__(self, k: int):
        self.k = k

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if trainer.global_step + 1 == self.k:
            with torch.no_grad():
                next(module.net.parameters()).fill_(float("nan"))


@pytest.mark.parametrize("k", [1, 23, 40])
def test_nan_at_step_k_stops_the_run_within_the_check_interval(out_dir, k):
    every = 10  # min(CHECK_EVERY, val_every): the interval at which the loss reaches the host
    r = train_run(
        small(out_dir, "train.max_steps=100", f"train.val_every={every}", "eval.test=false"),
        callbacks=[NaNAt(k)],
        progress=False,
    )
    assert r["status"] == "diverged" and k <= r["steps"] <= k + every, r
    first, last = (int(x) for x in re.search(r"steps? (\d+)(?:-(\d+))?", r["reason"]).groups(default="0"))
    assert "non-finite training loss (nan)" in r["reason"] and first <= k <= max(first, last), r["reason"]


class StepLosses(pl.Callback):
    """Each step's loss, read here in the test (the harness itself no longer reads it per step)."""

    def __init__(self):
        self.losses: dict[int, float] = {}

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.losses[trainer.global_step] = float(outputs["loss"])


def test_metrics_csv_train_loss_is_the_mean_of_the_step_losses(out_dir):
    grab = StepLosses()
    r = train_run(
        small(out_dir, "train.max_steps=23", "train.val_every=5", "eval.test=false"), callbacks=[grab], progress=False
    )
    rows = list(csv.DictReader((out_dir / "runs" / r["run_id"] / "metrics.csv").open()))
    assert [int(x["step"]) for x in rows] == [5, 10, 15, 20, 23] and sorted(grab.losses) == list(range(1, 24))
    prev = 0
    for row in rows:
        step = int(row["step"])
        window = [grab.losses[s] for s in range(prev + 1, step + 1)]
        assert float(row["train/loss"]) == pytest.approx(sum(window) / len(window), rel=1e-6)
        prev = step


def _called_from_seqbench() -> bool:
    """Whether the read comes from seqbench's code (directly or through torch), not from Lightning's
    own loop or what it calls (the optimizer's step counters, which live on the CPU)."""
    ours = tuple(str(REPO / d) + os.sep for d in ("bench", "tasks", "models", "sweeps"))
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(ours):
            return True
        if f"{os.sep}pytorch_lightning{os.sep}" in name:
            return False
        frame = frame.f_back
    return False


def test_training_steps_make_no_host_sync_between_interval_reads(out_dir, monkeypatch):
    """``.item()``/``float()``/``.tolist()``/``.cpu()`` on a tensor during a step make the host wait for
    the device; seqbench reads the training loss once per interval, never per step."""
    reads: list[int] = []
    in_step = {"step": None}

    class Window(pl.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            in_step["step"] = trainer.global_step + 1

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            in_step["step"] = None

    def counted(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *a, **k):
            if in_step["step"] is not None and _called_from_seqbench():
                reads.append(in_step["step"])
            return original(self, *a, **k)

        return wrapper

    for name in ("item", "__float__", "tolist", "cpu", "numpy", "__bool__"):
        monkeypatch.setattr(torch.Tensor, name, counted(name))
    train_run(
        small(out_dir, "train.max_steps=40", "train.val_every=20", "eval.test=false"),
        callbacks=[Window()],
        progress=False,
    )
    assert sorted(set(reads)) == [20, 40], reads  # the interval reads only (min(CHECK_EVERY, val_every) = 20)
    assert reads.count(20) == 1 and reads.count(40) == 1, reads


def test_results_record_where_training_ran(out_dir):
    r = train_run(small(out_dir, "train.accelerator=cpu", "train.precision=64-true"), progress=False)
    assert r["device"] == "cpu" and r["precision"] == "64-true" and r["world_size"] == 1
    assert r["tokens_per_s"] == pytest.approx(r["samples_per_s"] * _seq_len(r), rel=1e-3)
    assert r["train_time_s"] <= r["wall_time_s"]


def _seq_len(r) -> int:
    from seqbench.bench.config import validate

    return validate(r["config"]).task.seq_len()


def test_train_time_counts_training_steps_and_excludes_validation(out_dir):
    class Slow(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            time.sleep(0.05)  # 6 steps: >= 0.3 s of training

        def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx, dataloader_idx=0):
            time.sleep(0.2)  # 3 validations of one batch: >= 0.6 s that training time must not include

    r = train_run(
        small(out_dir, "train.max_steps=6", "train.val_every=2", "eval.test=false"), callbacks=[Slow()], progress=False
    )
    assert 0.3 <= r["train_time_s"] <= r["wall_time_s"] - 0.6
    assert r["final"]["time/train_s"] == pytest.approx(r["train_time_s"], abs=1e-3)


def test_steady_throughput_leaves_out_the_warm_up_steps(out_dir, monkeypatch):
    """The first WARM_STEPS steps are slow (as torch.compile's are): tokens_per_s includes them,
    steady_tokens_per_s does not, and the closing line shows both. The slowness is a fake clock's: each
    warm-up step moves perf_counter on by 10 s, so the bounds hold on a machine of any speed or load
    (a real sleep flaked on a busy CI machine)."""
    from seqbench.bench.core.text import speed_summary
    from seqbench.bench.training.callbacks import WARM_STEPS

    real, ahead = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + ahead[0])
    per_step = 10.0

    class SlowStart(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.global_step <= WARM_STEPS:
                ahead[0] += per_step

    steps = 3 * WARM_STEPS
    r = train_run(
        small(out_dir, f"train.max_steps={steps}", f"train.val_every={steps}", "eval.test=false"),
        callbacks=[SlowStart()],
        progress=False,
    )
    tokens = (steps - WARM_STEPS) * r["config"]["train"]["batch_size"] * _seq_len(r)
    assert r["train_time_s"] >= ahead[0] == per_step * WARM_STEPS  # the whole-run time holds every fake second
    # the steady window holds at most one warm-up step's jump (the last may land after the clock's mark)
    assert r["steady_tokens_per_s"] >= tokens / (r["train_time_s"] - ahead[0] + per_step)
    assert r["steady_tokens_per_s"] > 2 * r["tokens_per_s"]  # unless a real run took over 100 s
    assert "after warm-up" in speed_summary(r.results) and "steady_mfu" not in r.results  # no MFU on a CPU


def test_short_runs_have_no_steady_throughput(out_dir):
    r = train_run(small(out_dir, "train.max_steps=30", "train.val_every=30", "eval.test=false"), progress=False)
    assert (
        "tokens_per_s" in r.results and "steady_tokens_per_s" not in r.results
    )  # 10 steps after warm-up: too few to tell


def test_closing_line_shows_only_measured_speed_facts():
    from seqbench.bench.core.text import speed_summary

    base = {
        "steps": 10,
        "train_time_s": 2.0,
        "wall_time_s": 3.0,
        "samples_per_s": 320.0,
        "tokens_per_s": 6400.0,
        "device": "cpu",
        "precision": "32-true",
        "world_size": 1,
    }
    line = speed_summary(base)
    assert line == "10 steps in 2.0s training (3.0s wall), 320 samples/s, 6.4k tokens/s, on cpu (32-true)"
    assert "FLOP/s" not in line and "MFU" not in line
    gpu = speed_summary(
        {
            **base,
            "device": "cuda:0",
            "device_name": "NVIDIA H100",
            "precision": "bf16-mixed",
            "world_size": 2,
            "model_flops_per_s": 2.5e14,
            "mfu": 0.126,
        }
    )
    assert gpu.endswith("250TFLOP/s, MFU 12.6%, on NVIDIA H100 x2 (bf16-mixed)")
