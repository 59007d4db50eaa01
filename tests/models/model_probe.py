"""Helpers for the model tests: tiny configs, specs and a behavioural fingerprint."""

from __future__ import annotations

import torch

from seqbench.bench.core.contract import Batch, OutputKind, TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.base import build_model
from tests.helpers import TINY_MODEL_FIELDS

VOCAB = 7  # token inputs 0..6


def tiny_config(name: str, **over):
    """The registered model's config at the tiny sizes every test uses (tests.helpers.TINY_MODEL_FIELDS)."""
    cls = MODELS.get(name).config_cls
    fields = cls.model_fields
    kw = {k: v for k, v in TINY_MODEL_FIELDS.items() if k in fields}
    return cls.model_validate({**kw, **over})


def token_spec(causal: bool = True) -> TaskSpec:
    return TaskSpec(OutputKind.TOKENS, n_classes=5, causal=causal, vocab_size=VOCAB, dependency=4)


def seq2seq_spec() -> TaskSpec:
    # ids as in tasks.synthetic.seq2seq: 0 pad, 1 <sos>, 2 <eos>, symbols 3..
    return TaskSpec(
        OutputKind.SEQ2SEQ, n_classes=VOCAB, causal=False, vocab_size=VOCAB, pad_id=0, sos_id=1, eos_id=2, dependency=6
    )


def seq2seq_batch(B: int = 4, S: int = 6, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, VOCAB, (B, S), generator=g)
    tgt = src.flip(1)
    y = torch.cat([tgt, torch.full((B, 1), 2)], 1)
    y_in = torch.cat([torch.full((B, 1), 1), tgt], 1)
    return Batch(x=src, y=y, aux={"y_in": y_in})


def build(cfg, spec, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(cfg, spec)


def fingerprint(net, batch: Batch) -> list[torch.Tensor]:
    """What a knob can change: parameter shapes, train- and eval-mode outputs, decoded output."""
    shapes = [torch.tensor(p.shape) for p in net.state_dict().values()]
    names = [torch.tensor(len(net.state_dict()))]
    out = []
    for train in (True, True, False):  # two training calls: schedules that move per batch show
        net.train(train)
        torch.manual_seed(1)  # same dropout masks / sampling coins for both configs
        out.append(net(batch)[0].detach())
    if hasattr(net, "generate"):
        net.eval()
        out.append(net.generate(batch).float())
    return names + shapes + out


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b))
