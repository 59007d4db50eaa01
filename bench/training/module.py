"""The one LightningModule: any registered model on any compatible task.

It never looks at the model's or the task's name: batches come from ``task.loader`` and
``task.materialize``, outputs from ``net(batch, state)``, losses and metrics from the task.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import IO, Any

import pytorch_lightning as pl
import torch
import torchmetrics
from lightning_fabric.utilities.types import _MAP_LOCATION_TYPE
from torch import nn

from seqbench.bench.config import RunConfig, load_config
from seqbench.bench.core import artifacts
from seqbench.bench.core.contract import Batch
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import TASKS
from seqbench.bench.training.schedules import lr_multiplier
from seqbench.models.base import build_model, detach_state
from seqbench.tasks.base import Task

SPLITS = ("val", "test")
CHECK_EVERY = 50  # steps between host reads of the training loss (divergence check, logger); capped at val_every


class LossMeter:
    """Training losses summed on the device, read to the host only when asked.

    A ``float(loss)`` per step makes the host wait for the GPU every step, and a small model's step
    on a GPU is then mostly that wait. ``add`` queues two tiny device ops; ``sync`` (every
    ``CHECK_EVERY`` steps, at each validation and checkpoint) moves the window's sum and maximum
    to the host in one transfer. ``take_mean`` is the metrics.csv ``train/loss`` (mean since the
    previous row); ``take_worst`` feeds the divergence check (NaN stays NaN through the maximum).
    """

    def __init__(self) -> None:
        self._sum: torch.Tensor | None = None  # device, this window
        self._max: torch.Tensor | None = None
        self._n = 0
        self._steps: list[int] = []  # first and last step of the window
        self.sum, self.n = 0.0, 0  # host, since the last take_mean
        self.worst: float | None = None  # host, largest loss since the last take_worst
        self.worst_steps = (0, 0)

    def add(self, loss: torch.Tensor, step: int) -> None:
        v = loss.detach().float()
        if self._sum is None or self._max is None:
            self._sum, self._max, self._steps = v, v, [step, step]
        else:
            self._sum, self._max = self._sum + v, torch.maximum(self._max, v)
            self._steps[1] = step
        self._n += 1

    def sync(self) -> float | None:
        """Move the device window to the host; returns the window's mean (None if it was empty)."""
        if self._sum is None or self._max is None:
            return None
        s, m = torch.stack([self._sum, self._max]).tolist()  # the one host transfer
        n, (first, last) = self._n, self._steps
        self.sum, self.n = self.sum + s, self.n + n
        if self.worst is None:
            self.worst, self.worst_steps = m, (first, last)
        else:
            if math.isnan(m) or m > self.worst:
                self.worst = m
            self.worst_steps = (self.worst_steps[0], last)
        self._sum, self._max, self._n = None, None, 0
        return s / n

    def take_mean(self) -> float:
        self.sync()
        mean = self.sum / self.n if self.n else float("nan")
        self.sum, self.n = 0.0, 0
        return mean

    def take_worst(self) -> tuple[float | None, int, int]:
        """(largest loss, first step, last step) read since the previous call; no device sync."""
        worst, (first, last) = self.worst, self.worst_steps
        self.worst = None
        return worst, first, last

    def state_dict(self) -> dict[str, float]:
        self.sync()
        return {"train_loss_sum": self.sum, "train_loss_n": self.n}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sum, self.n = float(state.get("train_loss_sum", 0.0)), int(state.get("train_loss_n", 0))


def build_task(cfg: RunConfig) -> Task:
    """The task of ``cfg``, built from the run's seed and set up (its data made or read)."""
    task = TASKS.get(cfg.task.name).cls(cfg.task, seed=cfg.seed)
    task.setup()
    return task


class SeqModule(pl.LightningModule):
    def __init__(self, cfg: RunConfig, task: Task):
        super().__init__()
        self.cfg, self.task, self.spec = cfg, task, task.spec
        self.net = build_model(cfg.model, self.spec)
        # per split: the task's metrics and the mean loss, typed here and registered below (so they follow
        # the module's device; a ModuleDict hands its entries back as plain Modules)
        self._metrics = {s: task.metrics() for s in SPLITS}
        self._loss = {s: torchmetrics.MeanMetric() for s in SPLITS}
        self.eval_metrics = nn.ModuleDict({s: nn.ModuleDict(m) for s, m in self._metrics.items()})
        self.eval_loss = nn.ModuleDict(self._loss)
        self._test_length: int | None = None  # set only inside ``evaluate_at``
        self._test_split = "test"  # the split ``evaluate_at`` reads ("val" for ``seqbench eval --split val``)
        self._state: Any = None  # recurrent state carried across batches (stateful tasks)
        self.train_loss = LossMeter()
        self.trained_step = -1  # from_checkpoint: the optimizer step of the weights it loaded

    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | Path | IO[Any],
        map_location: _MAP_LOCATION_TYPE = None,
        hparams_file: str | Path | None = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> SeqModule:
        """Lightning's habit, on a seqbench checkpoint: a ``<run>/checkpoints/last.ckpt`` is read through
        its run folder (config.yaml rebuilds the task and model), as ``seqbench.load_model(run)`` does;
        anything else is one line pointing there (the checkpoint holds weights, not what rebuilds them)."""
        path = Path(str(checkpoint_path))
        run = path.parent.parent
        lightnings = {"hparams_file": hparams_file, "strict": strict, "weights_only": weights_only}
        refused = [*(k for k, v in lightnings.items() if v is not None), *kwargs]
        if path.parent.name != "checkpoints" or not (run / artifacts.CONFIG).is_file() or refused:
            extra = f" ({', '.join(refused)} not taken)" if refused else ""
            raise UserError(
                f"checkpoint_path: {path} is not a checkpoint of a seqbench run folder{extra}; load "
                "a trained run with seqbench.load_model(RUN_ID or run folder)"
            )
        if not path.is_file():
            raise UserError(f"checkpoint_path: {path} does not exist; its run's checkpoints are in {path.parent}")
        model = cls.from_checkpoint(load_config(run / artifacts.CONFIG), path)
        return model.to(map_location) if isinstance(map_location, (str, torch.device)) else model

    @classmethod
    def from_checkpoint(cls, cfg: RunConfig, checkpoint: Path) -> SeqModule:
        """The module of ``cfg`` (its task built from the run's seed) holding the weights of ``checkpoint``,
        a seqbench run's, in eval mode on the CPU; ``trained_step`` is the optimizer step of those weights.
        ``seqbench.load_model`` and ``load_from_checkpoint`` both read a run through here."""
        ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)  # loads no code
        pl.seed_everything(cfg.seed, workers=True, verbose=False)
        module = cls(cfg, build_task(cfg))
        # a run trained with train.compile=true saved its weights under the compiled wrapper's names
        state = {k.replace("._orig_mod.", "."): v for k, v in ckpt["state_dict"].items()}
        module.load_state_dict(state)
        module.trained_step = int(ckpt.get("global_step", -1))  # which step these weights are
        return module.eval()

    # -- data -------------------------------------------------------------------------
    def train_dataloader(self):
        # start at the global step so a resumed run continues the same batch stream
        return self.task.loader(
            "train",
            self.cfg.train.batch_size,
            rank=self.global_rank,
            world_size=self.trainer.world_size,
            start=self.trainer.global_step,
        )

    def val_dataloader(self):
        return self.task.loader(
            "val",
            self.cfg.train.batch_size,
            n_batches=self.cfg.train.val_batches,
            rank=self.global_rank,
            world_size=self.trainer.world_size,
        )

    def test_dataloader(self):
        return self.task.loader(
            self._test_split,
            self.cfg.train.batch_size,
            length=self._test_length,
            n_batches=self.cfg.eval.test_batches,
            rank=self.global_rank,
            world_size=self.trainer.world_size,
        )

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Batch:
        return self.task.materialize(batch, self.device)

    # -- steps ------------------------------------------------------------------------
    def forward(self, batch: Batch, state: Any = None):
        return self.net(batch, state)

    def model_step(self, batch: Batch, carry: bool) -> tuple[torch.Tensor, torch.Tensor]:
        state = self._state if (carry and self.spec.stateful) else None
        out, state = self.net(batch, state)
        if carry and self.spec.stateful:
            self._state = detach_state(state)  # truncated BPTT: keep the value, cut the graph
        return self.task.loss(out, batch), out

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        loss, _ = self.model_step(batch, carry=True)
        step = self.global_step + 1  # the optimizer step this batch makes
        self.train_loss.add(loss, step)  # on the device: no host sync on the hot path
        if step % self.trainer.log_every_n_steps == 0:  # type: ignore[attr-defined]  # set by Lightning, undeclared
            # the interval read (divergence check, logger); straight to the logger, not self.log,
            # whose per-step bookkeeping cost ~0.5 ms/step on CPU (benchmarks/overhead.py)
            mean = self.train_loss.sync()
            if self.logger is not None and mean is not None:
                self.logger.log_metrics({"train/loss": mean}, step=self.global_step)
        return loss

    def _eval_step(self, batch: Batch, split: str) -> None:
        loss, out = self.model_step(batch, carry=True)
        self._loss[split].update(loss.detach(), weight=batch.size)
        self.task.update_metrics(self._metrics[split], out.detach(), batch, net=self.net)

    def _eval_start(self) -> None:
        self._saved_state, self._state = self._state, None

    def evaluate_at(self, trainer: pl.Trainer, length: int | None, split: str = "test") -> dict[str, float]:
        """Metrics of ``split`` at sequence ``length`` (None: the training length), keyed ``test/...`` or
        ``test@<length>/...``."""
        self._test_length, self._test_split = length, split
        try:
            trainer.test(self, verbose=False)
        finally:
            self._test_length, self._test_split = None, "test"
        prefix = self._prefix(split, length)
        return {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(prefix + "/")}

    @staticmethod
    def _prefix(split: str, length: int | None) -> str:
        return split if length is None else f"{split}@{length}"

    def _eval_end(self, split: str) -> None:
        prefix = self._prefix(self._test_split, self._test_length) if split == "test" else split
        values = {f"{prefix}/loss": self._loss[split].compute()}
        for name, m in self._metrics[split].items():
            values[f"{prefix}/{name}"] = m.compute()
            m.reset()
        self._loss[split].reset()
        self.log_dict({k: v.float() for k, v in values.items()}, sync_dist=False)
        self._state = self._saved_state

    def on_validation_epoch_start(self) -> None:
        self._eval_start()

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def on_validation_epoch_end(self) -> None:
        self._eval_end("val")

    def on_test_epoch_start(self) -> None:
        self._eval_start()

    def test_step(self, batch: Batch, batch_idx: int) -> None:
        self._eval_step(batch, "test")

    def on_test_epoch_end(self) -> None:
        self._eval_end("test")

    # -- checkpoints: what Lightning does not save itself ---------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["seqbench"] = {
            "torch_rng": torch.get_rng_state(),
            **self.train_loss.state_dict(),
            "state": self._state,
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        extra = checkpoint.get("seqbench", {})
        if "torch_rng" in extra:
            torch.set_rng_state(extra["torch_rng"])
        self.train_loss.load_state_dict(extra)
        if checkpoint.get("global_step", 0) % self.cfg.train.val_every == 0:
            # saved just before that step's validation, which then reset the running mean
            self.train_loss.load_state_dict({})
        self._state = extra.get("state")

    # -- optimisation -------------------------------------------------------------------
    def configure_optimizers(self):
        o = self.cfg.optim
        params = self.net.parameters()
        betas = o.adam_betas
        opt: torch.optim.Optimizer
        if o.optimizer == "adam":
            opt = torch.optim.Adam(params, lr=o.lr, betas=betas, weight_decay=o.weight_decay)
        elif o.optimizer == "adamw":
            opt = torch.optim.AdamW(params, lr=o.lr, betas=betas, weight_decay=o.weight_decay)
        elif o.optimizer == "radam":
            opt = torch.optim.RAdam(params, lr=o.lr, betas=betas, weight_decay=o.weight_decay)
        else:
            opt = torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)
        max_steps = self.cfg.train.max_steps
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda step: lr_multiplier(
                step,
                warmup_steps=o.warmup_steps,
                max_steps=max_steps,
                schedule=o.schedule,
                min_ratio=o.min_lr_ratio,
                decay_from=o.decay_from,
            ),
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
