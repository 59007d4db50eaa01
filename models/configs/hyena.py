"""``hyena``: the Hyena operator (Poli et al. 2023, "Hyena Hierarchy", Sec. 3), as the reference
code (HazyResearch safari ``standalone_hyena.py``, Zoology ``mixers/hyena.py``) builds it.

The input is projected to ``order + 1`` streams of width d and each goes through a short causal
depthwise convolution; one stream v is then alternately gated by the others (element-wise products)
and convolved with long implicit filters (Sec. 3.2, Def. 3.1):

    z = v · x_{N-1};  z = h_{N-2} * z · x_{N-2};  ...;  z = h_1 * z;  y = out(z · x_0)

(order - 1 long convolutions and ``order`` gates, as the reference code counts them). A long filter
is ``h_t = FFN(PositionalFeatures(t)) · exp(-α t)`` (Sec. 3.3, eq. 7): an FFN with sine activations
of ``emb_dim`` positional features, windowed by exponential decays of channel-dependent rates, and
applied by an FFT convolution of length 2T (counted with ``s4d``'s FFT convention: ``rfft_macs``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig
from seqbench.models.configs.s4d import rfft_macs

INNER_LAYERS = 2  # hidden Linear + Sin layers of the filter FFN after its first (the reference's num_inner_mlps)


@MIXERS.config("hyena")
class HyenaConfig(MixerConfig):
    """Hyena: gated implicit long convolutions, filters from an FFN of positions, by FFT (Poli et al. 2023)."""

    name: Literal["hyena"] = "hyena"
    # projections (d² per position) and FFT convolutions (d·T log T)
    complexity = ("O(T·d·(d + log T))", 1)

    order: int = Field(
        2,
        ge=2,
        description="Hyena order N: N + 1 projections, N gates, N - 1 long convolutions "
        "(2 is the H3-like operator of the paper's experiments)",
    )
    filter_order: int = Field(
        64, ge=1, description="width of the FFN that generates the long filters (the reference's 64)"
    )
    short_filter: int = Field(
        3, ge=1, description="taps of the short causal depthwise convolution on the projections (the reference's 3)"
    )
    emb_dim: int = Field(
        33,
        ge=3,
        description="positional features fed to the filter FFN: t and (emb_dim-1)/2 "
        "sine/cosine bands; odd (the reference's language-model configs use 33)",
    )
    l_max: int = Field(
        1024,
        ge=2,
        description="length over which the positional features and decay windows "
        "are laid out (the reference's l_max); not a limit: filters are computed at any position, "
        "so a filter tap does not change with the sequence length",
    )

    @field_validator("emb_dim")
    @classmethod
    def _odd(cls, v: int) -> int:
        if v % 2 == 0:
            raise ValueError(f"{v} is even; emb_dim is t plus sine/cosine pairs: use an odd number such as {v + 1}")
        return v

    def fft_macs(self, d_model: int, T: int) -> int:
        """The part of ``forward_macs`` charged to FFTs: per long convolution and channel the filter's
        and the signal's spectra and one inverse, of length 2T."""
        return (self.order - 1) * 3 * d_model * rfft_macs(2 * T)

    def shared_macs(self, d_model: int, T: int) -> int:
        """Products done once per batch whatever its size (the filter FFN at T positions), FFTs apart."""
        w = self.filter_order
        return T * (self.emb_dim * w + INNER_LAYERS * w * w + w * (self.order - 1) * d_model)

    def forward_macs(self, d_model: int, T: int) -> int:
        """In projection to (order + 1)·d, the short depthwise convolution, the filter FFN, the FFT
        convolutions and the out projection; gates and decay windows are element-wise."""
        d, streams = d_model, (self.order + 1) * d_model
        return (
            T * (d * streams + self.short_filter * streams + d * d)
            + self.shared_macs(d_model, T)
            + self.fft_macs(d_model, T)
        )
