"""Causality over the whole model registry: a causal model's output at t never depends on
inputs after t; bidirectional models and encoders do see the future."""

from __future__ import annotations

import warnings

import pytest
import torch

from seqbench.bench.core.contract import Batch, OutputKind
from seqbench.bench.core.registry import MODELS
from seqbench.models.configs.tcn import ReceptiveFieldWarning
from tests.models.model_probe import build, seq2seq_batch, seq2seq_spec, tiny_config, token_spec

torch.set_num_threads(1)
T, CUT = 12, 5


def _build(name, spec, **over):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReceptiveFieldWarning)
        return build(tiny_config(name, **over), spec).eval()


def _perturbed(x: torch.Tensor, after: int) -> torch.Tensor:
    y = x.clone()
    y[:, after + 1 :] = (y[:, after + 1 :] + 1 + torch.arange(y.shape[1] - after - 1) % 3) % 7
    return y


@pytest.mark.parametrize("name", MODELS.names())
def test_causal_models_never_see_the_future(name):
    cfg = tiny_config(name)
    if cfg.sees_future():
        pytest.skip(f"{name} default config sees the future (refused on causal tasks)")
    if OutputKind.TOKENS in cfg.supported_kinds:
        net = _build(name, token_spec(causal=True))
        x = torch.randint(0, 7, (3, T), generator=torch.Generator().manual_seed(0))
        a = net(Batch(x=x, y=x))[0]
        b = net(Batch(x=_perturbed(x, CUT), y=x))[0]
    else:  # encoder-decoder: the decoder is the causal part (output t vs decoder inputs after t)
        net = _build(name, seq2seq_spec())
        batch = seq2seq_batch(S=T - 1)
        a = net(batch)[0]
        y_in = _perturbed(batch.aux["y_in"], CUT)
        b = net(Batch(x=batch.x, y=batch.y, aux={"y_in": y_in}))[0]
    torch.testing.assert_close(a[:, : CUT + 1], b[:, : CUT + 1], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, CUT + 1 :], b[:, CUT + 1 :])  # the perturbation is visible later


BIDIRECTIONAL = [
    (n, {"bidirectional": True}) for n in MODELS.names() if "bidirectional" in MODELS.get(n).config_cls.model_fields
] + [("transformer", {})]


@pytest.mark.parametrize("name,over", BIDIRECTIONAL, ids=[n for n, _ in BIDIRECTIONAL])
def test_bidirectional_models_see_the_future(name, over):
    net = _build(name, token_spec(causal=False), **over)
    x = torch.randint(0, 7, (3, T), generator=torch.Generator().manual_seed(0))
    a, b = net(Batch(x=x, y=x))[0], net(Batch(x=_perturbed(x, T - 2), y=x))[0]
    assert not torch.allclose(a[:, 0], b[:, 0])


SEQ2SEQ = [n for n in MODELS.names() if OutputKind.SEQ2SEQ in MODELS.get(n).config_cls.supported_kinds]
ATTN = [("seq2seq", {"attention": a}) for a in ("none", "bahdanau", "dot")] + [
    (n, {}) for n in SEQ2SEQ if n != "seq2seq"
]


@pytest.mark.parametrize("name,over", ATTN, ids=[f"{n}-{o}" for n, o in ATTN])
def test_encoders_read_the_whole_source_before_the_first_output(name, over):
    net = _build(name, seq2seq_spec(), **over)
    batch = seq2seq_batch()
    x2 = batch.x.clone()
    x2[:, -1] = 3 + (x2[:, -1] - 2) % 4  # change only the last source token
    a = net(batch)[0]
    b = net(Batch(x=x2, y=batch.y, aux=batch.aux))[0]
    assert not torch.allclose(a[:, 0], b[:, 0])
