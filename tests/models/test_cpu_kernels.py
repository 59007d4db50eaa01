"""models/cpu.py: a kernel run on the pool's threads runs in the floating-point mode of the thread that
called it (``train.flush_denormal`` sets the training thread's mode only)."""

from __future__ import annotations

import pytest
import torch

from seqbench.models import cpu
from seqbench.models.mamba import _scan_library


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)
    torch.set_flush_denormal(False)


def test_the_pool_threads_run_in_the_callers_floating_point_mode_and_get_their_own_back(two_threads):
    lib = _scan_library()
    if lib is None:
        pytest.skip("no C compiler here: the PyTorch forms run, on the caller's thread")
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    caller = lib.seqbench_fp_mode()
    seen: list[int] = []
    cpu.parallel(8, lambda b0, b1, slot: seen.append(lib.seqbench_fp_mode()), lib)
    assert len(seen) == 2 and seen == [caller, caller]
    torch.set_flush_denormal(False)
    plain = lib.seqbench_fp_mode()
    if plain == caller:
        pytest.skip("the kernel cannot read the floating-point mode on this architecture (x86 and AArch64 only)")
    after: list[int] = []
    cpu.parallel(8, lambda b0, b1, slot: after.append(lib.seqbench_fp_mode()), lib)
    assert after == [plain, plain]  # the mode of the earlier call did not stay behind on the pool's threads


def test_a_decaying_adjoint_is_flushed_on_every_thread_when_the_caller_flushes(two_threads):
    """A scan whose gradient comes from the last positions only, with decays of up to exp(-16 * 0.2) per step,
    reaches subnormal adjoints; flushed, its gradients are the same to float tolerance."""
    from seqbench.models.mamba import _KernelScan

    lib = _scan_library()
    if lib is None:
        pytest.skip("no C compiler here")
    g = torch.Generator().manual_seed(0)
    B, T, E, N = 4, 200, 8, 16
    x, Bm, C = torch.randn(B, T, E, generator=g), torch.randn(B, T, N, generator=g), torch.randn(B, T, N, generator=g)
    dl = torch.rand(B, T, E, generator=g) * 0.2
    A = -torch.arange(1, N + 1, dtype=torch.float32).repeat(E, 1)
    D = torch.randn(E, generator=g)
    gy = torch.zeros(B, T, E)
    gy[:, -2:] = torch.randn(B, 2, E, generator=g)

    def grads(flush: bool) -> list[torch.Tensor]:
        torch.set_flush_denormal(flush)
        leaves = [t.clone().requires_grad_() for t in (x, dl, A, Bm, C, D)]
        _KernelScan.apply(*leaves, lib, 64).backward(gy)
        return [t.grad for t in leaves]

    for kept, flushed in zip(grads(False), grads(True)):
        assert torch.allclose(kept, flushed, rtol=1e-5, atol=1e-30)
