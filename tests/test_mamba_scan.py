"""The mamba mixer's chunked CPU scan (models/mamba.py) against mambapy's own paths with the same
parameters: its parallel scan (pscan, what the mixer ran before) and its step-by-step loop, outputs and
every gradient, at odd lengths and across chunk boundaries; the functional scan against gradcheck;
the state_dict unchanged. No timings here (benchmarks/mamba_scan.py)."""

from __future__ import annotations

import pytest
import torch
from mambapy.mamba import MambaBlock
from mambapy.mamba import MambaConfig as MambaPyConfig

from seqbench.models import mamba as mamba_module
from seqbench.models.mamba import Mamba, selective_scan

torch.set_num_threads(1)
D = 16


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


@pytest.mark.parametrize("chunk", [None, 4])  # None: the default (one chunk up to 64 steps here); 4: many chunks
@pytest.mark.parametrize("T", [1, 7, 13, 50, 130])
def test_chunked_scan_equals_mambapy_pscan_and_loop(T, chunk, monkeypatch):
    if chunk is not None:
        monkeypatch.setattr(mamba_module, "default_chunk", lambda *shape: chunk)
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


def test_the_chunked_scan_is_what_the_mixer_runs_on_a_cpu(monkeypatch):
    calls = []
    monkeypatch.setattr(mamba_module, "selective_scan", lambda *a, **k: calls.append(1) or selective_scan(*a, **k))
    Mamba(D)(torch.randn(2, 5, D))
    assert calls == [1]


def test_selective_scan_passes_gradcheck_across_chunks():
    torch.manual_seed(0)
    B, T, E, N = 2, 9, 3, 4
    args = [
        torch.randn(B, T, E),  # x
        torch.randn(B, T, E),  # delta before softplus
        -torch.rand(E, N) * 3 - 0.1,  # A
        torch.randn(B, T, N),
        torch.randn(B, T, N),
        torch.randn(E),  # D
        torch.randn(B, T, E),  # z
        torch.randn(E),  # delta_bias
    ]
    args = [a.double().requires_grad_() for a in args]
    assert torch.autograd.gradcheck(lambda *a: selective_scan(*a, chunk=4), args)


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
