"""Two CPU processes (ddp_spawn, gloo): one run folder, one results file, sensible metrics."""

from __future__ import annotations

import csv
import json
import math

import pytest

from seqbench.bench.config import build_config
from seqbench.bench.training.distributed import _rank_strategy, spawned
from seqbench.bench.training.train import train_run
from tests.helpers import tiny_overrides


def test_spawn_strategies_are_launched_by_seqbench():
    assert spawned("ddp_spawn") and spawned("ddp_spawn_find_unused_parameters_true") and spawned("ddp_notebook")
    assert not spawned("ddp") and not spawned("auto")


@pytest.mark.slow
def test_two_process_cpu_ddp_writes_one_results_file(out_dir):
    extra = {"train.max_steps": 6, "train.val_every": 3, "diagnostics.gradients": True, "diagnostics.every": 3}
    cfg = build_config(
        {},
        tiny_overrides(
            "copy",
            "lstm",
            out_dir,
            **extra,
            **{"train.strategy": "ddp_spawn", "train.devices": 2, "train.accelerator": "cpu"},
        ),
    )
    r = train_run(cfg, progress=False)
    runs = list((out_dir / "runs").iterdir())
    assert [p.name for p in runs] == [r["run_id"]]
    saved = json.loads((runs[0] / "results.json").read_text())
    assert saved == r.results
    assert r["status"] == "completed" and r["steps"] == 6
    assert r["config"]["train"]["strategy"] == "ddp_spawn"
    rows = list(csv.DictReader((runs[0] / "metrics.csv").open()))
    assert [int(x["step"]) for x in rows] == [3, 6]
    assert all(math.isfinite(float(x["train/loss"])) and math.isfinite(float(x["val/loss"])) for x in rows)
    assert [d["step"] for d in json.loads((runs[0] / "diagnostics.json").read_text())["records"]] == [0, 3]

    single = train_run(build_config({}, tiny_overrides("copy", "lstm", out_dir / "one", **extra)), progress=False)
    assert set(r["final"]) == set(single["final"]) and set(r["best"]) == set(single["best"])
    for k in ("val/loss", "test/loss"):  # same model, same steps: same ballpark, not identical data
        assert math.isfinite(r["final"][k]) and abs(r["final"][k] - single["final"][k]) < 0.5 * single["final"][k]
    assert 0.0 <= r["final"]["val/acc"] <= 1.0


def test_two_devices_with_the_default_strategy_make_one_run_folder(out_dir):
    """Strategy ``auto`` with devices=2 is Lightning's ``ddp``, which re-launches the command per rank
    (a second run folder); seqbench starts the ranks itself instead."""
    cfg = build_config(
        {},
        tiny_overrides(
            "copy",
            "lstm",
            out_dir,
            **{"train.devices": 2, "train.accelerator": "cpu", "train.max_steps": 2, "eval.test": False},
        ),
    )
    assert cfg.train.strategy == "auto"
    r = train_run(cfg, progress=False)
    runs = [p for p in (out_dir / "runs").iterdir()]
    assert [p.name for p in runs] == [r["run_id"]]
    assert list(out_dir.rglob("results.json")) == [runs[0] / "results.json"]
    assert r["status"] == "completed" and r["steps"] == 2 and r["world_size"] == 2 and r["device"] == "cpu"


def test_rank_strategy_never_spawns_or_relaunches():
    assert _rank_strategy("auto") == "ddp" and _rank_strategy("ddp_spawn") == "ddp"
    assert _rank_strategy("ddp_notebook") == "ddp" and _rank_strategy("fsdp") == "fsdp"
    assert _rank_strategy("ddp_spawn_find_unused_parameters_true") == "ddp_find_unused_parameters_true"
