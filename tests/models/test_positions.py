"""Position encodings of the transformer and of the stack's attention mixer: sinusoidal, learned, rope
(Su et al. 2021), alibi (Press et al. 2022) and none (NoPE, Kazemnejad et al. 2023).

Each builds and trains on both models, causal and not; rope's scores depend on relative positions only;
alibi's bias is the paper's, with the authors' slopes, and reaches the attention weights; NoPE sees its
prefix as a set; the knob changes the outputs of the same weights; impossible combinations are refused
in one line. See ``models/configs/blocks.py``.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch
from seqbench.bench.core.errors import UserError
from seqbench.models.blocks import Attention, alibi_bias, apply_rotary_emb, rope_angles
from seqbench.models.configs.blocks import alibi_slopes
from tests.bench.training.test_flops import COPY, counted_forward_flops
from tests.helpers import run_cli
from tests.models.model_probe import build, tiny_config, token_spec
from tests.models.test_causality import CUT, T, _perturbed

torch.set_num_threads(1)
KINDS = ["sinusoidal", "learned", "rope", "alibi", "none"]
MODELS = {"transformer": {}, "stack": {"mixer": "attention"}}  # the stack's attention mixer


def _net(model: str, kind: str, causal: bool = True, **over):
    return build(tiny_config(model, pos_encoding=kind, **MODELS[model], **over), token_spec(causal=causal))


def _x(B: int = 3, T: int = T, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 7, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_encoding_builds_runs_and_trains(model, kind, causal):
    net = _net(model, kind, causal, n_layers=2)
    x = _x()
    out = net(Batch(x=x, y=x, lengths=torch.tensor([T, 7, 3])))[0]
    assert out.shape == (3, T, 5) and torch.isfinite(out).all()
    out.square().mean().backward()
    for name, p in net.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


@pytest.mark.parametrize("kind", ["rope", "alibi", "none"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_in_attention_encodings_add_no_parameters_and_extend_to_any_length(model, kind):
    """No table: the state dict is a sinusoidal model's, and inputs longer than max_len run (and are not
    refused at config time, unlike a learned table's)."""
    assert _net(model, kind).state_dict().keys() == _net(model, "sinusoidal").state_dict().keys()
    net = _net(model, kind, max_len=8).eval()
    x = _x(T=20)
    assert net(Batch(x=x, y=x))[0].shape == (3, 20, 5)
    over = [f"model={model}", f"model.pos_encoding={kind}", "model.max_len=64", "eval.lengths=[300]"]
    build_config({}, over)
    with pytest.raises(UserError, match=r"^model\.max_len: "):  # the stack's learned table is checked too
        build_config({}, [*over[:1], "model.pos_encoding=learned", *over[2:]])


def test_rope_scores_depend_on_relative_positions_only():
    """RoFormer eq. 16: the rotated q_m · k_n is a function of (x_m, x_n, m - n)."""
    g = torch.Generator().manual_seed(0)
    hd, n = 8, 32
    q, k = torch.randn(1, 1, n, hd, generator=g), torch.randn(1, 1, n, hd, generator=g)
    angles = rope_angles(n, hd, torch.device("cpu"))  # (n, hd)

    def score(i: int, j: int) -> torch.Tensor:  # q_0 placed at position i, k_0 at position j
        qi = apply_rotary_emb(angles[i : i + 1], q[..., :1, :])
        kj = apply_rotary_emb(angles[j : j + 1], k[..., :1, :])
        return (qi * kj).sum()

    for i, j in [(0, 0), (3, 1), (1, 3), (7, 2), (20, 9)]:
        torch.testing.assert_close(score(i, j), score(i + 5, j + 5), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(score(3, 1), score(3, 2), atol=1e-3)  # yet the score does see the distance
    torch.testing.assert_close(score(0, 0), (q[..., 0, :] * k[..., 0, :]).sum())  # position 0: no rotation


@pytest.mark.parametrize("model", sorted(MODELS))
def test_rope_in_the_model_scores_relative_positions(model, monkeypatch):
    """The same 4 tokens twice: with rope (nothing added at the input) the scores the attention layer
    hands SDPA for the second block equal the first block's, (i, j) and (i + 4, j + 4); with sinusoidal
    inputs they do not. The spy reads the layer's real queries and keys."""
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    sdpa = F.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        seen.append((q, k))
        return sdpa(q, k, v, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    x = _x(B=2, T=4).repeat(1, 2)  # (2, 8)
    for kind, relative in (("rope", True), ("sinusoidal", False)):
        seen.clear()
        _net(model, kind).eval()(Batch(x=x, y=x))
        q, k = seen[0]  # (B, H, 8, hd)
        s = q @ k.transpose(-1, -2)  # (B, H, 8, 8)
        assert torch.allclose(s[..., :4, :4], s[..., 4:, 4:], atol=1e-5) == relative, kind


def _authors_slopes(n: int) -> list[float]:
    """``get_slopes`` as github.com/ofirpress/attention_with_linear_biases writes it."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + _authors_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


@pytest.mark.parametrize("H", [1, 2, 3, 4, 6, 8, 12, 16])
def test_alibi_slopes_are_the_papers(H):
    assert alibi_slopes(H) == pytest.approx(_authors_slopes(H), rel=1e-12)
    if math.log2(H).is_integer():  # Sec. 3: the geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8)
        assert alibi_slopes(H) == pytest.approx([2 ** (-8 * h / H) for h in range(1, H + 1)])
    assert alibi_slopes(4) == [2**-2, 2**-4, 2**-6, 2**-8]
    assert alibi_slopes(8) == [2**-h for h in range(1, 9)]
    assert alibi_slopes(6) == [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]  # 4 heads' slopes, then 8's odd ones


@pytest.mark.parametrize("H", [4, 8, 6])
def test_alibi_bias_is_minus_m_times_distance(H):
    n = 7
    bias = alibi_bias(torch.tensor(alibi_slopes(H)), n, n, torch.device("cpu"))  # (H, n, n)
    for h, m in enumerate(alibi_slopes(H)):
        for i in range(n):
            for j in range(n):
                want = -m * (i - j) if j <= i else -m * (j - i)  # causal part; mirrored for encoders
                assert bias[h, i, j].item() == pytest.approx(want, abs=1e-7)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_alibi_reaches_the_attention_weights_with_causal_and_padding_masks(causal):
    """The layer's output equals softmax(q·k/sqrt(hd) - m_h |i - j|) v written out, with the causal
    mask and the padding mask, so the bias is neither dropped nor applied twice."""
    torch.manual_seed(0)
    B, L, d, H = 2, 6, 16, 4
    att = Attention(d, H, 0.0, positions="alibi").eval()
    x = torch.randn(B, L, d)
    valid = torch.tensor([[True] * L, [True] * 4 + [False] * 2])
    with torch.no_grad():
        got = att(x, key_valid=valid, causal=causal)
        q = att.q(x).view(B, L, H, d // H).transpose(1, 2)  # (B, H, L, hd)
        k, v = att.kv(x).view(B, L, 2, H, d // H).permute(2, 0, 3, 1, 4)  # 2 x (B, H, L, hd)
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        m = torch.tensor(alibi_slopes(H))[:, None, None]  # (H, 1, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // H) - m * (i - j).abs()  # (B, H, L, L)
        allowed = valid[:, None, None, :] & ((j <= i) if causal else torch.ones(L, L, dtype=torch.bool))
        w = F.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        want = att.out((w @ v).transpose(1, 2).reshape(B, L, d))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["rope", "alibi", "none"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_causal_models_with_any_encoding_never_see_the_future(model, kind):
    """tests/models/test_causality.py's check (its perturbation and cut) on each in-attention encoding."""
    net = _net(model, kind, causal=True, n_layers=2).eval()
    x = _x()
    a, b = net(Batch(x=x, y=x))[0], net(Batch(x=_perturbed(x, CUT), y=x))[0]
    torch.testing.assert_close(a[:, : CUT + 1], b[:, : CUT + 1], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, CUT + 1 :], b[:, CUT + 1 :])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_nope_sees_the_prefix_as_a_set(model):
    """One causal layer without positions: the last position attends to the set of earlier tokens, so
    permuting them leaves its output unchanged; every encoding that carries order changes it."""
    x = _x()
    perm = torch.cat([torch.randperm(T - 1, generator=torch.Generator().manual_seed(1)), torch.tensor([T - 1])])
    assert not torch.equal(x[:, perm], x)
    for kind in KINDS:
        net = _net(model, kind, causal=True).eval()
        a, b = net(Batch(x=x, y=x))[0][:, -1], net(Batch(x=x[:, perm], y=x))[0][:, -1]
        assert torch.allclose(a, b, atol=1e-5) == (kind == "none"), kind


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_knob_changes_the_outputs_of_the_same_weights(model, causal):
    """Same weights (rope, alibi and none add no parameters; sinusoidal none either), different
    encodings: every pair differs on 10 tokens. On one token every in-attention encoding is the
    identity (rotation by 0, bias 0), so rope, alibi and none agree there, and sinusoidal does not."""
    kinds = ["sinusoidal", "rope", "alibi", "none"]
    nets = {k: _net(model, k, causal).eval() for k in kinds}
    for net in nets.values():
        net.load_state_dict(nets["sinusoidal"].state_dict())
    x = _x()
    outs = {k: net(Batch(x=x, y=x))[0] for k, net in nets.items()}
    for i, a in enumerate(kinds):
        for b in kinds[i + 1 :]:
            assert not torch.allclose(outs[a], outs[b], atol=1e-4), (a, b)
    one = {k: net(Batch(x=x[:, :1], y=x[:, :1]))[0] for k, net in nets.items()}
    torch.testing.assert_close(one["rope"], one["none"])
    torch.testing.assert_close(one["alibi"], one["none"])
    assert not torch.allclose(one["sinusoidal"], one["none"])


@pytest.mark.parametrize(
    "overrides, allowed",
    [
        (["model=stack", "model.mixer=mamba", "model.pos_encoding=rope"], "auto, none, sinusoidal or learned"),
        (["model=stack", "model.mixer=s4d", "model.pos_encoding=alibi"], "model.mixer=attention"),
        (["model=transformer", "model.d_model=12", "model.n_heads=4", "model.pos_encoding=rope"], "[1, 2, 3, 6]"),
        (["model=stack", "model.d_model=12", "model.mixer_args.n_heads=4", "model.pos_encoding=rope"], "mixer_args"),
    ],
)
def test_impossible_encodings_are_refused_in_one_line(overrides, allowed):
    with pytest.raises(UserError) as e:
        build_config({}, ["task=copy", *overrides])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("model.pos_encoding: "), msg
    assert allowed in msg, msg


@pytest.mark.parametrize("field", ["pos_encoding", "source_pos_encoding"])
@pytest.mark.parametrize("kind", ["rope", "alibi"])
def test_the_encoder_decoder_refuses_in_attention_encodings(field, kind):
    with pytest.raises(UserError) as e:
        build_config({}, ["task=reverse", "model=transformer_seq2seq", f"model.{field}={kind}"])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"model.{field}: {kind} ") and "sinusoidal, learned or none" in msg


def test_the_cli_refuses_rope_on_a_mamba_stack_with_exit_2_and_one_line():
    r = run_cli("run", "task=copy", "model=stack", "model.mixer=mamba", "model.pos_encoding=rope", "--print-config")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: model.pos_encoding: rope "), r.stderr


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # printed by mkldnn.flags()
@pytest.mark.parametrize("kind", ["rope", "alibi"])
def test_in_attention_encodings_add_no_counted_flops(kind):
    """The configs count the same MACs for every encoding (rotations and biases are elementwise), and
    FlopCounterMode, which sees every matrix product with SDPA decomposed, agrees."""
    over = [*COPY, "model=transformer", "model.d_model=16", "model.n_heads=2", "model.n_layers=2"]
    seen, ours = counted_forward_flops([*over, f"model.pos_encoding={kind}"], decompose=True)
    assert seen == ours == counted_forward_flops(over, decompose=True)[1]
