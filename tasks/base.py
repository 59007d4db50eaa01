"""The Task interface's base class, loaders and shared metrics.

The config (no torch) is in ``tasks/configs/base.py``, where the family is documented."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
import torchmetrics

from seqbench.bench.core.contract import IGNORE, Batch, OutputKind, TaskSpec
from seqbench.tasks.configs.base import TaskConfig, TokenTaskConfig, positive_int  # noqa: F401  (the configs, re-exported beside their modules)


class Task:
    """Base class. Subclasses set ``config_cls`` through the registry decorator."""

    def __init__(self, cfg: TaskConfig, seed: int = 0):
        self.cfg = cfg
        self.seed = seed

    # -- data ---------------------------------------------------------------------
    def setup(self) -> None:
        """Load or prepare data (called once, before ``spec``). Synthetic: nothing."""

    @property
    def spec(self) -> TaskSpec:
        """Subclasses return ``self.build_spec(n_classes=..., ...)`` (sizes known once data is set up)."""
        raise NotImplementedError

    def build_spec(self, **sizes: Any) -> TaskSpec:
        """The TaskSpec with output kind and causality taken from the declared ``facts``."""
        facts = self.cfg.facts
        return TaskSpec(facts.output_kind, causal=facts.causal, **sizes)

    def loader(
        self,
        split: str,
        batch_size: int,
        *,
        length: int | None = None,
        n_batches: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        start: int = 0,
    ) -> Iterable[Any]:
        """Iterable of batch items for a split ("train" is endless unless ``n_batches``).

        ``start`` is the index of the first batch: a resumed run passes its global step
        so it sees exactly the batches the uninterrupted run would have seen.
        """
        raise NotImplementedError

    def materialize(self, item: Any, device: torch.device) -> Batch:
        """Turn a loader item into a Batch on ``device`` (after Lightning's transfer)."""
        return item

    # -- objective ----------------------------------------------------------------
    def loss(self, out: torch.Tensor, batch: Batch) -> torch.Tensor:
        kind = self.cfg.facts.output_kind
        if kind in (OutputKind.TOKENS, OutputKind.SEQ2SEQ):
            return F.cross_entropy(out.flatten(0, 1), batch.y.flatten(), ignore_index=IGNORE)
        if kind is OutputKind.CLASS:
            return F.cross_entropy(out, batch.y)
        return F.mse_loss(out, batch.y)

    def metrics(self) -> dict[str, torchmetrics.Metric]:
        """Fresh metric objects, one per declared metric but "loss", keyed by its name."""
        return {}

    def update_metrics(
        self,
        metrics: dict[str, torchmetrics.Metric],
        out: torch.Tensor,
        batch: Batch,
        net: torch.nn.Module | None = None,
    ) -> None:
        """Update metric objects from one eval batch. ``net`` lets seq2seq tasks decode."""
        raise NotImplementedError

    def baseline(self) -> dict[str, float]:
        """Declared metrics of the best model with no memory of past inputs, e.g. {"loss": .., "acc": ..}."""
        raise NotImplementedError

    def solved(self, metrics: dict[str, float], split: str = "val") -> bool:
        """Whether a run's metrics meet the task's documented success criterion."""
        raise NotImplementedError

    def final_report(self, net: torch.nn.Module, device: torch.device) -> dict[str, Any]:
        """Extra JSON-able results at the end of a run (e.g. a generated text sample)."""
        return {}


class SkipFirst(torch.utils.data.IterableDataset):
    """Drop the first ``n`` items of a stream: resume support for loaders whose batches are
    not addressable by index (the skipped batches are still drawn, so the stream matches)."""

    def __init__(self, ds: Iterable[Any], n: int):
        self.ds, self.n = ds, n

    def __iter__(self):
        return itertools.islice(iter(self.ds), self.n, None)


def make_loader(ds: torch.utils.data.IterableDataset, start: int = 0) -> torch.utils.data.DataLoader:
    """A DataLoader over an iterable of ready batches. It owns its generator, so creating the
    iterator draws nothing from the global RNG (a resumed run's dropout stays in step)."""
    return torch.utils.data.DataLoader(
        SkipFirst(ds, start) if start else ds,
        batch_size=None,
        collate_fn=_identity,
        generator=torch.Generator().manual_seed(0),
    )


def _identity(item: Any) -> Any:
    return item


class TokenAccuracy(torchmetrics.Metric):
    """Accuracy over scored positions of per-step predictions (micro-averaged)."""

    full_state_update = False
    correct: torch.Tensor  # the states add_state registers (declared for the type checker)
    total: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.add_state("correct", torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, preds: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> None:
        self.correct += ((preds == target) & mask).sum().float()
        self.total += mask.sum().float()

    def compute(self) -> torch.Tensor:
        return self.correct / self.total.clamp_min(1.0)


class TokenTask(Task):
    """Shared loss/metrics for per-step classification tasks (copy, recall, ...)."""

    solve_threshold: ClassVar[float] = 0.95  # val/acc at or above this counts as solved

    def metrics(self) -> dict[str, torchmetrics.Metric]:
        return {"acc": TokenAccuracy()}

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        mask = batch.score_mask if batch.score_mask is not None else batch.y != IGNORE
        metrics["acc"].update(out.argmax(-1), batch.y, mask)

    def solved(self, metrics: dict[str, float], split: str = "val") -> bool:
        return metrics.get(f"{split}/acc", 0.0) >= self.solve_threshold
