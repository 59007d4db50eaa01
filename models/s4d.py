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
ones and FlopCounterMode counts it, and over powers split in two (``kernel``: Ā^l = Ā^r·Ā^(a·c), c and
the number of a's about √T) so that no (H, N, T) table of powers is built.

Speed on a CPU: the kernel's spectrum is computed once per batch, and a long batch is convolved in pieces
(``cpu.batch_pieces``) so that no (B, T, 2·H) tensor is fresh memory from the kernel at every step. One
thread, d_model 64, batch 8, forward + backward, as a ratio to causal attention in the same run
(``benchmarks/mixer_speed.py``, Nov 27 2026, a shared 2-core CPU at load 3.2-3.5): 0.84x at T = 256, 0.35x at
1024, 0.10x at 4096, step time ~T^0.94 over 512-8192; with the table of powers and the whole batch at once
1.46x, 0.95x, 0.41x and T^1.19.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models.configs.s4d import S4DConfig, rfft_macs, vandermonde_split  # noqa: F401  (the config, re-exported beside its module)


def causal_fft_conv(u: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``y_t = Σ_{j≤t} k_j u_{t-j}`` per channel: u (B, C, T), k (C, T) -> (B, C, T). FFTs of length 2T
    make the circular convolution a linear one, so no output wraps around to read the future."""
    return spectral_conv(u, torch.fft.rfft(k, n=2 * u.shape[-1]))


def spectral_conv(u: torch.Tensor, spectrum: torch.Tensor) -> torch.Tensor:
    """``causal_fft_conv(u, k)`` from the kernel's spectrum ``torch.fft.rfft(k, n=2T)`` (C, T + 1), computed
    once where the batch is convolved piece by piece (``cpu.batch_pieces``)."""
    T = u.shape[-1]
    n = 2 * T
    return torch.fft.irfft(torch.fft.rfft(u, n=n) * spectrum, n=n)[..., :T]  # (B, C, T)


@MIXERS.module("s4d")
class S4D(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: a causal convolution (the kernel runs forward in
    time), so causal at any value (``causal=False`` permits reading later positions, it does not require it)."""

    def __init__(
        self, d_model: int, d_state: int = 64, dt_min: float = 0.001, dt_max: float = 0.1, *, causal: bool = True
    ):
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
        """K (H, T): ``K_l = 2·Re Σ_n (C B̄)_n Ā_n^l``. With l = a·c + r (``vandermonde_split``: c, n ~ √T),
        ``Ā^l = Ā^r · Ā^(a·c)``, so K is one real matrix product per channel, ``(C B̄ Ā^r)`` (c, N) by
        ``Ā^(a·c)`` (N, n), from (c + n)·N/2 powers: a (H, N, T) table of every power, the direct form, was
        the largest tensor of the layer (H·N numbers per position against the batch's B·H) and most of its time."""
        _, CB = self.discrete()
        H, c, n = self.D.shape[0], *vandermonde_split(T)
        dt = torch.exp(self.log_dt)[:, None, None]  # (H, 1, 1)
        rate = -torch.exp(self.log_A_real)[:, :, None] * dt  # (H, N/2, 1): Re ΔA
        freq = self.A_imag[:, :, None] * dt  # (H, N/2, 1): Im ΔA
        r = torch.arange(c, device=dt.device, dtype=dt.dtype)  # (c,)
        a = torch.arange(n, device=dt.device, dtype=dt.dtype) * c  # (n,): the lags a·c
        # Ā^l = exp(l·Re ΔA)·(cos + i·sin)(l·Im ΔA), in real arithmetic: torch's complex exp is ~10x slower on CPU
        low, high = torch.exp(rate * r), torch.exp(rate * a)  # |Ā^r| (H, N/2, c), |Ā^(a·c)| (H, N/2, n)
        low_re, low_im = low * torch.cos(freq * r), low * torch.sin(freq * r)  # Ā^r
        high_re, high_im = high * torch.cos(freq * a), high * torch.sin(freq * a)  # Ā^(a·c)
        # Re((C B̄ Ā^r)·Ā^(a·c)) = Re(C B̄ Ā^r)·Re Ā^(a·c) - Im(C B̄ Ā^r)·Im Ā^(a·c), summed over the modes
        left_re = CB.real[:, :, None] * low_re - CB.imag[:, :, None] * low_im  # (H, N/2, c)
        left_im = CB.real[:, :, None] * low_im + CB.imag[:, :, None] * low_re  # (H, N/2, c)
        left = torch.cat([left_re, -left_im], dim=1).transpose(1, 2)  # (H, c, N)
        right = torch.cat([high_re, high_im], dim=1)  # (H, N, n)
        K = 2 * (left @ right)  # (H, c, n): K[h, r, a] = K_{a·c + r}
        return K.transpose(1, 2).reshape(H, c * n)[:, :T]  # (H, T)

    def ssm(self, x: torch.Tensor, spectrum: torch.Tensor | None = None) -> torch.Tensor:
        """The SSM alone, ``y = K * u + D·u``: (B, T, H) -> (B, T, H), before the GELU and GLU; ``spectrum``:
        the kernel's, ``rfft(K, n=2T)`` (H, T + 1), where the caller has it."""
        u = x.transpose(1, 2)  # (B, H, T)
        if spectrum is None:
            spectrum = torch.fft.rfft(self.kernel(u.shape[-1]), n=2 * u.shape[-1])  # (H, T + 1)
        y = spectral_conv(u, spectrum) + u * self.D[:, None]  # (B, H, T)
        return y.transpose(1, 2)  # (B, T, H)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d_model) -> (B, T, d_model). ``valid`` is not read: padding comes after the real positions,
        and a causal mixer never carries it back to them."""
        T = x.shape[1]
        spectrum = torch.fft.rfft(self.kernel(T), n=2 * T)  # (H, T + 1), once for the whole batch
        # on a CPU, pieces of the batch whose (B, T, 2·H) tensors stay small (models/cpu.py)
        ys = [
            F.glu(self.output_linear(F.gelu(self.ssm(p, spectrum))), dim=-1)
            for p in cpu.batch_pieces(x, 2 * x.shape[-1])
        ]
        return ys[0] if len(ys) == 1 else torch.cat(ys)
