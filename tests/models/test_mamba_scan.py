"""The mamba mixer's CPU scans (models/mamba.py) against mambapy's own paths with the same parameters:
its parallel scan (pscan, what the mixer ran before) and its step-by-step loop, outputs and every
gradient, at odd lengths and across chunk boundaries, for both CPU forms (the C kernel and the chunked
PyTorch scan it falls back to); the two forms against each other in float32 and float64; the functional
scan against gradcheck; threads and batch pieces changing nothing; the state_dict unchanged. No timings
here (benchmarks/mixer_speed.py, benchmarks/mamba_scan.py)."""

from __future__ import annotations

import pytest
import torch
from mambapy.mamba import MambaBlock
from mambapy.mamba import MambaConfig as MambaPyConfig

from seqbench.models import cpu
from seqbench.models import mamba as mamba_module
from seqbench.models.mamba import Mamba, selective_scan

torch.set_num_threads(1)
D = 16

needs_kernel = pytest.mark.skipif(
    cpu.load("mamba_scan", mamba_module.SCAN_SOURCE) is None, reason="no C compiler: the kernel cannot build here"
)
FORMS = [pytest.param("kernel", marks=needs_kernel), "pytorch"]


def use_form(form: str, monkeypatch) -> None:
    """The kernel where it builds (the default), or the chunked PyTorch scan (kernels off)."""
    if form == "pytorch":
        monkeypatch.setenv(cpu.ENV, "0")


def forward_backward(run, mixer: Mamba, x: torch.Tensor, g: torch.Tensor) -> list[torch.Tensor]:
    """The output, then the gradients of <output, g> with respect to x and every parameter."""
    x = x.clone().requires_grad_()
    y = run(x)
    return [y.detach(), *torch.autograd.grad((y * g).sum(), [x, *mixer.parameters()])]


def mambapy_pscan(mixer: Mamba):
    return lambda x: MambaBlock.forward(mixer.block, x)  # mambapy's own forward: its pscan on a CPU


def mambapy_loop(mixer: Mamba):
    def run(x):
        mixer.block.config.pscan = False  # mambapy's step loop: h_t = exp(ΔA) h_{t-1} + ΔB x_t
        try:
            return mixer(x)
        finally:
            mixer.block.config.pscan = True

    return run


def assert_all_close(got: list[torch.Tensor], want: list[torch.Tensor], names: list[str]) -> None:
    for name, a, b in zip(names, got, want, strict=True):
        # float32 through different summation orders: 1e-4 relative, an absolute floor at 1e-4 of the scale
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4 * b.abs().max().item() + 1e-7, msg=name)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("chunk", [None, 4])  # None: the default (one chunk up to 64 steps here); 4: many chunks
@pytest.mark.parametrize("T", [1, 7, 13, 50, 130])
def test_cpu_scans_equal_mambapy_pscan_and_loop(T, chunk, form, monkeypatch):
    use_form(form, monkeypatch)
    if chunk is not None:
        monkeypatch.setattr(mamba_module, "default_chunk", lambda *shape: chunk)
        monkeypatch.setattr(mamba_module, "kernel_chunk", lambda *shape: chunk)
    torch.manual_seed(T)
    mixer = Mamba(D)
    with torch.no_grad():  # away from the initialisation: larger Δ, a spread of A, D != 1
        mixer.block.dt_proj.bias.add_(torch.randn(D * 2))
        mixer.block.A_log.add_(0.5 * torch.randn_like(mixer.block.A_log))
        mixer.block.D.add_(torch.randn_like(mixer.block.D))
    x, g = torch.randn(3, T, D), torch.randn(3, T, D)
    names = ["y", "x", *(n for n, _ in mixer.named_parameters())]
    chunked = forward_backward(mixer, mixer, x, g)
    assert_all_close(chunked, forward_backward(mambapy_pscan(mixer), mixer, x, g), names)
    assert_all_close(chunked, forward_backward(mambapy_loop(mixer), mixer, x, g), names)


@pytest.mark.parametrize("form", FORMS)
def test_the_mixer_runs_the_kernel_where_it_builds_else_the_chunked_scan(form, monkeypatch):
    use_form(form, monkeypatch)
    calls = []
    for name in ("_KernelScan", "_ChunkedScan"):
        apply = getattr(mamba_module, name).apply
        monkeypatch.setattr(
            getattr(mamba_module, name), "apply", lambda *a, _f=apply, _n=name: calls.append(_n) or _f(*a)
        )
    Mamba(D)(torch.randn(2, 5, D))
    assert calls == ["_KernelScan" if form == "kernel" else "_ChunkedScan"]


def scan_inputs(B: int, T: int, E: int, N: int, dtype: torch.dtype) -> list[torch.Tensor]:
    """x, delta (before the softplus), A, B, C, D, z, delta_bias."""
    return [
        a.to(dtype).requires_grad_()
        for a in (
            torch.randn(B, T, E),
            torch.randn(B, T, E),
            -torch.rand(E, N) * 3 - 0.1,
            torch.randn(B, T, N),
            torch.randn(B, T, N),
            torch.randn(E),
            torch.randn(B, T, E),
            torch.randn(E),
        )
    ]


def scan_and_gradients(args: list[torch.Tensor], g: torch.Tensor, **kw) -> list[torch.Tensor]:
    y = selective_scan(*args, **kw)
    return [y.detach(), *torch.autograd.grad((y * g).sum(), args)]


SCAN_NAMES = ["y", "x", "delta", "A", "B", "C", "D", "z", "delta_bias"]


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T, chunk", [(1, None), (1, 4), (9, 4), (64, None), (65, 16), (130, None)])
def test_kernel_equals_the_chunked_pytorch_scan(T, chunk, dtype):
    """Outputs and all eight gradients; in float64 to rounding (the same recurrences in the same order)."""
    torch.manual_seed(T)
    args, g = scan_inputs(3, T, 5, 4, dtype), torch.randn(3, T, 5, dtype=dtype)
    kernel = scan_and_gradients(args, g, chunk=chunk, kernel=True)
    pytorch = scan_and_gradients(args, g, chunk=chunk, kernel=False)
    if dtype == torch.float64:
        for name, a, b in zip(SCAN_NAMES, kernel, pytorch, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=name)
    else:
        assert_all_close(kernel, pytorch, SCAN_NAMES)


@needs_kernel
def test_kernel_threads_split_the_batch_and_sum_the_shared_gradients():
    torch.manual_seed(0)
    args, g = scan_inputs(5, 37, 6, 4, torch.float64), torch.randn(5, 37, 6, dtype=torch.float64)
    one = scan_and_gradients(args, g, kernel=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(3)  # slices of 1, 2 and 2 sequences, each with its own partial sums of dA and dD
    try:
        three = scan_and_gradients(args, g, kernel=True)
    finally:
        torch.set_num_threads(threads)
    for name, a, b in zip(SCAN_NAMES, one, three, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=name)


@pytest.mark.parametrize("form", FORMS)
def test_batch_pieces_change_nothing(form, monkeypatch):
    """On a CPU a long batch runs in pieces (models/cpu.py); forced here at a short length: 5 pieces of 1."""
    use_form(form, monkeypatch)
    torch.manual_seed(0)
    mixer, x, g = Mamba(D), torch.randn(5, 23, D), torch.randn(5, 23, D)
    names = ["y", "x", *(n for n, _ in mixer.named_parameters())]
    whole = forward_backward(mixer, mixer, x, g)
    monkeypatch.setattr(cpu, "PIECE_ELEMENTS", 23 * 4 * D)
    assert len(cpu.batch_pieces(x, 4 * D)) == 5
    assert_all_close(forward_backward(mixer, mixer, x, g), whole, names)


@pytest.mark.parametrize("kernel", [pytest.param(True, marks=needs_kernel), False])
def test_selective_scan_passes_gradcheck_across_chunks(kernel):
    torch.manual_seed(0)
    args = scan_inputs(2, 9, 3, 4, torch.float64)
    assert torch.autograd.gradcheck(lambda *a: selective_scan(*a, chunk=4, kernel=kernel), args)


def test_no_grad_forward_equals_the_training_forward():
    mixer, x = Mamba(D), torch.randn(2, 40, D)
    y = mixer(x)
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), y.detach())


def test_state_dict_is_mambapys():
    """Checkpoints of the mixer before the chunked scan (a plain MambaBlock under ``block.``) still load."""
    torch.manual_seed(0)
    plain = MambaBlock(MambaPyConfig(d_model=D, n_layers=1))
    mixer = Mamba(D)
    mixer.load_state_dict({f"block.{k}": v for k, v in plain.state_dict().items()})
    x = torch.randn(2, 11, D)
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), plain(x), rtol=1e-4, atol=1e-5)
