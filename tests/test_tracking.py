"""W&B sits on top of the harness's own files and can never stop a run."""
from __future__ import annotations

import json

import pytorch_lightning.loggers as pl_loggers

from seqbench.bench.config import build_config
from seqbench.bench.training.train import run
from tests.helpers import tiny_overrides


def test_wandb_offline_writes_a_local_run(out_dir, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = build_config({}, tiny_overrides("copy", "gru", out_dir, **{"tracking.wandb": "offline",
                                                                     "tracking.tags": "[a, b]"}))
    r = run(cfg, progress=False)
    assert r["status"] == "completed"
    runs = list((out_dir / "wandb").glob(f"offline-run-*-{r['run_id']}"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb"))
    assert (out_dir / "runs" / r["run_id"] / "results.json").exists()


def test_a_failing_wandb_warns_once_and_training_goes_on(out_dir, monkeypatch, capsys):
    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pl_loggers.WandbLogger, "log_metrics", boom)
    monkeypatch.setattr(pl_loggers.WandbLogger, "log_hyperparams", boom)
    cfg = build_config({}, tiny_overrides("copy", "lstm", out_dir, **{"tracking.wandb": "offline",
                                                                      "train.max_steps": 6}))
    r = run(cfg, progress=False)
    err = capsys.readouterr().err
    assert r["status"] == "completed" and r["steps"] == 6
    assert err.count("W&B logging failed") == 1 and "disk full" in err
    saved = json.loads((out_dir / "runs" / r["run_id"] / "results.json").read_text())
    assert saved["final"]["val/acc"] == r["final"]["val/acc"]
