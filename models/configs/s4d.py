"""``s4d``: the diagonal state-space layer S4D (Gu, Gupta, Goel & Ré 2022, "On the Parameterization
and Initialization of Diagonal State Space Models"), as the reference ``models/s4/s4d.py`` of the
state-spaces/s4 repository builds it.

Per channel a linear time-invariant SSM with N/2 complex modes ``A_n = -1/2 + i·π·n`` (S4D-Lin,
Sec. 4), discretised by zero-order hold with a learned step Δ (Sec. 2, eq. 4): its convolution kernel
``K_l = 2·Re Σ_n C_n (exp(ΔA_n) - 1) / A_n · exp(ΔA_n)^l`` is a Vandermonde product (Sec. 3.1), and
the layer applies it to the whole sequence by one FFT convolution.

FFT convention (``fft_macs``, shared by ``hyena``): a real FFT (rfft or irfft) of length n is charged
``round(n·log2(n))`` MACs, about the real multiplies of a radix-2 real FFT (half of a complex FFT's
(n/2)·log2(n) butterflies, 4 real multiplies each). The spectra's point-wise product is element-wise
work and, like every element-wise product here, not counted. torch's FlopCounterMode counts no FFT.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig


def rfft_macs(n: int) -> int:
    """MACs charged for one real FFT or inverse real FFT of length ``n`` (the module docstring)."""
    return round(n * math.log2(n)) if n > 1 else 0


def vandermonde_split(T: int) -> tuple[int, int]:
    """(c, n), c·n >= T, both about √T: the kernel's lags l = a·c + r (r < c, a < n) as the powers
    Ā^r (c of them) times Ā^(a·c) (n of them), so that the Vandermonde product is a matrix product of
    (c, N) by (N, n) per channel over only (c + n)·N/2 complex powers, not T·N/2 (``models/s4d.py``)."""
    c = math.isqrt(T - 1) + 1 if T > 1 else 1  # ceil(√T)
    return c, -(-T // c)


@MIXERS.config("s4d")
class S4DConfig(MixerConfig):
    """S4D: diagonal linear time-invariant SSM, S4D-Lin init, FFT convolution (Gu et al. 2022)."""

    name: Literal["s4d"] = "s4d"
    # kernel (d·N per position), FFT convolution (d·T log T), output projection (2d² per position)
    complexity = ("O(T·d·(N + log T + d))", 1)

    d_state: int = Field(
        64,
        ge=2,
        multiple_of=2,
        description="state size N of the S4D paper, kept as N/2 complex-conjugate pairs (the reference's 64)",
    )
    dt_min: float = Field(
        0.001,
        gt=0,
        description="smallest initial step Δ: the slowest channels remember "
        "about 1/Δ steps (log Δ is uniform in [log dt_min, log dt_max])",
    )
    dt_max: float = Field(0.1, gt=0, description="largest initial step Δ: the fastest-forgetting channels")

    @model_validator(mode="after")
    def _dt_range(self) -> S4DConfig:
        if self.dt_min > self.dt_max:
            raise ValueError(
                f"model.mixer_args.dt_min={self.dt_min} exceeds model.mixer_args.dt_max={self.dt_max}; "
                "Δ is drawn log-uniformly between them"
            )
        return self

    def fft_macs(self, d_model: int, T: int) -> int:
        """The part of ``forward_macs`` charged to FFTs: the kernel's and the input's spectra and one
        inverse, each of length 2T (linear, not circular, convolution), per channel."""
        return 3 * d_model * rfft_macs(2 * T)

    def shared_macs(self, d_model: int, T: int) -> int:
        """Products done once per batch whatever its size (the kernel's Vandermonde product over the c·n >= T
        lags of ``vandermonde_split``), FFTs apart."""
        c, n = vandermonde_split(T)
        return d_model * self.d_state * c * n

    def forward_macs(self, d_model: int, T: int) -> int:
        """Kernel by a real Vandermonde product (N real and imaginary parts per channel and lag: ``shared_macs``),
        the FFT convolution (module docstring), the output 1x1 convolution to 2·d_model before the GLU."""
        return self.shared_macs(d_model, T) + self.fft_macs(d_model, T) + T * d_model * 2 * d_model
