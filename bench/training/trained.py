"""A trained run read back: its final weights (``checkpoints/last.ckpt``) in a ``SeqModule``, and
its evaluation at new lengths or on another split without training (``seqbench eval``,
``seqbench.load_model``).

The run's folder is only read here: the new evaluation's settings live in memory (an
``eval.lengths`` override changes the config hash, so it is never written back to config.yaml).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl
import torch

from seqbench.bench.config import RunConfig, load_config, override
from seqbench.bench.core import artifacts
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, versions
from seqbench.bench.core.settings import parse_pairs
from seqbench.bench.training.module import SeqModule
from seqbench.bench.training.run_results import lengths_of
from seqbench.bench.training.train import quiet_lightning

EVAL_KEYS = ("eval.lengths", "eval.test_batches")  # what an evaluation of a trained run may change
SPLITS = ("test", "val")


def run_dir_of(run: str | Path, out_dir: str | Path = "outputs") -> Path:
    try:
        return artifacts.find_run_dir(run, out_dir)
    except ValueError as e:
        raise UserError(f"run: {e}") from None


def checkpoint_of(run_dir: Path) -> Path:
    path = run_dir / artifacts.CHECKPOINT
    if not path.is_file():
        raise UserError(
            f"run: {run_dir.name} has no {artifacts.CHECKPOINT} (trained with "
            "train.checkpoint_every=null, or before seqbench kept the final step); train it again"
        )
    return path


def load_model(run: str | Path, out_dir: str | Path = "outputs", cfg: RunConfig | None = None) -> SeqModule:
    """The trained module of ``run`` (a run folder, or a run id under ``<out_dir>/runs``) in eval
    mode, on the CPU: ``model.cfg`` is its RunConfig, ``model.net`` the network, ``model.task`` the
    task built from the run's seed. ``cfg`` replaces the saved config (same run, other eval settings).
    """
    run_dir = run_dir_of(run, out_dir)
    cfg = cfg or load_config(run_dir / artifacts.CONFIG)
    return SeqModule.from_checkpoint(cfg, checkpoint_of(run_dir))


def eval_config(cfg: RunConfig, overrides: Sequence[str]) -> RunConfig:
    """``cfg`` with ``eval.*`` overrides; any other key is refused (it would be another experiment)."""
    pairs = parse_pairs(overrides)
    other = [k for k, _ in pairs if k not in EVAL_KEYS]
    if other:
        raise UserError(
            f"eval: {', '.join(other)} cannot change for a trained run; only "
            f"{', '.join(EVAL_KEYS)} apply (train another run with `seqbench run` for the rest)"
        )
    return override(cfg, **dict(pairs)) if pairs else cfg


@dataclass
class Evaluated:
    run_dir: Path
    record: artifacts.EvalRecord
    path: Path
    warning: str | None  # the checkpoint is not the run's last step


def evaluate_run(
    run: str | Path,
    overrides: Sequence[str] = (),
    split: str = "test",
    out_dir: str | Path = "outputs",
    argv: Sequence[str] = (),
) -> Evaluated:
    """Evaluate a trained run's checkpoint on ``split`` at its training length and each
    ``eval.lengths``; writes ``<run>/evals/<n>.json`` and returns it."""
    if split not in SPLITS:
        raise UserError(f"--split: {split!r}; choose from {', '.join(SPLITS)}")
    t0 = time.perf_counter()
    run_dir = run_dir_of(run, out_dir)
    cfg = eval_config(load_config(run_dir / artifacts.CONFIG), overrides)
    quiet_lightning()
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    module = load_model(run_dir, cfg=cfg)
    trainer = pl.Trainer(
        accelerator=cfg.train.accelerator,
        devices=1,
        precision=cfg.train.precision,
        logger=False,
        callbacks=[],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
        default_root_dir=str(run_dir),
    )
    lengths: list[int | None] = [None, *cfg.eval.lengths]
    metrics: dict[str, float] = {}
    for length in lengths:
        metrics.update(module.evaluate_at(trainer, length, split))
    curve = lengths_of(cfg, module.task, metrics) if split == "test" else None
    done = artifacts.read_results(run_dir) or {}
    warning = None
    if not done:
        warning = (
            f"{run_dir.name} has not finished (no results.json); evaluated its checkpoint at step {module.trained_step}"
        )
    elif done.get("steps") is not None and done["steps"] != module.trained_step:
        warning = (
            f"{run_dir.name}: its checkpoint is step {module.trained_step} of the {done['steps']} it "
            f"trained (saved before seqbench kept the final step); evaluated step {module.trained_step}"
        )
    record: artifacts.EvalRecord = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "split": split,
        "lengths": lengths,
        "batches": cfg.eval.test_batches,
        "step": module.trained_step,
        "metrics": metrics,
        "eval_s": round(time.perf_counter() - t0, 3),
        **({"length_generalisation": curve} if curve is not None else {}),
        "argv": list(argv),
        "versions": versions(),
        "git_sha": git_sha(),
    }
    path = artifacts.write_eval(run_dir, record)
    return Evaluated(run_dir, {**record, "n": int(path.stem)}, path, warning)
