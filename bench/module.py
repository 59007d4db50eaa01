"""The one LightningModule: any registered model on any compatible task.

It never looks at the model's or the task's name: batches come from ``task.loader`` and
``task.materialize``, outputs from ``net(batch, state)``, losses and metrics from the task.
"""
from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
import torchmetrics
from torch import nn

from seqbench.bench.config import RunConfig
from seqbench.bench.schedules import lr_multiplier
from seqbench.models.base import build_model
from seqbench.tasks.base import Batch, Task

SPLITS = ("val", "test")


def _detach(state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(_detach(s) for s in state)


class SeqModule(pl.LightningModule):
    def __init__(self, cfg: RunConfig, task: Task):
        super().__init__()
        self.cfg, self.task, self.spec = cfg, task, task.spec
        self.net = build_model(cfg.model, self.spec)
        self.eval_metrics = nn.ModuleDict({s: nn.ModuleDict(task.metrics()) for s in SPLITS})
        self.eval_loss = nn.ModuleDict({s: torchmetrics.MeanMetric() for s in SPLITS})
        self.eval_prefix = {"val": "val", "test": "test"}  # test at other lengths: "test@<L>"
        self.eval_length: int | None = None  # None: the task's training length
        self._state: Any = None  # recurrent state carried across batches (stateful tasks)
        self.train_loss_sum = 0.0  # running sum since the last validation (metrics.csv)
        self.train_loss_n = 0
        self.last_train_loss = float("nan")

    # -- data -------------------------------------------------------------------------
    def train_dataloader(self):
        # start at the global step so a resumed run continues the same batch stream
        return self.task.loader("train", self.cfg.train.batch_size, rank=self.global_rank,
                                world_size=self.trainer.world_size, start=self.trainer.global_step)

    def val_dataloader(self):
        return self.task.loader("val", self.cfg.train.batch_size, n_batches=self.cfg.train.val_batches,
                                rank=self.global_rank, world_size=self.trainer.world_size)

    def test_dataloader(self):
        return self.task.loader("test", self.cfg.train.batch_size, length=self.eval_length,
                                n_batches=self.cfg.eval.test_batches, rank=self.global_rank,
                                world_size=self.trainer.world_size)

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Batch:
        return self.task.materialize(batch, self.device)

    # -- steps ------------------------------------------------------------------------
    def forward(self, batch: Batch, state: Any = None):
        return self.net(batch, state)

    def model_step(self, batch: Batch, carry: bool) -> tuple[torch.Tensor, torch.Tensor]:
        state = self._state if (carry and self.spec.stateful) else None
        out, state = self.net(batch, state)
        if carry and self.spec.stateful:
            self._state = _detach(state)  # truncated BPTT: keep the value, cut the graph
        return self.task.loss(out, batch), out

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        loss, _ = self.model_step(batch, carry=True)
        v = float(loss.detach())  # one host sync per step: divergence check, metrics.csv mean, logger
        self.last_train_loss = v
        self.train_loss_sum += v
        self.train_loss_n += 1
        # straight to the logger at Lightning's cadence: self.log's per-step bookkeeping cost
        # ~0.5 ms/step on CPU (benchmarks/overhead.py) and nothing reads train/loss from it
        if self.logger is not None and (self.global_step + 1) % self.trainer.log_every_n_steps == 0:
            self.logger.log_metrics({"train/loss": v}, step=self.global_step)
        return loss

    def _eval_step(self, batch: Batch, split: str) -> None:
        loss, out = self.model_step(batch, carry=True)
        self.eval_loss[split].update(loss.detach(), weight=batch.size)
        self.task.update_metrics(self.eval_metrics[split], out.detach(), batch, net=self.net)

    def _eval_start(self) -> None:
        self._saved_state, self._state = self._state, None

    def _eval_end(self, split: str) -> None:
        prefix = self.eval_prefix[split]
        values = {f"{prefix}/loss": self.eval_loss[split].compute()}
        for name, m in self.eval_metrics[split].items():
            values[f"{prefix}/{name}"] = m.compute()
            m.reset()
        self.eval_loss[split].reset()
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
        checkpoint["seqbench"] = {"torch_rng": torch.get_rng_state(), "train_loss_sum": self.train_loss_sum,
                                  "train_loss_n": self.train_loss_n, "state": self._state}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        extra = checkpoint.get("seqbench", {})
        if "torch_rng" in extra:
            torch.set_rng_state(extra["torch_rng"])
        self.train_loss_sum = extra.get("train_loss_sum", 0.0)
        self.train_loss_n = extra.get("train_loss_n", 0)
        if checkpoint.get("global_step", 0) % self.cfg.train.val_every == 0:
            # saved just before that step's validation, which then reset the running mean
            self.train_loss_sum, self.train_loss_n = 0.0, 0
        self._state = extra.get("state")

    # -- optimisation -------------------------------------------------------------------
    def configure_optimizers(self):
        o = self.cfg.optim
        params = self.net.parameters()
        if o.optimizer == "adam":
            opt = torch.optim.Adam(params, lr=o.lr, weight_decay=o.weight_decay)
        elif o.optimizer == "adamw":
            opt = torch.optim.AdamW(params, lr=o.lr, weight_decay=o.weight_decay)
        elif o.optimizer == "radam":
            opt = torch.optim.RAdam(params, lr=o.lr, weight_decay=o.weight_decay)
        else:
            opt = torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)
        max_steps = self.cfg.train.max_steps
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda step: lr_multiplier(step, warmup_steps=o.warmup_steps, max_steps=max_steps,
                                            schedule=o.schedule, min_ratio=o.min_lr_ratio))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
