"""What was trained is kept and reused: the final step's checkpoint, ``seqbench eval`` of a trained run
at new lengths without training, ``load_runs`` columns and ``seqbench.load_model``."""

from __future__ import annotations

import json

import pytest
import pytorch_lightning as pl
import torch

import seqbench
from seqbench.bench.commands.eval import evaluate
from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.train import train_run
from seqbench.reports.runs import load_runs
from tests.helpers import run_cli

# a copy run long enough to learn something (so weights differ from the init) and short enough for seconds
BASE = [
    "task=copy",
    "task.delay=4",
    "task.n_symbols=2",
    "task.alphabet=3",
    "model=lstm",
    "model.d_model=16",
    "train.max_steps=30",
    "train.val_every=10",
    "train.batch_size=16",
    "train.deterministic=true",
    "eval.test_batches=2",
    "tracking.wandb=off",
]


class LastStep(pl.Callback):
    """The network's weights right after the last optimizer step."""

    def __init__(self, last: int):
        self.last, self.state = last, None

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if trainer.global_step == self.last:
            self.state = {k: v.detach().clone() for k, v in module.net.state_dict().items()}


def test_final_checkpoint_is_the_last_step_of_a_run_shorter_than_checkpoint_every(tmp_path):
    seen = LastStep(30)
    r = train_run(
        build_config({}, BASE + ["train.checkpoint_every=200", f"out_dir={tmp_path}"]), callbacks=[seen], progress=False
    )
    ckpt = torch.load(tmp_path / "runs" / r["run_id"] / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 30 == r["steps"]
    saved = {k[len("net.") :]: v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
    assert saved.keys() == seen.state.keys()
    for k, v in seen.state.items():
        assert torch.equal(saved[k], v), k


def test_final_checkpoint_when_the_last_step_falls_between_saves(tmp_path):
    r = train_run(build_config({}, BASE + ["train.checkpoint_every=7", f"out_dir={tmp_path}"]), progress=False)
    ckpt = torch.load(tmp_path / "runs" / r["run_id"] / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 30  # not 28, the last multiple of 7


def test_eval_at_a_longer_length_matches_training_with_it_and_trains_nothing(tmp_path, monkeypatch):
    plain = train_run(build_config({}, BASE + [f"out_dir={tmp_path / 'a'}"]), progress=False)
    # the same training with eval.lengths asked up front (another config hash: trained again)
    asked = train_run(build_config({}, BASE + ["eval.lengths=[12]", f"out_dir={tmp_path / 'b'}"]), progress=False)
    run_dir = tmp_path / "a" / "runs" / plain["run_id"]
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    ckpt_before = (run_dir / "checkpoints" / "last.ckpt").read_bytes()

    def no_training(*args, **kwargs):
        raise AssertionError("evaluate trained")

    with monkeypatch.context() as m:  # no training: a fit or a training step fails the test (no wall clock)
        m.setattr(pl.Trainer, "fit", no_training)
        m.setattr(pl.LightningModule, "backward", no_training)
        res = evaluate([plain["run_id"]], ["eval.lengths=[12]"], out_dir=tmp_path / "a")
    ev = res.runs[0]
    assert ev.path == run_dir / "evals" / "1.json" and ev.warning is None
    rec = json.loads(ev.path.read_text())
    assert rec["split"] == "test" and rec["lengths"] == [None, 12] and rec["step"] == 30 and rec["batches"] == 2
    # the same numbers as the run that evaluated at 12 when it finished training
    for key in ("test/acc", "test/loss", "test@12/acc", "test@12/loss"):
        assert rec["metrics"][key] == pytest.approx(asked["final"][key], abs=1e-6), key
    # nothing of the run changed: config (hash), metrics.csv, results.json, checkpoint
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    assert (run_dir / "checkpoints" / "last.ckpt").read_bytes() == ckpt_before

    # a second evaluation on the val split is recorded beside the first; load_runs shows both
    evaluate([str(run_dir)], ["eval.lengths=[16]"], split="val")
    df = load_runs(tmp_path / "a")
    row = df.iloc[0]
    assert row["eval.test@12/acc"] == pytest.approx(rec["metrics"]["test@12/acc"])
    assert "eval.val@16/acc" in df.columns and row["config_hash"] == plain["config_hash"]
    # the report's table takes the same run columns
    from seqbench.bench.core.artifacts import read_results
    from seqbench.sweeps.table import run_fields

    assert run_fields(run_dir, read_results(run_dir))["eval.test@12/acc"] == row["eval.test@12/acc"]


def test_eval_refuses_settings_that_would_be_another_experiment_and_unknown_runs(tmp_path):
    r = train_run(
        build_config({}, BASE + ["train.max_steps=2", "train.val_every=2", f"out_dir={tmp_path}"]), progress=False
    )
    with pytest.raises(UserError, match=r"eval: model.d_model cannot change for a trained run; only eval.lengths"):
        evaluate([r["run_id"]], ["model.d_model=32"], out_dir=tmp_path)
    with pytest.raises(UserError, match=rf"run: no run 'typo' .* known: {r['run_id']}"):
        evaluate([r["run_id"], "typo"], out_dir=tmp_path)
    assert not (tmp_path / "runs" / r["run_id"] / "evals").exists()  # refused before any work
    cli = run_cli("eval", r["run_id"], "--out-dir", str(tmp_path), "--split", "val", "eval.lengths=[9]", cwd=tmp_path)
    assert cli.returncode == 0 and "val@9/acc" in cli.stdout, cli.stderr
    cli = run_cli("eval", "nope", "--out-dir", str(tmp_path), cwd=tmp_path)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1, cli.stderr


def test_load_model_returns_the_trained_network_and_its_config(tmp_path):
    r = train_run(build_config({}, BASE + [f"out_dir={tmp_path}"]), progress=False)
    model = seqbench.load_model(r["run_id"], out_dir=tmp_path)
    assert model.cfg.config_hash() == r["config_hash"] and not model.training and model.trained_step == 30
    ckpt = torch.load(tmp_path / "runs" / r["run_id"] / "checkpoints" / "last.ckpt", weights_only=True)
    assert torch.equal(
        model.net.state_dict()[next(iter(model.net.state_dict()))],
        ckpt["state_dict"]["net." + next(iter(model.net.state_dict()))],
    )
    batch = next(iter(model.task.loader("test", 4, n_batches=1)))
    out, _ = model(model.task.materialize(batch, model.device))
    assert out.shape[0] == 4
