"""Mamba (Gu & Dao 2023, Sec. 3.2, Algorithm 2): the module (torch). Its config, which imports no
torch, is in ``models/configs/mamba.py``.

The block is ``mambapy.mamba.MambaBlock`` of the pinned PyPI package ``mambapy`` 1.2.0 (MIT): the
maintained pure-PyTorch Mamba-1, whose selective scan is a Blelloch parallel scan in PyTorch, so it
runs (and trains) on CPU; ``mamba-ssm``, the authors' package, needs CUDA. Only the block is used,
without mambapy's RMSNorm and residual (the stack provides those).

On CUDA inputs, when ``mamba_ssm`` is importable, the scan is mamba_ssm's fused CUDA kernel
(``selective_scan_fn``, which also fuses softplus(Δ + bias) and the ``y · silu(z)`` gate): mambapy's
own ``use_cuda`` path, switched on per call, so the same parameters run either way. Everywhere else
it is mambapy's parallel scan, which pads the sequence to the next power of two itself
(``pscan.pad_npo2``) and cuts the result: any T works, and padding at the end cannot reach earlier
outputs (the scan is causal). tests/test_mixers.py checks it against the sequential scan at T = 7, 13, 50.
"""

from __future__ import annotations

import functools

import torch
from mambapy.mamba import MambaBlock
from mambapy.mamba import MambaConfig as MambaPyConfig
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mamba import MambaConfig  # noqa: F401  (the config, re-exported beside its module)


@functools.cache
def cuda_selective_scan():
    """mamba_ssm's fused selective scan, or None where mamba_ssm (CUDA only) is not installed or loads no kernels."""
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except (ImportError, OSError, RuntimeError):  # not installed, or built against another CUDA/torch
        return None
    return selective_scan_fn


@MIXERS.module("mamba")
class Mamba(nn.Module):
    def __init__(self, d_model: int, d_state: int = 16, expand: int = 2, d_conv: int = 4, dt_rank: int | str = "auto"):
        super().__init__()
        # use_cuda=False at build: mambapy would print and fall back without mamba_ssm; forward decides per call
        self.block = MambaBlock(
            MambaPyConfig(
                d_model=d_model,
                n_layers=1,
                d_state=d_state,
                expand_factor=expand,
                d_conv=d_conv,
                dt_rank=dt_rank,
                use_cuda=False,
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, T, d_model)
        scan = cuda_selective_scan() if x.is_cuda else None
        self.block.config.use_cuda = scan is not None  # read by MambaBlock.forward and .ssm at every call
        if scan is not None:
            self.block.selective_scan_cuda = scan
        return self.block(x)
