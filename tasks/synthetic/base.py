"""Synthetic tasks: batches generated from (seed, split, index) directly on the device.

The loader yields integer keys; ``materialize`` turns a key into a batch with a
``torch.Generator`` seeded from the key, on the training device. So any batch can be
rebuilt from its key (determinism, resume), splits use disjoint seed streams, and no
data ever crosses the host->device boundary.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch

from seqbench.bench.core.contract import Batch
from seqbench.tasks.base import Task, make_loader

_SPLIT_ID = {"train": 0, "val": 1, "test": 2}
_MASK = (1 << 62) - 1


def stream_seed(seed: int, split: str, index: int, rank: int = 0, length: int = 0) -> int:
    """A 62-bit seed for one batch; different splits/ranks/lengths never share a stream."""
    h = (
        seed * 0x9E3779B97F4A7C15
        + _SPLIT_ID[split] * 0xBF58476D1CE4E5B9
        + rank * 0x94D049BB133111EB
        + length * 0x2545F4914F6CDD1D
        + index
    ) & _MASK
    # splitmix64 finaliser: nearby inputs give unrelated seeds
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
    return h ^ (h >> 31)


class BatchKey(tuple):
    """(split, index, rank, length, batch_size): everything needed to rebuild one batch."""


def drawn_length(seed: int, split: str, index: int, rank: int, lengths: tuple[int, int]) -> int:
    """The problem length of batch ``index`` when a task trains on a range ``(shortest, longest)``:
    uniform over the range, one length per batch (Delétang et al. 2023 draw one per batch too),
    a pure function of the batch's address, so a resumed run draws the same lengths."""
    lo, hi = lengths
    return lo + stream_seed(seed, split, index, rank, length=0) % (hi - lo + 1)


class KeyStream(torch.utils.data.IterableDataset):
    """Batch keys of one split. ``length`` is one problem length, or a ``(shortest, longest)`` range
    each batch draws its own from (``drawn_length``; ``seed`` is the task's)."""

    def __init__(
        self,
        split: str,
        n_batches: int | None,
        rank: int,
        length: int | tuple[int, int],
        batch_size: int,
        start: int = 0,
        seed: int = 0,
    ):
        self.split, self.n, self.rank, self.length, self.bs = split, n_batches, rank, length, batch_size
        self.start, self.seed = start, seed

    def __iter__(self) -> Iterator[BatchKey]:
        idx = itertools.count(self.start) if self.n is None else range(self.start, self.start + self.n)
        for i in idx:
            n = self.length
            if isinstance(n, tuple):
                n = drawn_length(self.seed, self.split, i, self.rank, n)
            yield BatchKey((self.split, i, self.rank, n, self.bs))

    def __len__(self) -> int:
        if self.n is None:
            raise TypeError("endless stream")
        return self.n


class SyntheticTask(Task):
    """Subclasses implement ``generate(g, batch_size, length, device) -> Batch``; ``length`` is a problem
    length (``TaskConfig.positions`` says how many input positions it takes). Without an explicit
    ``length`` the loader uses the training length, or draws one per batch from the task's
    ``train_lengths`` range."""

    def loader(self, split, batch_size, *, length=None, n_batches=None, rank=0, world_size=1, start=0):
        if length is None:
            length = self.cfg.train_lengths() or self.cfg.seq_len()
        ds = KeyStream(split, n_batches, rank, length, batch_size, start, seed=self.seed)
        return make_loader(ds)

    def materialize(self, item, device) -> Batch:
        if isinstance(item, Batch):
            return item
        split, index, rank, length, bs = item
        g = torch.Generator(device=device)
        g.manual_seed(stream_seed(self.seed, split, int(index), int(rank), int(length)))
        return self.generate(g, int(bs), int(length), device)

    def generate(self, g: torch.Generator, batch_size: int, length: int, device: torch.device) -> Batch:
        raise NotImplementedError
