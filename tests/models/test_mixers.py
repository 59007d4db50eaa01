"""The sequence mixers (mamba, s4d, linear_attention, hyena): shapes at any length, finite gradients,
causality, every knob doing something, MAC counts against torch's FlopCounterMode, the known answers
of each formulation, the CPU forms (C kernels, batch pieces: models/cpu.py) against the PyTorch forms,
and a small learning check each (previous-token recall). Mamba's scans: tests/models/test_mamba_scan.py."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import seqbench.models.configs.hyena  # each config module registers itself in MIXERS
import seqbench.models.configs.linear_attention
import seqbench.models.configs.mamba
import seqbench.models.configs.s4d  # noqa: F401
from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models import hyena as hyena_module
from seqbench.models import linear_attention as linear_attention_module
from seqbench.models.configs.s4d import rfft_macs, vandermonde_split
from seqbench.models.hyena import Hyena
from seqbench.models.linear_attention import (
    CHUNK,
    LinearAttention,
    causal_chunked,
    causal_sums,
    elu_features,
    taylor_features,
    taylor_kernel,
)
from seqbench.models.mamba import Mamba
from seqbench.models.s4d import S4D, causal_fft_conv, spectral_conv

torch.set_num_threads(1)

NAMES = ["mamba", "s4d", "linear_attention", "hyena"]
D = 16


def config(name: str, **args):
    return MIXERS.get(name).config_cls(name=name, **args)


def build(name: str, d: int = D, seed: int = 0, **args) -> nn.Module:
    torch.manual_seed(seed)
    return MIXERS.get(name).cls(d, **config(name, **args).args())


def test_registry_binds_each_config_to_its_module():
    assert {n: MIXERS.get(n).cls for n in NAMES} == {
        "mamba": Mamba,
        "s4d": S4D,
        "linear_attention": LinearAttention,
        "hyena": Hyena,
    }
    assert all(MIXERS.get(n).doc for n in NAMES)
    assert [n for n in NAMES if MIXERS.get(n).config_cls.needs_positions] == ["linear_attention"]


@pytest.mark.parametrize("name", NAMES)
def test_constructor_takes_exactly_the_config_fields(name):
    params = dict(inspect.signature(MIXERS.get(name).cls.__init__).parameters)
    params.pop("self"), params.pop("d_model")
    causal = params.pop("causal")  # the Mixer protocol's (models/configs/mixer.py), not a knob
    assert causal.kind is causal.KEYWORD_ONLY
    assert {k: p.default for k, p in params.items()} == config(name).args()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("T", [1, 7, 16, 50])
def test_output_shape_at_any_length(name, T):
    assert build(name)(torch.randn(2, T, D)).shape == (2, T, D)


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_gets_a_finite_gradient(name):
    mixer = build(name)
    (mixer(torch.randn(2, 13, D)) * torch.randn(2, 13, D)).sum().backward()
    for pname, p in mixer.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("t", [0, 6, 40])
def test_outputs_up_to_t_ignore_later_inputs(name, t):
    mixer, T = build(name), 50  # one chunk for linear attention; several in the test below
    x = torch.randn(1, T, D)
    x2 = x.clone()
    x2[:, t + 1 :] += torch.randn(1, T - t - 1, D)
    with torch.no_grad():
        y, y2 = mixer(x), mixer(x2)
    torch.testing.assert_close(y2[:, : t + 1], y[:, : t + 1], atol=1e-5, rtol=0)
    assert (y2[:, t + 1 :] - y[:, t + 1 :]).abs().amax() > 1e-3


@pytest.mark.parametrize("feature_map", ["taylor", "elu"])
@pytest.mark.parametrize("T", [7, CHUNK, 2 * CHUNK + 3])
def test_linear_attention_chunks_equal_the_quadratic_form(feature_map, T):
    """Every chunking (one chunk, exactly one, three with padding) and the Taylor kernel inside a chunk
    give Σ_{j<=t} φ(q_t)·φ(k_j) v_j, computed here as one masked T x T product of features."""
    phi = taylor_features if feature_map == "taylor" else elu_features
    kernel = (lambda s: taylor_kernel(s, 4)) if feature_map == "taylor" else None
    q, k, v = (
        torch.randn(2, 3, T, 4, dtype=torch.float64),
        torch.randn(2, 3, T, 4, dtype=torch.float64),
        torch.randn(2, 3, T, 5, dtype=torch.float64),
    )
    weights = (phi(q) @ phi(k).transpose(-1, -2)).tril()  # (2, 3, T, T)
    torch.testing.assert_close(causal_chunked(q, k, v, phi, kernel), weights @ v)


def test_linear_attention_causality_across_chunks_and_its_bidirectional_form():
    causal, both = build("linear_attention"), build("linear_attention")
    both.causal = False
    x = torch.randn(1, 2 * CHUNK + 22, D)  # three chunks, the last padded
    x2 = x.clone()
    t = CHUNK + 100
    x2[:, t:] += 1.0
    with torch.no_grad():
        torch.testing.assert_close(causal(x2)[:, :t], causal(x)[:, :t], atol=1e-5, rtol=0)
        assert (both(x2)[:, :t] - both(x)[:, :t]).abs().amax() > 1e-3  # it reads the future


# One change per knob, from the default; each must change the parameters' shapes or the output.
FIELD_CHANGES = [
    ("mamba", "d_state", 4),
    ("mamba", "expand", 1),
    ("mamba", "d_conv", 2),
    ("mamba", "dt_rank", 3),
    ("s4d", "d_state", 8),
    ("s4d", "dt_min", 0.01),
    ("s4d", "dt_max", 0.5),
    ("linear_attention", "n_heads", 2),
    ("linear_attention", "feature_map", "elu"),
    ("linear_attention", "feature_dim", 4),
    ("linear_attention", "short_conv", 0),
    ("hyena", "order", 3),
    ("hyena", "filter_order", 8),
    ("hyena", "short_filter", 2),
    ("hyena", "emb_dim", 5),
    ("hyena", "l_max", 64),
]


def test_field_changes_cover_every_field():
    assert {(n, f) for n, f, _ in FIELD_CHANGES} == {
        (n, f) for n in NAMES for f in MIXERS.get(n).config_cls.model_fields if f != "name"
    }


@pytest.mark.parametrize("name, field, value", FIELD_CHANGES)
def test_every_field_changes_the_mixer(name, field, value):
    default, changed = build(name), build(name, **{field: value})
    shapes = {k: p.shape for k, p in default.named_parameters()}
    if shapes != {k: p.shape for k, p in changed.named_parameters()}:
        return
    x = torch.randn(2, 20, D)
    with torch.no_grad():
        assert (default(x) - changed(x)).abs().amax() > 1e-4


def test_configs_refuse_what_the_modules_cannot_build():
    for name, args in [
        ("s4d", {"d_state": 7}),
        ("s4d", {"dt_min": 0.5, "dt_max": 0.1}),
        ("hyena", {"emb_dim": 4}),
        ("hyena", {"order": 1}),
        ("mamba", {"dt_rank": 0}),
        ("linear_attention", {"feature_map": "softmax"}),
    ]:
        with pytest.raises(ValueError):
            config(name, **args)
    assert config("mamba", dt_rank=3).rank(64) == 3 and config("mamba").rank(65) == 5


def test_linear_attention_heads_must_divide_d_model_and_the_message_says_which():
    with pytest.raises(
        ValueError,
        match=r"model\.mixer_args\.n_heads: 3 does not divide model\.d_model=16; "
        r"choose from \[1, 2, 4, 8, 16\]",
    ):
        LinearAttention(16, n_heads=3)
    with pytest.raises(ValueError, match="n_heads"):
        config("linear_attention", n_heads=3).forward_macs(16, 12)


# -- MACs against FlopCounterMode -----------------------------------------------------------------
# FlopCounterMode counts matrix products and convolutions at 2 FLOPs a MAC, and no FFT. Our FFT
# convention (models/configs/s4d.py): a real FFT or inverse of length n costs round(n·log2 n) MACs;
# ``fft_macs`` is that part of ``forward_macs``. Work done once per batch (s4d's kernel, hyena's filter
# FFN: ``shared_macs``) is counted once per sequence by forward_macs and once per batch by the counter.


def test_fft_convention():
    assert rfft_macs(8) == 24 and rfft_macs(24) == round(24 * math.log2(24)) == 110 and rfft_macs(1) == 0
    assert config("s4d").fft_macs(16, 12) == 3 * 16 * 110
    assert config("hyena", order=3).fft_macs(16, 12) == 2 * 3 * 16 * 110


@pytest.mark.parametrize(
    "name, args",
    [
        ("mamba", {}),
        ("mamba", {"dt_rank": 3, "d_conv": 2}),
        ("s4d", {}),
        ("linear_attention", {}),
        ("linear_attention", {"feature_map": "elu"}),
        ("linear_attention", {"short_conv": 0}),
        ("hyena", {}),
        ("hyena", {"order": 3}),
    ],
)
@pytest.mark.parametrize("B", [1, 3])
def test_forward_macs_match_flop_counter_mode(name, args, B, monkeypatch):
    # the counts are of the matrix-product forms (what runs on a GPU): FlopCounterMode sees no C kernel
    monkeypatch.setenv(cpu.ENV, "0")
    T, cfg, mixer = 12, config(name, **args), build(name, **args)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        mixer(torch.randn(B, T, D))
    fft = cfg.fft_macs(D, T) if hasattr(cfg, "fft_macs") else 0
    shared = cfg.shared_macs(D, T) if hasattr(cfg, "shared_macs") else 0
    assert counter.get_total_flops() == 2 * (B * (cfg.forward_macs(D, T) - fft) - (B - 1) * shared)


def test_linear_attention_macs_count_whole_chunks(monkeypatch):
    monkeypatch.setenv(cpu.ENV, "0")  # the chunked form's products (the C kernel's are invisible to the counter)
    cfg, T = config("linear_attention", n_heads=2, feature_dim=4), 2 * CHUNK + 7  # 3 chunks of 344, one padded position
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        build("linear_attention", n_heads=2, feature_dim=4)(torch.randn(1, T, D))
    assert counter.get_total_flops() == 2 * cfg.forward_macs(D, T)


# -- known answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [7, 13, 50])
def test_mamba_cpu_scan_equals_the_sequential_scan_at_lengths_not_powers_of_two(T):
    """The chunked scan (models/mamba.py; more cases in tests/models/test_mamba_scan.py) against mambapy's loop."""
    mixer = build("mamba")
    x = torch.randn(2, T, D, requires_grad=True)
    y = mixer(x)
    (gx,) = torch.autograd.grad(y.square().sum(), x)
    mixer.block.config.pscan = False  # mambapy's step-by-step loop: h_t = exp(ΔA) h_{t-1} + ΔB x_t
    y_seq = mixer(x)
    (gx_seq,) = torch.autograd.grad(y_seq.square().sum(), x)
    torch.testing.assert_close(y, y_seq, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(gx, gx_seq, atol=1e-4, rtol=1e-3)


def test_s4d_fft_convolution_equals_the_discrete_recurrence():
    s4d = build("s4d", d_state=8, dt_min=0.01, dt_max=0.5)
    u = torch.randn(2, 20, D)
    with torch.no_grad():
        y = s4d.ssm(u)  # (B, T, H), before the GELU and GLU
        # ZOH from the raw parameters (S4D Sec. 2): Ā = exp(ΔA), B̄ = (Ā - 1)/A with B = 1
        dt = torch.exp(s4d.log_dt.double())[:, None]  # (H, 1)
        A = -torch.exp(s4d.log_A_real.double()) + 1j * s4d.A_imag.double()  # (H, N/2)
        Abar, C = torch.exp(dt * A), torch.view_as_complex(s4d.C).to(torch.complex128)
        Bbar = (Abar - 1) / A
        state = torch.zeros(2, D, A.shape[1], dtype=torch.complex128)  # (B, H, N/2)
        ref = []
        for k in range(u.shape[1]):
            state = Abar * state + Bbar * u[:, k, :, None].double()  # x_k = Ā x_{k-1} + B̄ u_k
            # y_k = C x_k + D u_k summed with the conjugate modes: 2·Re
            ref.append(2 * (C * state).sum(-1).real + s4d.D.double() * u[:, k].double())
    torch.testing.assert_close(y.double(), torch.stack(ref, dim=1), atol=1e-4, rtol=1e-4)


def quadratic_linear_attention(mixer: LinearAttention, x: torch.Tensor, causal: bool) -> torch.Tensor:
    """Eq. 4-6 with the (T, T) matrix φ(Q)φ(K)ᵀ, masked lower-triangular when causal, row-normalised."""
    B, T, d = x.shape
    H, f = mixer.n_heads, mixer.feature_dim
    if mixer.short is not None:  # the short convolution as a sum of shifted copies: x_t' = Σ_i w_i x_{t-taps+1+i}
        w, k = mixer.short.weight[:, 0], mixer.short_taps  # (d, taps)
        padded = torch.cat([x.new_zeros(B, k - 1, d), x], dim=1)
        x = sum(padded[:, i : i + T] * w[:, i] for i in range(k))
    q = mixer.phi(mixer.q(x).view(B, T, H, f).transpose(1, 2)).double()  # (B, H, T, F)
    k = mixer.phi(mixer.k(x).view(B, T, H, f).transpose(1, 2)).double()
    v = mixer.v(x).view(B, T, H, d // H).transpose(1, 2).double()  # (B, H, T, Dh)
    scores = q @ k.transpose(-1, -2)  # (B, H, T, T)
    if causal:
        scores = scores.tril()
    y = (scores / scores.sum(-1, keepdim=True)) @ v  # (B, H, T, Dh)
    return mixer.out(y.transpose(1, 2).reshape(B, T, d).float())


@pytest.mark.parametrize("feature_map", ["taylor", "elu"])
@pytest.mark.parametrize("T", [1, 50, 150])
@pytest.mark.parametrize("causal", [True, False])
def test_linear_attention_equals_the_quadratic_form(feature_map, T, causal):
    mixer = build("linear_attention", feature_map=feature_map, n_heads=2, feature_dim=8)
    mixer.causal = causal
    x = torch.randn(2, T, D)
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), quadratic_linear_attention(mixer, x, causal), atol=1e-5, rtol=1e-4)


def test_taylor_features_approximate_exp_to_second_order():
    q, k = torch.randn(5, 8, dtype=torch.float64), torch.randn(5, 8, dtype=torch.float64)
    s = (q * k).sum(-1) / math.sqrt(8)
    torch.testing.assert_close((taylor_features(q) * taylor_features(k)).sum(-1), 1 + s + s * s / 2)
    assert (elu_features(torch.randn(100)) > 0).all()


def direct_causal_conv(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """y_t = Σ_{j≤t} k_j u_{t-j}, one position at a time: u (B, C, T), k (C, T)."""
    T = u.shape[-1]
    return torch.stack([(u[..., : t + 1].flip(-1) * k[:, : t + 1]).sum(-1) for t in range(T)], dim=-1)


@pytest.mark.parametrize("T", [1, 5, 37])
def test_fft_convolution_equals_the_direct_causal_convolution(T):
    u, k = torch.randn(2, 3, T, dtype=torch.float64), torch.randn(3, T, dtype=torch.float64)
    torch.testing.assert_close(causal_fft_conv(u, k), direct_causal_conv(u, k))


def test_hyena_equals_its_definition_with_direct_convolutions(monkeypatch):
    mixer, x, calls = build("hyena", order=3), torch.randn(2, 23, D), []

    def direct(u, spectrum):
        calls.append(u.shape)
        k = torch.fft.irfft(spectrum, n=2 * u.shape[-1])[..., : u.shape[-1]]  # the filter, from its spectrum
        return direct_causal_conv(u, k)

    with torch.no_grad():
        y = mixer(x)
        monkeypatch.setattr(hyena_module, "spectral_conv", direct)
        torch.testing.assert_close(y, mixer(x), atol=1e-5, rtol=1e-4)
    assert len(calls) == 2  # order 3: two long convolutions


def test_spectral_conv_is_the_fft_convolution_from_the_kernels_spectrum():
    u, k = torch.randn(2, 3, 37, dtype=torch.float64), torch.randn(3, 37, dtype=torch.float64)
    torch.testing.assert_close(spectral_conv(u, torch.fft.rfft(k, n=74)), direct_causal_conv(u, k))


def test_hyena_filters_do_not_depend_on_the_sequence_length():
    f = build("hyena").filter
    with torch.no_grad():
        torch.testing.assert_close(f(40, "cpu")[:, :10], f(10, "cpu"))


# -- CPU forms: C kernels and batch pieces (models/cpu.py) against the PyTorch forms -----------------

needs_sums_kernel = pytest.mark.skipif(
    cpu.load("linear_attention_sums", linear_attention_module.SUMS_SOURCE) is None,
    reason="no C compiler: the kernel cannot build here",
)


def sums_and_gradients(run, q, k, v, g) -> list[torch.Tensor]:
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    out = run(q, k, v)
    return [out.detach(), *torch.autograd.grad((out * g).sum(), [q, k, v])]


def kernel_sums(q, k, v, taylor: bool) -> torch.Tensor:
    """``causal_sums`` in ``causal_chunked``'s layout: (B, H, T, ·) in, (B, H, T, Dh + 1) out."""
    return causal_sums(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), taylor).transpose(1, 2)


def with_ones(v: torch.Tensor) -> torch.Tensor:
    return torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)


@needs_sums_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [1, 5, 33, 70])  # the kernel takes 32 positions at a time: tails of 1, 5, 1 and 6
@pytest.mark.parametrize("f", [1, 2, 3, 16])  # the Taylor pairs' layout differs for odd and even f
@pytest.mark.parametrize("feature_map", ["taylor", "elu"])
def test_linear_attention_kernel_equals_the_chunked_form(feature_map, f, T, dtype):
    """The C kernel (symmetric Taylor features, 1 + f + f(f+1)/2 wide, the normaliser's column of ones added
    inside) against ``causal_chunked`` (Based's f² features) on [v, 1]: the output and the gradients of q, k and
    v; in float64 to rounding."""
    torch.manual_seed(f * 100 + T)
    q, k, v, g = (torch.randn(2, 3, T, n, dtype=dtype) for n in (f, f, 5, 6))
    phi = taylor_features if feature_map == "taylor" else elu_features
    kernel = (lambda s: taylor_kernel(s, f)) if feature_map == "taylor" else None
    want = sums_and_gradients(lambda q, k, v: causal_chunked(q, k, with_ones(v), phi, kernel), q, k, v, g)
    got = sums_and_gradients(lambda q, k, v: kernel_sums(q, k, v, feature_map == "taylor"), q, k, v, g)
    for name, a, b in zip(["out", "q", "k", "v"], got, want, strict=True):
        tol = 1e-12 if dtype == torch.float64 else 1e-5
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * b.abs().max().item(), msg=name)


@needs_sums_kernel
@pytest.mark.parametrize("Dh", [7, 8, 15, 16])  # values in blocks of 8, 4, 2 and 1 (with the normaliser: 8 to 17)
def test_linear_attention_kernel_takes_any_head_width(Dh):
    torch.manual_seed(Dh)
    q, k, v, g = (torch.randn(2, 2, 45, n, dtype=torch.float64) for n in (4, 4, Dh, Dh + 1))
    want = sums_and_gradients(lambda q, k, v: causal_chunked(q, k, with_ones(v), taylor_features, None), q, k, v, g)
    got = sums_and_gradients(lambda q, k, v: kernel_sums(q, k, v, True), q, k, v, g)
    for name, a, b in zip(["out", "q", "k", "v"], got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12 * b.abs().max().item(), msg=name)


@needs_sums_kernel
def test_linear_attention_kernel_threads_split_the_rows():
    torch.manual_seed(0)
    q, k, v, g = (torch.randn(2, 3, 21, n, dtype=torch.float64) for n in (4, 4, 5, 6))
    one = sums_and_gradients(lambda q, k, v: kernel_sums(q, k, v, True), q, k, v, g)
    threads = torch.get_num_threads()
    torch.set_num_threads(4)  # 6 rows (batch x heads) in slices of 1, 2, 1, 2
    try:
        four = sums_and_gradients(lambda q, k, v: kernel_sums(q, k, v, True), q, k, v, g)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, four, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def mixer_and_gradients(mixer: nn.Module, x: torch.Tensor, g: torch.Tensor) -> list[torch.Tensor]:
    x = x.clone().requires_grad_()
    y = mixer(x)
    return [y.detach(), *torch.autograd.grad((y * g).sum(), [x, *mixer.parameters()])]


@needs_sums_kernel
@pytest.mark.parametrize("feature_map", ["taylor", "elu"])
def test_linear_attention_mixer_is_the_same_with_and_without_its_kernel(feature_map, monkeypatch):
    mixer, x, g = build("linear_attention", feature_map=feature_map), torch.randn(2, 37, D), torch.randn(2, 37, D)
    with_kernel = mixer_and_gradients(mixer, x, g)
    monkeypatch.setenv(cpu.ENV, "0")
    without = mixer_and_gradients(mixer, x, g)
    names = ["y", "x", *(n for n, _ in mixer.named_parameters())]
    for name, a, b in zip(names, with_kernel, without, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5 * b.abs().max().item(), msg=name)


def direct_s4d_kernel(s4d: S4D, T: int) -> torch.Tensor:
    """K (H, T) from a table of every power Ā^l, l < T (the form before the Vandermonde split)."""
    _, CB = s4d.discrete()
    dt = torch.exp(s4d.log_dt)[:, None, None]  # (H, 1, 1)
    lags = torch.arange(T, dtype=dt.dtype)  # (T,)
    decay = torch.exp(-torch.exp(s4d.log_A_real)[:, :, None] * dt * lags)  # (H, N/2, T)
    angle = s4d.A_imag[:, :, None] * dt * lags  # (H, N/2, T)
    powers = decay * torch.cos(angle) + 1j * decay * torch.sin(angle)  # (H, N/2, T): Ā^l
    return 2 * (CB[:, :, None] * powers).sum(1).real  # (H, T)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [1, 2, 7, 50, 257])
def test_s4d_kernel_by_split_powers_equals_the_table_of_every_power(T, dtype):
    """The kernel and the gradients of every SSM parameter through it; in float64 to rounding."""
    s4d, g = build("s4d", d_state=8, dt_min=0.01, dt_max=0.5).to(dtype), torch.randn(D, T, dtype=dtype)
    params = [s4d.log_dt, s4d.C, s4d.log_A_real, s4d.A_imag]
    got, want = s4d.kernel(T), direct_s4d_kernel(s4d, T)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * want.abs().max().item())
    grads = torch.autograd.grad((got * g).sum(), params), torch.autograd.grad((want * g).sum(), params)
    for name, a, b in zip(["log_dt", "C", "log_A_real", "A_imag"], *grads, strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * b.abs().max().item(), msg=name)


def test_vandermonde_split_covers_every_lag_with_less_than_one_row_to_spare():
    for T in range(1, 300):
        c, n = vandermonde_split(T)
        assert c * n >= T > c * (n - 1) and c * c >= T > (c - 1) ** 2


@pytest.mark.parametrize("name", NAMES)
def test_batch_pieces_change_nothing(name, monkeypatch):
    """On a CPU a long batch runs in pieces (models/cpu.py); forced here at a short length: 3 pieces of 1."""
    mixer, x, g = build(name), torch.randn(3, 19, D), torch.randn(3, 19, D)
    whole = mixer_and_gradients(mixer, x, g)
    monkeypatch.setattr(cpu, "PIECE_ELEMENTS", 1)
    assert len(cpu.batch_pieces(x, 1)) == 3
    names = ["y", "x", *(n for n, _ in mixer.named_parameters())]
    for pname, a, b in zip(names, mixer_and_gradients(mixer, x, g), whole, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5 * b.abs().max().item(), msg=pname)


def test_a_kernel_that_cannot_build_warns_once_and_the_pytorch_form_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cpu._load.cache_clear()
    try:
        with pytest.warns(UserWarning, match="broken kernel did not build"):
            assert cpu.load("broken", "this is not C") is None
        assert cpu.load("broken", "this is not C") is None  # cached: no second build, no second warning
        monkeypatch.setattr(cpu, "_compiler", lambda: None)
        with pytest.warns(UserWarning, match="no C compiler"):
            assert cpu.load("missing", "int f(void) { return 1; }") is None
        monkeypatch.setenv(cpu.ENV, "0")
        assert cpu.load("linear_attention_sums", linear_attention_module.SUMS_SOURCE) is None
        assert not linear_attention_module.kernel_runs(torch.randn(1))
        assert build("linear_attention")(torch.randn(2, 9, D)).shape == (2, 9, D)
    finally:
        cpu._load.cache_clear()


# -- learning ------------------------------------------------------------------------------------


def previous_token_accuracy(name: str, steps: int = 150, V: int = 8, T: int = 16, d: int = 32) -> float:
    """Embedding -> mixer -> Linear trained to output the token one position back; accuracy on fresh data.
    A mixer that moves no information across positions stays near 1/V."""
    mixer = build(name, d=d)
    emb, head = nn.Embedding(V, d), nn.Linear(d, V)
    pos = nn.Parameter(0.5 * torch.randn(T, d))  # used only by mixers that need positions, as the stack does
    needs_pos = MIXERS.get(name).config_cls.needs_positions
    params = [*mixer.parameters(), *emb.parameters(), *head.parameters(), *([pos] if needs_pos else [])]
    opt = torch.optim.Adam(params, lr=1e-2)

    def logits(tokens: torch.Tensor) -> torch.Tensor:
        return head(mixer(emb(tokens) + (pos if needs_pos else 0)))  # (B, T, V)

    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        tokens = torch.randint(0, V, (32, T), generator=gen)
        loss = F.cross_entropy(logits(tokens)[:, 1:].reshape(-1, V), tokens[:, :-1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    tokens = torch.randint(0, V, (256, T), generator=gen)
    with torch.no_grad():
        return (logits(tokens)[:, 1:].argmax(-1) == tokens[:, :-1]).float().mean().item()


@pytest.mark.parametrize("name", NAMES)
def test_mixer_learns_to_recall_the_previous_token(name):
    assert previous_token_accuracy(name) > 0.9


# -- GPU -----------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", NAMES)
def test_cuda_output_equals_cpu_output(name):
    """On CUDA, mamba takes mamba_ssm's fused scan when that package is installed: same parameters, same answer."""
    mixer, x = build(name), torch.randn(2, 37, D)
    with torch.no_grad():
        y = mixer(x)
        torch.testing.assert_close(mixer.cuda()(x.cuda()).cpu(), y, atol=1e-4, rtol=1e-3)
