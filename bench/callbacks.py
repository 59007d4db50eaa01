"""Lightning callbacks the harness always installs: results rows, progress lines, divergence."""
from __future__ import annotations

import math
import os
import sys
import time
from typing import Any

import pytorch_lightning as pl

from seqbench.bench.tracking import RunTracker


def _lr(trainer: pl.Trainer) -> float:
    try:
        return float(trainer.optimizers[0].param_groups[0]["lr"])
    except (IndexError, AttributeError):
        return float("nan")


class ResultsWriter(pl.Callback):
    """One ``metrics.csv`` row per validation; keeps the history for ``best``."""

    def __init__(self, tracker: RunTracker):
        self.tracker = tracker
        self.t0 = time.perf_counter()
        self.last_step = -1

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        self.last_step = trainer.global_step  # every rank: run() decides on a final validation from it
        if trainer.global_rank != 0:
            return
        row: dict[str, Any] = {"step": trainer.global_step, "wall_s": round(time.perf_counter() - self.t0, 3),
                               "lr": _lr(trainer)}
        n = pl_module.train_loss_n
        row["train/loss"] = pl_module.train_loss_sum / n if n else float("nan")
        pl_module.train_loss_sum, pl_module.train_loss_n = 0.0, 0
        for k, v in trainer.callback_metrics.items():
            if k.startswith("val/"):
                row[k] = float(v)
        self.tracker.log_eval(row)


class ProgressPrinter(pl.Callback):
    """One line per validation: step, losses, the task's metrics, baseline, speed."""

    def __init__(self, label: str, max_steps: int, baseline: dict[str, float], stream=None):
        self.label, self.max_steps, self.baseline = label, max_steps, baseline
        self.stream = stream or sys.stdout
        self.t0 = time.perf_counter()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.sanity_checking or trainer.global_rank != 0:
            return
        m = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        parts = [f"[{self.label}] step {trainer.global_step:>6}/{self.max_steps}",
                 f"train/loss {pl_module.last_train_loss:.4f}"]
        parts += [f"{k} {v:.4f}" for k, v in m.items()]
        parts.append("baseline " + " ".join(f"{k} {v:.4f}" for k, v in self.baseline.items()))
        dt = time.perf_counter() - self.t0
        parts.append(f"{trainer.global_step / dt:.1f} steps/s" if dt > 0 else "")
        print("  ".join(p for p in parts if p), file=self.stream, flush=True)


class DivergenceStop(pl.Callback):
    """Stop when the training loss is NaN/Inf or above ``bound``; records the reason."""

    def __init__(self, bound: float | None):
        self.bound = bound
        self.reason: str | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = pl_module.last_train_loss
        if not math.isfinite(loss):
            self.reason = f"non-finite training loss ({loss}) at step {trainer.global_step}"
        elif self.bound is not None and loss > self.bound:
            self.reason = f"training loss {loss:.4g} > train.diverge_loss={self.bound} at step {trainer.global_step}"
        if self.reason:
            trainer.should_stop = True


class AtomicCheckpoint(pl.Callback):
    """``last.ckpt`` every ``every`` steps, written to a temp file and renamed into place,
    so a kill mid-write never leaves a truncated checkpoint."""

    def __init__(self, path, every: int):
        self.path, self.every = path, every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        if step % self.every == 0 and step < trainer.max_steps:
            self.save(trainer)

    def save(self, trainer: pl.Trainer) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        trainer.save_checkpoint(tmp)
        if trainer.global_rank == 0:
            os.replace(tmp, self.path)
