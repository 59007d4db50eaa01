"""Linear attention (Katharopoulos et al. 2020, Sec. 3.2-3.3, eq. 4-10; Based, Arora et al. 2024,
Sec. 3): the module (torch). Its config, which imports no torch, is in
``models/configs/linear_attention.py`` (the feature maps and the chunked causal form are described there).

Written here after Zoology's ``mixers/based.py`` (projections without bias, q and k projected to
``feature_dim`` per head, ``TaylorExp``), which computes the causal sums with cumulative sums of
(B, H, T, F, Dh) tensors; here the causal form runs in chunks of matrix products instead (same
result, O(T/C·F·Dh) state memory): 273 x 16 running sums per position of a taylor head would be
~70 MB per sequence at T = 1024. Inside a chunk the Taylor weights come from the raw scores q·k
(``taylor_kernel``, Based's own identity), so the 273-wide features are built only for the sums
across chunks: at T <= 64 never. ``flash-linear-attention`` has fused kernels but needs Triton and a GPU.
The normaliser rides along as a column of ones appended to v, so one product gives both the
numerator and the denominator of eq. 6.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.linear_attention import CHUNK, LinearAttentionConfig, chunking, heads_problem  # noqa: F401  (the config, re-exported beside its module)

EPS = 1e-6  # keeps the normaliser off zero; both feature maps make it positive already


def elu_features(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1 (Katharopoulos et al., eq. 7): positive, so the normaliser is."""
    return F.elu(x) + 1


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """(..., f) -> (..., 1 + f + f²) with φ(q)·φ(k) = 1 + q·k/√f + (q·k)²/(2f), Based's TaylorExp."""
    f = x.shape[-1]
    second = (x.unsqueeze(-1) * x.unsqueeze(-2)).flatten(-2) / math.sqrt(2)  # (..., f²)
    return torch.cat([torch.ones_like(x[..., :1]), x / f**0.25, second / math.sqrt(f)], dim=-1)


def taylor_kernel(s: torch.Tensor, f: int) -> torch.Tensor:
    """φ(q)·φ(k) of ``taylor_features`` from the raw scores s = q·k: 1 + s/√f + s²/(2f), no features built."""
    return 1 + s / math.sqrt(f) + s * s / (2 * f)


def causal_chunked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    phi: Callable[[torch.Tensor], torch.Tensor],
    kernel: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """``out_t = Σ_{j≤t} (φ(q_t)·φ(k_j)) v_j``: q, k (B, H, T, f) before the feature map, v (B, H, T, Dv)
    -> (B, H, T, Dv). Inside a chunk the weights are φ(Q)φ(K)ᵀ, or ``kernel(QKᵀ)`` where the feature map
    has a closed form (Taylor: f-wide scores instead of 1 + f + f²-wide ones, 17x fewer products at f =
    16); across chunks, running sums of φ(k) vᵀ. One chunk (T <= CHUNK) needs no sums at all."""
    B, H, T, _ = q.shape
    n, C = chunking(T)
    pad = n * C - T
    if pad:  # at the end: a padded key comes after every real query (masked), and its chunk's sum is never read
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    q, k, v = (t.view(B, H, n, C, t.shape[-1]) for t in (q, k, v))  # (B, H, n, C, f) / (B, H, n, C, Dv)
    mask = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()  # query i sees keys j <= i of its chunk
    qf, kf = (phi(q), phi(k)) if kernel is None or n > 1 else (q, k)  # (B, H, n, C, F) where sums need them
    weights = kernel(q @ k.transpose(-1, -2)) if kernel is not None else qf @ kf.transpose(-1, -2)
    out = weights.masked_fill(~mask, 0.0) @ v  # (B, H, n, C, Dv)
    if n > 1:
        states = kf.transpose(-1, -2) @ v  # (B, H, n, F, Dv): each chunk's Σ φ(k) vᵀ
        before = torch.cumsum(states, dim=2) - states  # (B, H, n, F, Dv): the sums over earlier chunks only
        out = out + qf @ before  # (B, H, n, C, Dv)
    return out.reshape(B, H, n * C, -1)[:, :, :T]  # (B, H, T, Dv)


@MIXERS.module("linear_attention")
class LinearAttention(nn.Module):
    def __init__(
        self,
        d_model: int,
        n_heads: int = 4,
        feature_map: str = "taylor",
        feature_dim: int = 16,
        short_conv: int = 3,
        causal: bool = True,
    ):
        super().__init__()
        problem = heads_problem(d_model, n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        if feature_map not in ("elu", "taylor"):
            raise ValueError(f"model.mixer_args.feature_map: {feature_map!r}; choose elu or taylor")
        self.n_heads, self.feature_dim, self.causal = n_heads, feature_dim, causal
        self.phi = elu_features if feature_map == "elu" else taylor_features
        # the closed form of φ(q)·φ(k), where the feature map has one (Taylor), for the weights inside a chunk
        self.kernel = None if feature_map == "elu" else functools.partial(taylor_kernel, f=feature_dim)
        self.short_taps = short_conv
        # depthwise, no bias; padded on the left in forward so position t sees t - taps + 1 .. t
        self.short = nn.Conv1d(d_model, d_model, short_conv, groups=d_model, bias=False) if short_conv else None
        self.q = nn.Linear(d_model, n_heads * feature_dim, bias=False)
        self.k = nn.Linear(d_model, n_heads * feature_dim, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, T, d_model)
        B, T, d = x.shape
        H, f = self.n_heads, self.feature_dim
        if self.short is not None:  # (B, T, d) -> (B, d, T) -> causal depthwise conv -> (B, T, d)
            x = self.short(F.pad(x.transpose(1, 2), (self.short_taps - 1, 0))).transpose(1, 2)
        q = self.q(x).view(B, T, H, f).transpose(1, 2)  # (B, H, T, f), before the feature map
        k = self.k(x).view(B, T, H, f).transpose(1, 2)  # (B, H, T, f)
        v = self.v(x).view(B, T, H, d // H).transpose(1, 2)  # (B, H, T, Dh)
        v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (B, H, T, Dh + 1): the last column sums φ(q)·φ(k)
        if self.causal:
            out = causal_chunked(q, k, v, self.phi, self.kernel)  # (B, H, T, Dh + 1)
        else:
            q, k = self.phi(q), self.phi(k)  # (B, H, T, F)
            out = q @ (k.transpose(-1, -2) @ v)  # (B, H, F, Dh + 1) state over all T, then (B, H, T, Dh + 1)
        y = out[..., :-1] / (out[..., -1:] + EPS)  # (B, H, T, Dh)
        return self.out(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)
