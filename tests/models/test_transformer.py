"""Transformer backbone and the shared residual blocks: norm placement, positions, masks, knobs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch
from seqbench.bench.core.errors import UserError
from seqbench.models.blocks import Residual, TransformerLayer
from tests.models.model_probe import build, fingerprint, same, tiny_config, token_spec

torch.set_num_threads(1)


def tokens(B=3, T=10, seed=0):
    return torch.randint(0, 7, (B, T), generator=torch.Generator().manual_seed(seed))


def test_heads_must_divide_d_model_with_a_fix():
    with pytest.raises(UserError, match=r"model\.n_heads: 3 does not divide model\.d_model=16; set model\.n_heads"):
        build_config({}, ["model=transformer", "model.d_model=16", "model.n_heads=3"])
    build_config({}, ["model=transformer", "model.d_model=16", "model.n_layers=1"])  # default heads fit


@pytest.mark.parametrize("over", [{}, {"embedding": "onehot"}])
def test_token_inputs_are_projected_when_widths_differ(over):
    net = build(tiny_config("transformer", **over), token_spec())
    proj = net.backbone.proj
    assert isinstance(proj, nn.Linear) == (over.get("embedding") == "onehot")
    out, _ = net(Batch(x=tokens(), y=tokens()))
    assert out.shape == (3, 10, 5)


def _norms(module):
    return [m for m in module.modules() if isinstance(m, (nn.LayerNorm, nn.RMSNorm))]


@pytest.mark.parametrize(
    "position,per_layer,final,alphas",
    [("post", 2, False, 0), ("pre", 2, True, 0), ("rezero", 0, False, 2), ("none", 0, False, 0)],
)
def test_norm_placement_builds_different_graphs(position, per_layer, final, alphas):
    stack = build(tiny_config("transformer", n_layers=3, norm_position=position), token_spec()).backbone.stack
    assert len(_norms(stack)) == 3 * per_layer + final
    assert (stack.final_norm is not None) == final
    assert sum(1 for n, _ in stack.named_parameters() if n.endswith("alpha")) == 3 * alphas


def test_post_norm_normalises_after_the_add_and_pre_norm_ends_with_a_final_norm():
    x = torch.randn(2, 5, 16) * 3 + 1
    post = TransformerLayer(tiny_config("transformer", norm_position="post"))
    y = post(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)  # LayerNorm output
    pre_net = build(tiny_config("transformer", norm_position="pre", n_layers=2), token_spec()).backbone
    inner = pre_net.stack.layers[-1](pre_net.stack.layers[0](x))
    assert inner.mean(-1).abs().max() > 0.1  # residual stream itself is not normalised
    torch.testing.assert_close(pre_net.stack(x).mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)


def test_rezero_block_is_identity_at_init_and_alpha_opens_it():
    layer = TransformerLayer(tiny_config("transformer", norm_position="rezero", dropout=0.0))
    x = torch.randn(2, 5, 16)
    assert torch.equal(layer(x, causal=True), x)
    with torch.no_grad():
        layer.ff.alpha.fill_(0.5)
    assert not torch.allclose(layer(x), x)


def test_rmsnorm_knob_swaps_the_norm():
    stack = build(tiny_config("transformer", norm="rmsnorm"), token_spec()).backbone.stack
    assert _norms(stack) and all(isinstance(m, nn.RMSNorm) for m in _norms(stack))


def _layer_grad_norms(position: str, seed: int) -> list[float]:
    net = build(
        tiny_config("transformer", d_model=64, n_heads=4, n_layers=6, norm_position=position),
        token_spec(causal=False),
        seed=seed,
    )
    x = tokens(8, 32, seed)
    out, _ = net(Batch(x=x, y=x))
    nn.functional.cross_entropy(out.flatten(0, 1), torch.randint(0, 5, (8 * 32,))).backward()
    return [float(layer.ff.f[-1].weight.grad.norm()) for layer in net.backbone.stack.layers]


def test_post_ln_gradients_grow_toward_the_output_pre_ln_do_not():
    """Xiong et al. 2020: at init, post-LN's last layers get larger gradients than pre-LN's."""
    post = torch.tensor([_layer_grad_norms("post", s) for s in range(3)]).mean(0)
    pre = torch.tensor([_layer_grad_norms("pre", s) for s in range(3)]).mean(0)
    assert post[-1] / post[0] > pre[-1] / pre[0]
    assert post[-1] > pre[-1]


def test_sinusoidal_extends_to_longer_inputs_and_learned_fails_clearly():
    sin = build(tiny_config("transformer", max_len=8), token_spec())
    assert sin(Batch(x=tokens(T=20), y=tokens(T=20)))[0].shape == (3, 20, 5)
    learned = build(tiny_config("transformer", pos_encoding="learned", max_len=8), token_spec())
    learned(Batch(x=tokens(T=8), y=tokens(T=8)))
    with pytest.raises(ValueError, match=r"model\.max_len: a sequence of 20 positions exceeds .* max_len=8"):
        learned(Batch(x=tokens(T=20), y=tokens(T=20)))


def test_without_positions_an_encoder_is_permutation_equivariant():
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(0))
    x = tokens()
    for kind, equivariant in (("none", True), ("sinusoidal", False)):
        net = build(tiny_config("transformer", pos_encoding=kind), token_spec(causal=False)).eval()
        a, b = net(Batch(x=x, y=x))[0][:, perm], net(Batch(x=x[:, perm], y=x))[0]
        assert torch.allclose(a, b, atol=1e-5) == equivariant


@pytest.mark.parametrize("causal", [True, False])
def test_padding_never_changes_valid_positions(causal):
    net = build(tiny_config("transformer", n_layers=2), token_spec(causal=causal)).eval()
    x, lengths = tokens(), torch.tensor([10, 6, 3])
    noisy = x.clone()
    for i, L in enumerate(lengths):
        noisy[i, L:] = (noisy[i, L:] + 1) % 7
    a = net(Batch(x=x, y=x, lengths=lengths))[0]
    b = net(Batch(x=noisy, y=x, lengths=lengths))[0]
    for i, L in enumerate(lengths):
        torch.testing.assert_close(a[i, :L], b[i, :L], atol=1e-5, rtol=0)
    if not causal:  # the mask is what makes this hold: without it padding leaks in
        assert not torch.allclose(net(Batch(x=x, y=x))[0][1, :6], net(Batch(x=noisy, y=x))[0][1, :6])


def test_residual_refuses_unknown_position():
    with pytest.raises(ValueError, match="norm_position"):
        Residual(nn.Identity(), 4, "sandwich", "layernorm", 0.0)


KNOBS = [
    ("d_model", 32),
    ("n_heads", 4),
    ("n_layers", 2),
    ("d_ff", 8),
    ("dropout", 0.5),
    ("norm_position", "post"),
    ("norm_position", "rezero"),
    ("norm_position", "none"),
    ("norm", "rmsnorm"),
    ("pos_encoding", "learned"),
    ("pos_encoding", "none"),
    ("embedding", "onehot"),
]


@pytest.mark.parametrize("field,value", KNOBS, ids=[f"{f}={v}" for f, v in KNOBS])
def test_every_transformer_knob_reaches_the_model(field, value):
    x = tokens()
    batch = Batch(x=x, y=x)
    base = fingerprint(build(tiny_config("transformer"), token_spec()), batch)
    assert not same(base, fingerprint(build(tiny_config("transformer", **{field: value}), token_spec()), batch))


def test_max_len_knob_reaches_the_learned_table():
    net = build(tiny_config("transformer", pos_encoding="learned", max_len=12), token_spec())
    assert net.backbone.pos.table.weight.shape == (12, 16)
