"""The synthetic seq2seq tasks' shared data layout and metrics.

The config (no torch) is in ``tasks/synthetic/configs/seq2seq.py``, where the family is documented."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
import torchmetrics
from sacrebleu.metrics import BLEU

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.tasks.base import Task, TokenAccuracy
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.seq2seq import (  # the configs, re-exported beside their modules
    BEAM_GAIN_TOL,
    EOS,
    FIRST_SYMBOL,
    PAD,
    SOLVED_EXACT_MATCH,
    SOS,
    Seq2SeqTaskConfig,
)


class CorpusBLEU(torchmetrics.Metric):
    """Corpus BLEU through sacrebleu: n-gram statistics are summed over batches (and devices),
    then ``sacrebleu.metrics.BLEU.compute_bleu`` turns the totals into the corpus score."""

    full_state_update = False
    correct: torch.Tensor  # the states add_state registers (declared for the type checker)
    total: torch.Tensor
    sys_len: torch.Tensor
    ref_len: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.bleu = BLEU(tokenize="none")
        for name in ("correct", "total"):
            self.add_state(name, torch.zeros(self.bleu.max_ngram_order, dtype=torch.long), dist_reduce_fx="sum")
        for name in ("sys_len", "ref_len"):
            self.add_state(name, torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, hyps: list[str], refs: list[str]) -> None:
        s = self.bleu.corpus_score(hyps, [refs])
        self.correct += torch.tensor(s.counts, dtype=torch.long, device=self.correct.device)
        self.total += torch.tensor(s.totals, dtype=torch.long, device=self.total.device)
        self.sys_len += s.sys_len
        self.ref_len += s.ref_len

    def compute(self) -> torch.Tensor:
        s = BLEU.compute_bleu(
            self.correct.tolist(),
            self.total.tolist(),
            int(self.sys_len),
            int(self.ref_len),
            smooth_method="exp",
            max_ngram_order=self.bleu.max_ngram_order,
        )
        return torch.tensor(s.score)


def to_text(tokens: torch.Tensor) -> list[str]:
    """Rows of ids -> space-joined symbols before the first <eos> (pads dropped)."""
    out = []
    for row in tokens.tolist():
        words = []
        for t in row:
            if t == EOS:
                break
            if t != PAD:
                words.append(str(t))
        out.append(" ".join(words))
    return out


def aligned(pred: torch.Tensor, L: int) -> torch.Tensor:
    """Decoded rows (B, L') cut or pad-filled to the reference length L: (B, L)."""
    return F.pad(pred[:, :L], (0, max(0, L - pred.shape[1])), value=PAD)


class Seq2SeqTask(SyntheticTask, Task):
    """Subclasses implement ``target(src (B, T)) -> (B, T)`` and ``baseline``."""

    cfg: Seq2SeqTaskConfig  # the config beside this module

    solve_threshold: ClassVar[float] = SOLVED_EXACT_MATCH

    @property
    def spec(self) -> TaskSpec:
        n = self.cfg.vocab + FIRST_SYMBOL
        return self.build_spec(
            n_classes=n, vocab_size=n, pad_id=PAD, sos_id=SOS, eos_id=EOS, dependency=self.cfg.length
        )

    def target(self, src: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def generate(self, g, batch_size, length, device) -> Batch:
        src = torch.randint(
            FIRST_SYMBOL, self.cfg.vocab + FIRST_SYMBOL, (batch_size, length), generator=g, device=device
        )
        tgt = self.target(src)
        eos = torch.full_like(src[:, :1], EOS)
        sos = torch.full_like(src[:, :1], SOS)
        return Batch(x=src, y=torch.cat([tgt, eos], 1), aux={"y_in": torch.cat([sos, tgt], 1)})

    def metrics(self) -> dict[str, torchmetrics.Metric]:
        decoder = ("logprob", "beam_logprob_gain", "beam_share_better", "beam_em_gain")
        return {
            "token_acc": TokenAccuracy(),
            "exact_match": torchmetrics.MeanMetric(),
            "bleu": CorpusBLEU(),
            **{name: torchmetrics.MeanMetric() for name in decoder},
        }

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        if net is None or not hasattr(net, "generate"):
            raise ValueError(
                f"task.name: {self.cfg.name!r} scores decoded outputs and needs a model with "
                "generate(); use model=seq2seq or model=transformer_seq2seq"
            )
        y = batch.y  # (B, L)
        pred = aligned(net.generate(batch, max_len=y.shape[1]), y.shape[1])  # (B, L) decoded, pad after <eos>
        scored = torch.ones_like(y, dtype=torch.bool)
        metrics["token_acc"].update(pred, y, scored)
        exact = (pred == y).all(1).float()  # (B,)
        metrics["exact_match"].update(exact)
        metrics["bleu"].update(to_text(pred), to_text(y))
        logp = net.score(batch, pred)  # (B,) log p(decoded | source)
        metrics["logprob"].update(logp)
        if net.cfg.decode.beam_width > 1:  # the same model, decoded greedily on the same batch
            greedy = aligned(net.generate(batch, max_len=y.shape[1], beam_width=1), y.shape[1])
            gain, em_gain = logp - net.score(batch, greedy), exact - (greedy == y).all(1).float()
        else:
            gain, em_gain = torch.zeros_like(logp), torch.zeros_like(exact)
        metrics["beam_logprob_gain"].update(gain)
        metrics["beam_share_better"].update((gain > BEAM_GAIN_TOL).float())
        metrics["beam_em_gain"].update(em_gain)

    def solved(self, metrics, split="val") -> bool:
        return metrics.get(f"{split}/exact_match", 0.0) >= self.solve_threshold
