"""S4D (Gu, Gupta, Goel & Ré 2022): the module (torch). Its config, which imports no torch, is in
``models/configs/s4d.py``.

Written here after the reference ``models/s4/s4d.py`` of the state-spaces/s4 repository (Apache-2.0):
no PyPI package provides the layer (the PyPI name ``s4d`` is an unrelated diarization toolkit, and
state-spaces/s4 is not packaged). Same initialisation and computation:

- S4D-Lin (Sec. 4): ``A_n = -1/2 + i·π·n`` for the N/2 modes, ``log Δ`` uniform in
  [log dt_min, log dt_max] per channel, C complex standard normal, B = 1 folded into C, D standard normal;
- zero-order hold (Sec. 2, eq. 4): ``Ā = exp(ΔA)``, ``B̄ = (exp(ΔA) - 1) / A``;
- kernel ``K_l = 2·Re Σ_n C_n B̄_n Ā_n^l`` (the 2·Re sums each mode with its conjugate), a Vandermonde
  product (Sec. 3.1), then ``y = K * u + D·u`` by a causal FFT convolution of length 2T;
- GELU, then a 1x1 convolution to 2·d_model and a GLU (here an ``nn.Linear`` on (B, T, d), the same map).

Departures: the reference gives the SSM parameters (log Δ, A, C) their own learning rate 0.001 and no
weight decay through a ``_optim`` attribute its trainer reads; the harness has one optimiser group,
so they train like every other parameter. Dropout is left to the stack. The Vandermonde product is
written in real arithmetic (real and imaginary parts stacked, the same sum) so its MACs are the real
ones and FlopCounterMode counts it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.s4d import S4DConfig, rfft_macs  # noqa: F401  (the config, re-exported beside its module)


def causal_fft_conv(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``y_t = Σ_{j≤t} k_j u_{t-j}`` per channel: u (B, C, T), k (C, T) -> (B, C, T). FFTs of length 2T
    make the circular convolution a linear one, so no output wraps around to read the future."""
    T = u.shape[-1]
    n = 2 * T
    spectrum = torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n)  # (B, C, T + 1)
    return torch.fft.irfft(spectrum, n=n)[..., :T]  # (B, C, T)


@MIXERS.module("s4d")
class S4D(nn.Module):
    def __init__(self, d_model: int, d_state: int = 64, dt_min: float = 0.001, dt_max: float = 0.1):
        super().__init__()
        if d_state < 2 or d_state % 2:
            raise ValueError(f"model.mixer_args.d_state: {d_state}; S4D keeps N/2 conjugate pairs, use an even N >= 2")
        H, modes = d_model, d_state // 2
        self.D = nn.Parameter(torch.randn(H))
        self.log_dt = nn.Parameter(torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        self.C = nn.Parameter(torch.view_as_real(torch.randn(H, modes, dtype=torch.cfloat)))  # (H, N/2, 2)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, modes)))  # Re A = -exp(.) stays negative
        self.A_imag = nn.Parameter(math.pi * torch.arange(modes, dtype=torch.float32).repeat(H, 1))  # (H, N/2)
        self.output_linear = nn.Linear(H, 2 * H)

    def discrete(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(Ā, C·B̄), each (H, N/2) complex: the ZOH-discretised SSM that the kernel unrolls."""
        dt = torch.exp(self.log_dt)[:, None]  # (H, 1)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H, N/2)
        Abar = torch.exp(A * dt)  # (H, N/2)
        return Abar, torch.view_as_complex(self.C) * (Abar - 1.0) / A

    def kernel(self, T: int) -> torch.Tensor:
        """K (H, T): ``K_l = 2·Re Σ_n (C B̄)_n Ā_n^l``."""
        _, CB = self.discrete()
        dt = torch.exp(self.log_dt)[:, None, None]  # (H, 1, 1)
        lags = torch.arange(T, device=dt.device, dtype=dt.dtype)  # (T,)
        # Ā^l = exp(l·Re ΔA)·(cos + i·sin)(l·Im ΔA), in real arithmetic: torch's complex exp is ~10x slower on CPU
        decay = torch.exp(-torch.exp(self.log_A_real)[:, :, None] * dt * lags)  # (H, N/2, T)
        angle = self.A_imag[:, :, None] * dt * lags  # (H, N/2, T)
        basis = torch.cat([decay * torch.cos(angle), decay * torch.sin(angle)], dim=1)  # (H, N, T): Re, Im of Ā^l
        coeffs = torch.cat([CB.real, -CB.imag], dim=-1)  # (H, N): Re(c·z) = Re c·Re z - Im c·Im z
        return 2 * torch.einsum("hn,hnl->hl", coeffs, basis)  # (H, T)

    def ssm(self, x: torch.Tensor) -> torch.Tensor:
        """The SSM alone, ``y = K * u + D·u``: (B, T, H) -> (B, T, H), before the GELU and GLU."""
        u = x.transpose(1, 2)  # (B, H, T)
        y = causal_fft_conv(u, self.kernel(u.shape[-1])) + u * self.D[:, None]  # (B, H, T)
        return y.transpose(1, 2)  # (B, T, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, T, d_model)
        return F.glu(self.output_linear(F.gelu(self.ssm(x))), dim=-1)
