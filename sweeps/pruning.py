"""Optuna pruning as a native Lightning callback.

``optuna_integration.PyTorchLightningPruningCallback`` imports the ``lightning`` package, not
``pytorch_lightning``, so seqbench has its own. It reports the watched metric at each
validation; when the pruner says stop it ends training the way early stopping does and names
the run's status ``pruned``, so the run still writes its results files, and the runner then
records the trial PRUNED (raising ``optuna.TrialPruned`` for it). The runner attaches it to every
single-objective trial, pruner or not (``pruner: none`` is Optuna's NopPruner), so the study holds
every trial's curve as intermediate values: optuna-dashboard shows them live.

Seed replicates run one after another in a trial; seed ``i`` reports at step
``i * max_steps + global_step``, so the pruner compares replicate ``i`` of one trial with
replicate ``i`` of the others at the same training step.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
import pytorch_lightning as pl

from seqbench.bench.core.artifacts import Status
from seqbench.bench.training.callbacks import RunStopper


class PruningCallback(RunStopper):
    """Report ``metric`` to ``trial`` after every validation; stop the run when told to prune."""

    def __init__(self, trial: optuna.Trial, metric: str, step_offset: int = 0):
        self.trial, self.metric, self.step_offset = trial, metric, step_offset

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.sanity_checking or self.stop_status is not None:
            return
        logged = trainer.callback_metrics.get(self.metric)
        if logged is None:
            return
        value = float(logged)
        if not math.isfinite(value):
            return  # a NaN report would poison the pruner's medians; divergence is handled elsewhere
        step = self.step_offset + trainer.global_step
        self.trial.report(value, step)
        if self.trial.should_prune():
            self.stop(trainer, Status.PRUNED, f"pruned at step {trainer.global_step}: {self.metric} {value:.4g}")
