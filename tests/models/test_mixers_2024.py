"""The 2024-25 mixers, ``mamba2`` (Dao & Gu 2024) and ``gated_deltanet`` (Yang et al. 2025; negative
eigenvalues: Grazzi et al. 2025): their chunked forms against the step-by-step recurrences they stand
for (outputs and gradients, float64, odd lengths, chunk sizes that do and do not divide them), the
mixer contract, every knob reaching the module, the eigenvalues that ``allow_neg_eigval`` allows, MAC
counts by hand and against FlopCounterMode, learning in the stack, and on a GPU the field's kernels
against the CPU form."""

from __future__ import annotations

import functools
import inspect

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import seqbench.models.configs.gated_deltanet
import seqbench.models.configs.mamba2  # noqa: F401  (each config module registers itself in MIXERS)
from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS
from seqbench.bench.training.train import train_run
from seqbench.models import cpu
from seqbench.models import gated_deltanet as gdn_module
from seqbench.models import mamba2 as mamba2_module
from seqbench.models.gated_deltanet import GatedDeltaNet, gated_delta_chunked, l2_normalise
from seqbench.models.mamba2 import Mamba2, gated_rms_norm, short_conv_silu, ssd
from seqbench.testing import check_mixer

torch.set_num_threads(1)

NAMES = ["mamba2", "gated_deltanet"]
D = 16


def config(name: str, **args):
    return MIXERS.get(name).config_cls(name=name, **args)


def build(name: str, d: int = D, seed: int = 0, **args) -> nn.Module:
    torch.manual_seed(seed)
    return MIXERS.get(name).cls(d, **config(name, **args).args())


# -- the recurrences, one step at a time ------------------------------------------------------------


def ssd_recurrence(x, a, B, C):
    """Mamba-2's SSM as written: ``H_t = exp(a_t) H_{t-1} + x_t B_tᵀ``, ``y_t = H_t C_t`` per head, from 0.
    x (b, T, H, P), a (b, T, H), B, C (b, T, N) -> (b, T, H, P)."""
    b, T, H, P = x.shape
    state = x.new_zeros(b, H, P, B.shape[-1])
    ys = []
    for t in range(T):
        state = a[:, t, :, None, None].exp() * state + x[:, t, :, :, None] * B[:, t, None, None, :]
        ys.append((state * C[:, t, None, None, :]).sum(-1))
    return torch.stack(ys, dim=1)


def gated_delta_recurrence(q, k, v, g, beta, scale):
    """The gated delta rule as written: ``S_t = exp(g_t) (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ``,
    ``o_t = scale · S_tᵀ q_t`` per head, from 0 (fla's ``naive_recurrent_gated_delta_rule``, in float64).
    q, k (b, T, H, K), v (b, T, H, V), g, beta (b, T, H) -> (b, T, H, V)."""
    b, T, H, K = q.shape
    state = q.new_zeros(b, H, K, v.shape[-1])
    eye = torch.eye(K, dtype=q.dtype)
    os = []
    for t in range(T):
        kt, bt = k[:, t], beta[:, t, :, None, None]
        transition = g[:, t, :, None, None].exp() * (eye - bt * kt[..., :, None] * kt[..., None, :])  # (b, H, K, K)
        state = transition @ state + bt * kt[..., :, None] * v[:, t, :, None, :]
        os.append(scale * (q[:, t, :, :, None] * state).sum(-2))
    return torch.stack(os, dim=1)


def ssd_reference(x, dt, A, B, C, D, dt_bias):
    """``ssd`` by the recurrence: Δ = softplus(dt + dt_bias), the SSM of x·Δ with log-decays A·Δ, plus D·x."""
    delta = F.softplus(dt + dt_bias)
    return ssd_recurrence(x * delta[..., None], A * delta, B, C) + x * D[:, None]


def ssd_inputs(T: int, seed: int = 0, strong: bool = False):
    g = torch.Generator().manual_seed(seed)
    b, H, P, N = 2, 3, 4, 5

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    A = -torch.rand(H, generator=g, dtype=torch.float64) * (30.0 if strong else 2.0)  # per head, < 0
    return [
        t.requires_grad_(True)
        for t in (randn(b, T, H, P), randn(b, T, H), A, randn(b, T, N), randn(b, T, N), randn(H), randn(H))
    ]


def delta_inputs(T: int, neg: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b, H, K, V = 2, 3, 4, 6
    q = l2_normalise(torch.randn(b, T, H, K, generator=g, dtype=torch.float64))
    k = l2_normalise(torch.randn(b, T, H, K, generator=g, dtype=torch.float64))
    v = torch.randn(b, T, H, V, generator=g, dtype=torch.float64)
    gate = -torch.rand(b, T, H, generator=g, dtype=torch.float64)
    beta = torch.rand(b, T, H, generator=g, dtype=torch.float64) * (2.0 if neg else 1.0)
    return [t.requires_grad_(True) for t in (q, k, v, gate, beta)]


def assert_same_outputs_and_gradients(f, ref, inputs, atol=1e-8):
    y, y_ref = f(*inputs), ref(*inputs)
    torch.testing.assert_close(y, y_ref, atol=atol, rtol=1e-7)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(9), dtype=y.dtype)  # a random cotangent
    grads = torch.autograd.grad((y * w).sum(), inputs)
    grads_ref = torch.autograd.grad((y_ref * w).sum(), inputs)
    for i, (gr, gr_ref) in enumerate(zip(grads, grads_ref)):
        torch.testing.assert_close(gr, gr_ref, atol=atol, rtol=1e-7, msg=lambda m, i=i: f"input {i}: {m}")


# -- chunked form == recurrence ----------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 7, 33])
@pytest.mark.parametrize("chunk", [8, 16])
def test_ssd_chunks_equal_the_recurrence(T, chunk):
    """Outputs and the gradients of all seven inputs (x, dt, A, B, C, D, dt_bias): ``ssd`` has its own backward."""
    assert_same_outputs_and_gradients(lambda *t: ssd(*t, chunk=chunk, kernel=False), ssd_reference, ssd_inputs(T))


def test_ssd_chunks_equal_the_recurrence_under_strong_decay():
    """Decays of e^-30 a step (Mamba-2's A reaches -16, Δ can exceed 1): products across a chunk fall far
    below float range, which the chunked form must neither overflow nor turn into NaN gradients."""
    assert_same_outputs_and_gradients(
        lambda *t: ssd(*t, chunk=16, kernel=False), ssd_reference, ssd_inputs(37, strong=True)
    )


@pytest.mark.parametrize("T", [1, 7, 33])
@pytest.mark.parametrize("chunk", [8, 16])
@pytest.mark.parametrize("neg", [False, True], ids=["beta<1", "beta<2"])
def test_gated_delta_chunks_equal_the_recurrence(T, chunk, neg):
    assert_same_outputs_and_gradients(
        lambda *t: gated_delta_chunked(*t, 0.5, chunk=chunk, kernel=False),
        lambda *t: gated_delta_recurrence(*t, 0.5),
        delta_inputs(T, neg),
    )


# -- the C kernels (models/cpu.py) == recurrence ------------------------------------------------------

needs_ssd_kernel = pytest.mark.skipif(
    cpu.load("mamba2_ssd", mamba2_module.SSD_SOURCE) is None, reason="no C compiler: the kernel cannot build here"
)
needs_rule_kernel = pytest.mark.skipif(
    cpu.load("gated_delta_rule", gdn_module.RULE_SOURCE) is None, reason="no C compiler: the kernel cannot build here"
)


@needs_ssd_kernel
@pytest.mark.parametrize("T", [1, 7, 33, 70])
@pytest.mark.parametrize("steps", [1, 3, 8, 64])
def test_ssd_kernel_equals_the_recurrence(T, steps):
    """In float64, outputs and all seven gradients, with a checkpoint every ``steps`` steps (every step, several
    partial chunks, one chunk longer than T)."""
    assert_same_outputs_and_gradients(lambda *t: ssd(*t, chunk=steps, kernel=True), ssd_reference, ssd_inputs(T))


@needs_ssd_kernel
def test_ssd_kernel_equals_the_recurrence_under_strong_decay():
    assert_same_outputs_and_gradients(
        lambda *t: ssd(*t, chunk=5, kernel=True), ssd_reference, ssd_inputs(37, strong=True)
    )


@needs_rule_kernel
@pytest.mark.parametrize("T", [1, 7, 33, 70])
@pytest.mark.parametrize("steps", [1, 3, 8, 64])
@pytest.mark.parametrize("neg", [False, True], ids=["beta<1", "beta<2"])
def test_gated_delta_kernel_equals_the_recurrence(T, steps, neg):
    assert_same_outputs_and_gradients(
        lambda *t: gated_delta_chunked(*t, 0.5, chunk=steps, kernel=True),
        lambda *t: gated_delta_recurrence(*t, 0.5),
        delta_inputs(T, neg),
    )


@pytest.mark.parametrize(
    "name, needs",
    [
        pytest.param("mamba2", "_KernelSSD", marks=needs_ssd_kernel),
        pytest.param("gated_deltanet", "_KernelRule", marks=needs_rule_kernel),
    ],
)
@pytest.mark.parametrize("kernels", ["on", "off"])
def test_the_mixer_runs_its_kernel_on_a_cpu_unless_kernels_are_off(name, needs, kernels, monkeypatch):
    """float32 on a CPU: the kernel (default), or the chunked PyTorch form under ``SEQBENCH_CPU_KERNELS=0``;
    both give the same outputs and gradients."""
    module = mamba2_module if name == "mamba2" else gdn_module
    chunked = "_SSD" if name == "mamba2" else "_GatedDelta"
    calls = []
    for cls in (needs, chunked):
        apply = getattr(module, cls).apply
        monkeypatch.setattr(getattr(module, cls), "apply", lambda *a, _f=apply, _n=cls: calls.append(_n) or _f(*a))
    if kernels == "off":
        monkeypatch.setenv(cpu.ENV, "0")
    mixer, x = build(name), torch.randn(3, 70, D, requires_grad=True)
    y = mixer(x)
    (gx,) = torch.autograd.grad(y.square().sum(), x)
    assert calls == [needs if kernels == "on" else chunked]
    monkeypatch.setenv(cpu.ENV, "1" if kernels == "off" else "0")  # the other form, same parameters
    y2 = mixer(x)
    (gx2,) = torch.autograd.grad(y2.square().sum(), x)
    torch.testing.assert_close(y2, y, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(gx2, gx, atol=2e-4, rtol=1e-3)


@pytest.mark.skipif(cpu.load("short_conv_silu", mamba2_module.CONV_SOURCE) is None, reason="no C compiler")
def test_the_short_convolution_kernel_equals_its_pytorch_form_in_float32_at_large_inputs():
    """Pre-activations of +-100 and beyond: the kernel's SiLU (an exp2 polynomial, clamped) neither overflows nor
    loses the gradient; four threads over the batch sum the weight's and bias's gradients."""
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(5, 50, 9, generator=g) * 40).requires_grad_()
    w, b = torch.randn(9, 1, 4, generator=g, requires_grad=True), torch.randn(9, generator=g, requires_grad=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        y = short_conv_silu(x, w, b, kernel=True)
        grads = torch.autograd.grad(y.square().sum(), (x, w, b))
    finally:
        torch.set_num_threads(threads)
    y_ref = short_conv_silu(x, w, b, kernel=False)
    torch.testing.assert_close(y, y_ref, rtol=1e-6, atol=1e-4)
    for a, r in zip(grads, torch.autograd.grad(y_ref.square().sum(), (x, w, b)), strict=True):
        torch.testing.assert_close(a, r, rtol=1e-5, atol=1e-6 * r.abs().max().item())


@pytest.mark.parametrize("name", ["mamba2", "gated_deltanet"])
def test_the_kernels_split_the_batch_over_threads_and_sum_the_shared_gradients(name):
    """Three threads over five sequences (slices of 1, 2 and 2, each with its own partial sums of the shared
    parameters' gradients, A and D for SSD): the same numbers as one thread, in float64."""
    if name == "mamba2":
        f, inputs = (lambda *t: ssd(*t, chunk=4, kernel=None)), ssd_inputs(21)
    else:
        f, inputs = (lambda *t: gated_delta_chunked(*t, 0.5, kernel=None)), delta_inputs(21, True)
    inputs = [t.detach().repeat_interleave(3, 0)[:5].requires_grad_() if t.dim() > 1 else t for t in inputs]
    one = f(*inputs)
    g1 = torch.autograd.grad(one.sum(), inputs)
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        three = f(*inputs)
        g3 = torch.autograd.grad(three.sum(), inputs)
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(three, one, rtol=1e-12, atol=1e-12)
    for a, b in zip(g3, g1, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "name, args", [("mamba2", {}), ("gated_deltanet", {}), ("gated_deltanet", {"allow_neg_eigval": True})]
)
@pytest.mark.parametrize("T", [5, 45, 70])
def test_whole_mixer_equals_its_recurrence_at_the_default_chunk(name, args, T, monkeypatch):
    """The module, in float64, with its rule swapped for the step-by-step one: every chunking of the
    default chunk size (one partial chunk, several with the last padded) gives the same outputs."""
    mixer = build(name, **args).double()
    x = torch.randn(2, T, D, dtype=torch.float64)
    with torch.no_grad():
        y = mixer(x)
        if name == "mamba2":
            monkeypatch.setattr(mamba2_module, "ssd", ssd_reference)
        else:
            monkeypatch.setattr(gdn_module, "gated_delta_chunked", lambda *t: gated_delta_recurrence(*t))
        torch.testing.assert_close(mixer(x), y, atol=1e-9, rtol=1e-7)


@pytest.mark.parametrize("T", [1, 3, 9])
def test_the_written_out_helpers_have_the_gradients_of_their_definitions(T):
    """The short convolution, the gated norms and the L2 normalisation have their own backward: gradcheck
    them (T shorter than the convolution's 4 taps too)."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)

    x, weight, bias = rand(2, T, 5), rand(5, 1, 4), rand(5)
    conv = nn.Conv1d(5, 5, 4, groups=5).double()
    with torch.no_grad():
        conv.weight.copy_(weight), conv.bias.copy_(bias)
        direct = F.silu(conv(F.pad(x.transpose(1, 2), (3, 0)))).transpose(1, 2)  # the causal convolution itself
    for kernel in (False, None):  # the PyTorch form, and the C kernel wherever it builds (``cpu.load``)
        conv_silu = functools.partial(short_conv_silu, kernel=kernel)
        assert torch.autograd.gradcheck(conv_silu, (x, weight, bias))
        assert torch.autograd.gradcheck(conv_silu, (x, weight, None))
        with torch.no_grad():
            torch.testing.assert_close(conv_silu(x, weight, bias), direct)
    y, z, w = rand(2, T, 3, 6), rand(2, T, 3, 6), rand(6)
    for gate_first in (True, False):
        assert torch.autograd.gradcheck(lambda *t, gf=gate_first: gated_rms_norm(*t, gf, 1e-5), (y, z, w))
    with torch.no_grad():
        u = y * F.silu(z)
        torch.testing.assert_close(
            gated_rms_norm(y, z, w, True, 1e-5), u * torch.rsqrt(u.square().mean(-1, True) + 1e-5) * w
        )
        torch.testing.assert_close(
            gated_rms_norm(y, z, w, False, 1e-5), y * torch.rsqrt(y.square().mean(-1, True) + 1e-5) * w * F.silu(z)
        )
    assert torch.autograd.gradcheck(l2_normalise, (rand(2, T, 3, 4),))


# -- negative eigenvalues ----------------------------------------------------------------------------


def transition_eigenvalues(mixer: GatedDeltaNet, x: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of every step's transition α_t (I - β_t k_t k_tᵀ), (b, T, H, K), from the layer's own gates."""
    with torch.no_grad():
        _, k, _, g, beta, _ = mixer.heads(x)
        eye = torch.eye(k.shape[-1], dtype=k.dtype)
        A = g.exp()[..., None, None] * (eye - beta[..., None, None] * k[..., :, None] * k[..., None, :])
        return torch.linalg.eigvalsh(A.double())  # symmetric: real eigenvalues


def test_allow_neg_eigval_gives_negative_eigenvalues_and_never_leaves_minus_one_to_one():
    x = 3 * torch.randn(4, 50, D, generator=torch.Generator().manual_seed(0))
    neg = transition_eigenvalues(build("gated_deltanet", allow_neg_eigval=True), x)
    pos = transition_eigenvalues(build("gated_deltanet", allow_neg_eigval=False), x)
    assert neg.min() < -0.1 and neg.min() >= -1 and neg.max() <= 1
    assert pos.min() >= 0 and pos.max() <= 1


def test_a_reflection_flips_the_state_every_step():
    """β = 2, no decay, the same key every step: (I - 2kkᵀ) reflects the state along k, so what was
    written under k reads back with alternating sign; with β < 1 it never changes sign."""
    T, K = 9, 4
    k = torch.full((1, T, 1, K), 0.5, dtype=torch.float64)  # unit length
    v = torch.zeros(1, T, 1, 1, dtype=torch.float64)
    v[0, 0] = 1.0  # written once, at t = 0
    beta = torch.full((1, T, 1), 2.0, dtype=torch.float64)
    beta[0, 0] = 1.0  # the first write stores v under k exactly
    g = torch.zeros(1, T, 1, dtype=torch.float64)
    reads = gated_delta_chunked(k, k, v, g, beta, 1.0, chunk=4)[0, :, 0, 0]
    torch.testing.assert_close(reads, torch.tensor([(-1.0) ** t for t in range(T)], dtype=torch.float64))
    assert (gated_delta_chunked(k, k, v, g, beta.clamp(max=0.9), 1.0, chunk=4) >= 0).all()


# -- the mixer contract ------------------------------------------------------------------------------


def test_registry_binds_each_config_to_its_module_and_documents_it():
    assert {n: MIXERS.get(n).cls for n in NAMES} == {"mamba2": Mamba2, "gated_deltanet": GatedDeltaNet}
    assert all(MIXERS.get(n).doc for n in NAMES)
    assert not any(MIXERS.get(n).config_cls.needs_positions for n in NAMES)  # recurrences order the sequence


@pytest.mark.parametrize("name", NAMES)
def test_constructor_takes_exactly_the_config_fields(name):
    params = dict(inspect.signature(MIXERS.get(name).cls.__init__).parameters)
    params.pop("self"), params.pop("d_model")
    causal = params.pop("causal")  # the Mixer protocol's (models/configs/mixer.py), not a knob
    assert causal.kind is causal.KEYWORD_ONLY
    assert {k: p.default for k, p in params.items()} == config(name).args()


@pytest.mark.parametrize(
    "name, args",
    [
        ("mamba2", {}),
        ("mamba2", {"n_heads": 1, "d_conv": 2}),
        ("gated_deltanet", {}),
        ("gated_deltanet", {"allow_neg_eigval": True, "expand_v": 2, "n_heads": 4}),
    ],
)
def test_passes_the_mixer_checks(name, args):
    """Shapes, finite outputs, causality at every cut, gradients to every parameter (seqbench.testing)."""
    check_mixer(name, d_model=D, T=12, **args)
    check_mixer(name, d_model=D, T=70, **args)  # several chunks


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("T", [1, 2, 7, 64, 65])
def test_output_shape_at_any_length(name, T):
    assert build(name)(torch.randn(2, T, D)).shape == (2, T, D)


FIELD_CHANGES = [
    ("mamba2", "d_state", 8),
    ("mamba2", "expand", 1),
    ("mamba2", "n_heads", 1),
    ("mamba2", "d_conv", 2),
    ("gated_deltanet", "n_heads", 4),
    ("gated_deltanet", "expand_v", 2),
    ("gated_deltanet", "d_conv", 2),
    ("gated_deltanet", "allow_neg_eigval", True),
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
    x = 3 * torch.randn(2, 20, D)
    with torch.no_grad():
        assert (default(x) - changed(x)).abs().amax() > 1e-4


def test_heads_that_do_not_divide_are_refused_by_name():
    with pytest.raises(ValueError, match=r"n_heads: 3 does not divide the inner width expand·d_model = 32"):
        Mamba2(16, n_heads=3)
    with pytest.raises(ValueError, match=r"n_heads: 3 does not divide model\.d_model=16"):
        GatedDeltaNet(16, n_heads=3)
    with pytest.raises(UserError, match=r"model\.mixer_args\.n_heads: 3 does not divide the inner width"):
        build_config(["model=stack", "model.mixer=mamba2", "model.d_model=16", "model.mixer_args.n_heads=3"])


# -- MACs ----------------------------------------------------------------------------------------------


def test_mamba2_macs_by_hand():
    """d_model 4, E 2 (inner 8), 2 heads of P = 4, N 3, 2 taps, at T = 5 (one chunk) and T = 70 (two of 64)."""
    cfg = config("mamba2", d_state=3, expand=2, n_heads=2, d_conv=2)
    # per position: in projection 4 x (2·8 + 2·3 + 2) = 96, convolution 2 x (8 + 6) = 28, out projection 8 x 4 = 32
    per_position = 96 + 28 + 32
    # one chunk of 5: C Bᵀ 5·5·3 = 75 and, per head, the masked product 5·5·4 = 100
    assert cfg.forward_macs(4, 5) == 5 * per_position + 75 + 2 * 100
    # two chunks of 64: C Bᵀ 64·64·3 and 2 heads x 64·64·4 each, then per chunk and head the state 4·64·3 and
    # the outputs from the state before 64·3·4
    assert cfg.forward_macs(4, 70) == 70 * per_position + 2 * (64 * 64 * 3 + 2 * 64 * 64 * 4) + 2 * 2 * 2 * 768


def test_gated_deltanet_macs_by_hand():
    """d_model 4, 2 heads of K = 2, V = 4, 2 taps, at T = 5 (one chunk) and T = 70 (three of 32)."""
    cfg = config("gated_deltanet", n_heads=2, expand_v=2, d_conv=2)
    # per position: q, k (4 x 4 each), v and gate (4 x 8 each), a and b (4 x 2 each), convolutions 2 x (4 + 4 + 8),
    # out projection 8 x 4
    per_position = 2 * 16 + 2 * 32 + 2 * 8 + 32 + 32
    # one chunk of 5, per head: k kᵀ and q kᵀ 5·5·2 each, scores @ U 5·5·4, the solve 5·4/2 x (2 + 4)
    assert cfg.solve_macs(4, 5) == 2 * 10 * 6
    assert cfg.forward_macs(4, 5) == 5 * per_position + 2 * (2 * 50 + 100) + 120
    # three chunks of 32, per head: inside 3 x (2·32·32·2 + 32·32·4); chunks 0, 1 write (2·32·4), chunks 1, 2
    # read (32·32·2 + 32·2·4), chunk 1 carries (2·32·2 + 2·2·4); solves 3 x 32·31/2 x 6
    inside = 3 * (2 * 2048 + 4096)
    across = 2 * (256 + 2048 + 256) + (128 + 16)
    assert cfg.forward_macs(4, 70) == 70 * per_position + 2 * (inside + across) + 2 * 3 * 496 * 6


@pytest.mark.parametrize(
    "name, args",
    [
        ("mamba2", {}),
        ("mamba2", {"d_state": 3, "n_heads": 2, "d_conv": 2}),
        ("gated_deltanet", {}),
        ("gated_deltanet", {"expand_v": 2, "n_heads": 4}),
    ],
)
@pytest.mark.parametrize("T", [5, 33, 64, 70, 200])
def test_forward_macs_match_flop_counter_mode(name, args, T, monkeypatch):
    """FlopCounterMode counts matrix products (2 FLOPs a MAC) and no triangular solve (``solve_macs``) nor
    the convolutions, run as shifted multiply-adds (``conv_macs``). The count is the chunked form's (the GPU
    kernels'), so the chunked PyTorch form runs here, not the CPU kernel, which FlopCounterMode cannot see."""
    monkeypatch.setenv(cpu.ENV, "0")
    B, cfg, mixer = 3, config(name, **args), build(name, **args)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        mixer(torch.randn(B, T, D))
    uncounted = cfg.conv_macs(D, T) + (cfg.solve_macs(D, T) if hasattr(cfg, "solve_macs") else 0)
    assert counter.get_total_flops() == 2 * B * (cfg.forward_macs(D, T) - uncounted)


def test_stack_counts_its_mixer():
    for mixer in NAMES:
        cfg = build_config(
            ["task=copy", "model=stack", f"model.mixer={mixer}", "model.d_model=16", "tracking.wandb=off"]
        )
        assert cfg.model.forward_macs is not None
        assert cfg.model.mixer_config().forward_macs(16, 20) == config(mixer).forward_macs(16, 20)


# -- learning ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mixer", NAMES)
def test_a_small_stack_beats_the_memoryless_baseline_on_copy(mixer, out_dir):
    """Copy 3 symbols of 4 across a delay of 10: a model without memory stays at 1/4 accuracy."""
    cfg = build_config(
        {},
        [
            "task=copy",
            "task.n_symbols=3",
            "task.alphabet=4",
            "task.delay=10",
            "model=stack",
            f"model.mixer={mixer}",
            "model.d_model=32",
            "model.n_layers=2",
            "optim.lr=0.003",
            "train.batch_size=32",
            "train.max_steps=300",
            "train.val_every=100",
            "train.val_batches=4",
            "eval.test=false",
            "tracking.wandb=off",
            "train.early_stop={metric: val/acc, threshold: 0.95}",
            f"out_dir={out_dir}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["final"]["val/acc"] > r["baseline"]["val/acc"] + 0.3, r["final"]
    assert r["final"]["val/loss"] < r["baseline"]["val/loss"] / 2, (r["final"], r["baseline"])


# -- GPU -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hopper, triton_ok, tilelang, refused",
    [(True, False, False, True), (True, True, False, False), (False, False, False, False), (True, False, True, False)],
)
def test_fla_refusing_its_gated_backward_sends_the_mixers_to_their_pytorch_form(
    monkeypatch, hopper, triton_ok, tilelang, refused
):
    """fla 0.6.0 raises in the backward of its gated kernels on Hopper with Triton 3.4.0-3.7.0 unless tilelang is
    installed (seen on an H200): there, and only there, the mixers take their chunked form, with a warning."""
    import importlib.util
    import sys
    import types

    fla = types.ModuleType("fla")
    fla.utils = types.ModuleType("fla.utils")  # type: ignore[attr-defined]
    fla.utils.TRITON_ABOVE_3_4_0, fla.utils.TRITON_ABOVE_3_7_1 = True, triton_ok  # type: ignore[attr-defined]
    fla.utils.hardware = types.ModuleType("fla.utils.hardware")  # type: ignore[attr-defined]
    fla.utils.hardware.IS_NVIDIA_HOPPER = hopper  # type: ignore[attr-defined]
    for name, module in {"fla": fla, "fla.utils": fla.utils, "fla.utils.hardware": fla.utils.hardware}.items():
        monkeypatch.setitem(sys.modules, name, module)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda n, *a: (
            object() if n == "tilelang" and tilelang else (None if n == "tilelang" else real_find_spec(n, *a))
        ),
    )
    mamba2_module.fla_gated_backward_refused.cache_clear()
    try:
        if refused:
            with pytest.warns(UserWarning, match=r"gated_deltanet: .*fla #640.*PyTorch chunked form"):
                assert mamba2_module.fla_gated_backward_refused("gated_deltanet")
        else:
            assert not mamba2_module.fla_gated_backward_refused("gated_deltanet")
    finally:
        mamba2_module.fla_gated_backward_refused.cache_clear()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "name, args", [("mamba2", {}), ("gated_deltanet", {}), ("gated_deltanet", {"allow_neg_eigval": True})]
)
def test_the_fields_kernel_equals_the_cpu_form(name, args, monkeypatch):
    """On CUDA, mamba2 runs mamba_ssm's ``mamba_chunk_scan_combined`` (or fla's ``chunk_simple_gla``) and
    gated_deltanet fla's ``chunk_gated_delta_rule``: the same parameters give the CPU chunked form's outputs
    and gradients. Where fla refuses its gated backward (Hopper with Triton < 3.7.1, fla #640), the mixer
    runs its PyTorch form on the GPU, and only the kernel's forward is compared."""
    module = mamba2_module if name == "mamba2" else gdn_module
    kernel = mamba2_module.cuda_ssd() if name == "mamba2" else gdn_module.cuda_chunk_rule()
    forward_only = kernel is None and mamba2_module.fla_gated_backward_refused(name)
    if forward_only:
        kernel = mamba2_module.fla_ssd() if name == "mamba2" else gdn_module.fla_chunk_rule()
    if kernel is None:
        pytest.skip(f"{'mamba_ssm nor fla' if name == 'mamba2' else 'flash-linear-attention'} is not installed")
    monkeypatch.setattr(module, "cuda_ssd" if name == "mamba2" else "cuda_chunk_rule", lambda: kernel)
    mixer, x = build(name, d=64, **args), torch.randn(2, 150, 64)  # three chunks of 64, the last partial
    y = mixer(x)
    (y * y).sum().backward()
    grads = {k: p.grad.clone() for k, p in mixer.named_parameters()}
    mixer.zero_grad()
    mixer.cuda()
    if forward_only:
        with torch.no_grad():
            torch.testing.assert_close(mixer(x.cuda()).cpu(), y.detach(), atol=2e-3, rtol=2e-3)
        return
    y_gpu = mixer(x.cuda())
    (y_gpu * y_gpu).sum().backward()
    torch.testing.assert_close(y_gpu.cpu(), y, atol=2e-3, rtol=2e-3)
    for k, p in mixer.named_parameters():
        torch.testing.assert_close(p.grad.cpu(), grads[k], atol=1e-2, rtol=1e-2, msg=lambda m, k=k: f"{k}: {m}")
