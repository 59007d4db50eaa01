"""Hyena operator (Poli et al. 2023, Sec. 3, Def. 3.1; implicit filters Sec. 3.3, eq. 7): the module
(torch). Its config, which imports no torch, is in ``models/configs/hyena.py``.

Written here after HazyResearch's reference code (safari ``standalone_hyena.py``, Zoology
``mixers/hyena.py``, Apache-2.0): no maintained PyPI package provides the operator (``stripedhyena``
is the StripedHyena model's inference code, built around flash-attn; the other ``hyena`` names on
PyPI are unrelated). Same structure and initialisation: in projection to (order + 1)·d, a short
causal depthwise convolution, the filter FFN ``Linear(emb_dim, w), Sin, [Linear(w, w), Sin] x 2,
Linear(w, (order - 1)·d)`` with one trainable Sin frequency (w = 1) shared by its layers, the decay
window ``exp(-t·|α_c|)`` with rates spaced from log(1e-2)/1.5 to log(1e-2)/0.3 (a filter falls to 1%
within 0.3 to 1.5 of ``l_max``), a per-channel skip ``bias`` on every long convolution, out projection.

Departures: positional features and decay windows are functions of the position computed on the fly
for the current T (laid out over ``l_max``), where the reference stores a table of ``l_max`` rows
(trained at lr 1e-5) and cuts inputs longer than it; the reference's per-parameter learning rates
(``_optim``) are not applied (one optimiser group); dropout is left to the stack.

Speed on a CPU: the filters and their spectra are computed once per batch, and a long batch runs the operator
in pieces (``cpu.batch_pieces``) so that no (B, T, (order + 1)·d) tensor is fresh memory from the kernel at
every step. One thread, d_model 64, batch 8, forward + backward, as a ratio to causal attention in the same
run (``benchmarks/mixer_speed.py``, Nov 27 2026, a shared 2-core CPU at load 3.2-3.5): 1.1x at T = 256, 0.63x
at 1024, 0.20x at 4096, step time ~T^0.93 over 512-8192; the whole batch at once ran as fast up to 4096, but
took 0.19x at 8192 against 0.10x in pieces (T^1.18).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models.configs.hyena import INNER_LAYERS, HyenaConfig  # noqa: F401  (re-exported beside its module)
from seqbench.models.s4d import spectral_conv


class Sin(nn.Module):
    """sin(ω·x) with a trainable frequency per unit (the reference's filter activation)."""

    def __init__(self, dim: int, w: float = 1.0):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.freq * x)


class ImplicitFilter(nn.Module):
    """``channels`` long filters ``h_t = FFN(z_t) · exp(-t·|α_c|)``, evaluated at positions 0..T-1."""

    rates: torch.Tensor  # a buffer (register_buffer), declared for the type checker

    def __init__(self, channels: int, emb_dim: int, width: int, l_max: int):
        super().__init__()
        self.emb_dim, self.l_max = emb_dim, l_max
        act = Sin(width)  # one module, so one frequency vector, at every layer (as the reference)
        layers: list[nn.Module] = [nn.Linear(emb_dim, width), act]
        for _ in range(INNER_LAYERS):
            layers += [nn.Linear(width, width), act]
        self.ffn = nn.Sequential(*layers, nn.Linear(width, channels, bias=False))
        target = math.log(1e-2)  # the window's value at the decay horizon
        self.register_buffer("rates", torch.linspace(target / 1.5, target / 0.3, channels).abs(), persistent=False)

    def positions(self, T: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(z (T, emb_dim), t (T, 1)): t = position / (l_max - 1) and (emb_dim - 1)/2 complex exponentials
        exp(-i·f·2π·position / l_max) with f from 1e-4 to bands - 1 (the reference's PositionalEmbedding)."""
        bands = (self.emb_dim - 1) // 2
        pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
        t = pos / (self.l_max - 1)  # (T, 1)
        f = torch.linspace(1e-4, bands - 1, bands, device=device)[None, :]  # (1, bands)
        angle = f * (2 * math.pi * pos / self.l_max)  # (T, bands)
        return torch.cat([t, torch.cos(angle), -torch.sin(angle)], dim=-1), t  # (T, emb_dim), (T, 1)

    def forward(self, T: int, device) -> torch.Tensor:  # -> (channels, T)
        z, t = self.positions(T, device)
        return (self.ffn(z) * torch.exp(-t * self.rates)).transpose(0, 1)  # (T, channels) -> (channels, T)


@MIXERS.module("hyena")
class Hyena(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: causal short and long convolutions, so causal at
    any value (``causal=False`` permits reading later positions, it does not require it)."""

    def __init__(
        self,
        d_model: int,
        order: int = 2,
        filter_order: int = 64,
        short_filter: int = 3,
        emb_dim: int = 33,
        l_max: int = 1024,
        *,
        causal: bool = True,
    ):
        super().__init__()
        if order < 2:
            raise ValueError(f"model.mixer_args.order: {order}; Hyena needs order >= 2 (one long convolution)")
        if emb_dim < 3 or emb_dim % 2 == 0:
            raise ValueError(f"model.mixer_args.emb_dim: {emb_dim}; use an odd number >= 3 (t plus sine/cosine pairs)")
        self.d, self.order, self.short_taps = d_model, order, short_filter
        streams = (order + 1) * d_model
        self.in_proj = nn.Linear(d_model, streams)
        self.short_filter = nn.Conv1d(streams, streams, short_filter, groups=streams)  # padded on the left in forward
        self.filter = ImplicitFilter((order - 1) * d_model, emb_dim, filter_order, l_max)
        self.bias = nn.Parameter(torch.randn(order - 1, d_model))  # the skip term D of each long convolution
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, u: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """u (B, T, d_model) -> (B, T, d_model). ``valid`` is not read: padding comes after the real positions,
        and a causal mixer never carries it back to them."""
        T = u.shape[1]
        h = self.filter(T, u.device).view(self.order - 1, self.d, T)  # one (d, T) filter per long convolution
        spectra = torch.fft.rfft(h, n=2 * T)  # (order - 1, d, T + 1), once for the whole batch
        # on a CPU, pieces of the batch whose (B, T, (order + 1)·d) tensors stay small (models/cpu.py)
        ys = [self.operator(p, spectra) for p in cpu.batch_pieces(u, (self.order + 1) * self.d)]
        return ys[0] if len(ys) == 1 else torch.cat(ys)

    def operator(self, u: torch.Tensor, spectra: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, T, d)
        """Def. 3.1 given the long filters' spectra ``rfft(h, n=2T)`` (order - 1, d, T + 1)."""
        z = self.in_proj(u).transpose(1, 2)  # (B, (order + 1)·d, T)
        z = self.short_filter(F.pad(z, (self.short_taps - 1, 0)))  # (B, (order + 1)·d, T), causal
        *gates, v = z.split(self.d, dim=1)  # order gates x_0..x_{order-1} and the value v, each (B, d, T)
        for i, gate in enumerate(reversed(gates[1:])):
            v = v * gate  # (B, d, T)
            v = spectral_conv(v, spectra[i]) + v * self.bias[i][:, None]  # (B, d, T)
        return self.out_proj((v * gates[0]).transpose(1, 2))  # (B, T, d)
