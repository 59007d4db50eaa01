"""Shared Transformer modules: norms, residual placement, attention, positions, layer stacks.

The config (no torch) is in ``models/configs/blocks.py``, where the family and the position
encodings are documented.

Rope rotates with ``rotary_embedding_torch.apply_rotary_emb`` (lucidrains' package, pinned in
pyproject.toml: RoFormer's interleaved channel pairs), on the (B, H, T, hd) tensors that
``F.scaled_dot_product_attention`` takes. The angles are made here, in float32 (``rope_angles``),
not by the package's ``RotaryEmbedding``: that class builds positions in the queries' dtype
(bfloat16 rounds positions above 256: 257 -> 256), caches them in place across calls, and keeps
its frequencies as a frozen ``nn.Parameter`` (counted in ``n_params``, cast by bf16-true). Made
on the fly, the angles need no table, so rope takes any length, and the state dict is the one a
sinusoidal model has.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from rotary_embedding_torch import apply_rotary_emb  # type: ignore[import-untyped]
from torch import nn

from seqbench.models.configs.blocks import (  # noqa: F401  (the configs, re-exported beside their modules)
    NormKind,
    NormPosition,
    TransformerFields,
    alibi_slopes,
    split_positions,
    transformer_layer_macs,
)


def make_norm(kind: str, d: int) -> nn.Module:
    if kind == "layernorm":
        return nn.LayerNorm(d)
    if kind == "rmsnorm":
        return nn.RMSNorm(d)
    raise ValueError(f"model.norm: {kind!r}; choose layernorm or rmsnorm")


class Residual(nn.Module):
    """``x -> x + f(x)`` with the norm placement of ``position`` (see the module docstring)."""

    def __init__(self, sublayer: nn.Module, d: int, position: str, norm: str, dropout: float):
        super().__init__()
        if position not in ("post", "pre", "rezero", "none"):
            raise ValueError(f"model.norm_position: {position!r}; choose post, pre, rezero or none")
        self.f, self.position = sublayer, position
        self.norm = make_norm(norm, d) if position in ("post", "pre") else None
        self.alpha = nn.Parameter(torch.zeros(())) if position == "rezero" else None
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        if self.position == "pre":
            assert self.norm is not None
            return x + self.drop(self.f(self.norm(x), *args, **kwargs))
        branch = self.drop(self.f(x, *args, **kwargs))
        if self.position == "post":
            assert self.norm is not None
            return self.norm(x + branch)
        if self.position == "rezero":
            return x + self.alpha * branch
        return x + branch


class Attention(nn.Module):
    """Multi-head (self or cross) attention on ``F.scaled_dot_product_attention``; ``positions``:
    ``rope`` rotates queries and keys, ``alibi`` biases the scores (self-attention only), ``none``."""

    def __init__(self, d: int, n_heads: int, dropout: float, positions: str = "none"):
        super().__init__()
        if positions not in ("none", "rope", "alibi"):
            raise ValueError(f"attention positions: {positions!r}; choose none, rope or alibi")
        self.n_heads, self.dropout, self.positions = n_heads, dropout, positions
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)
        # not in the state dict: a function of n_heads, as the sinusoidal table is of d
        slopes = torch.tensor(alibi_slopes(n_heads)) if positions == "alibi" else None
        self.register_buffer("slopes", slopes, persistent=False)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        *,
        key_valid: torch.Tensor | None = None,
        causal: bool = False,
    ) -> torch.Tensor:
        """x (B, T, d) queries; memory (B, S, d) keys/values (None: self-attention);
        key_valid (B, S) bool, False at padding; causal: query t sees keys <= t."""
        B, T, d = x.shape
        src = x if memory is None else memory
        S, H = src.shape[1], self.n_heads
        if self.positions != "none" and memory is not None:
            raise ValueError(f"attention positions: {self.positions} is for self-attention, not cross-attention")
        q = self.q(x).view(B, T, H, d // H).transpose(1, 2)  # (B, H, T, hd)
        k, v = self.kv(src).view(B, S, 2, H, d // H).permute(2, 0, 3, 1, 4)  # 2 x (B, H, S, hd)
        if self.positions == "rope":  # self-attention: S == T
            angles = rope_angles(T, d // H, x.device)  # (T, hd)
            q, k = apply_rotary_emb(angles, q), apply_rotary_emb(angles, k)  # rotated on the last dim, same shapes
        mask: torch.Tensor | None = None
        if self.positions == "alibi":  # a float mask: the bias, -inf where causality or padding hide a key
            slopes = self.slopes
            assert isinstance(slopes, torch.Tensor)  # registered for alibi
            # 4-d: the same bias as an (H, T, S) mask made CPU SDPA's fwd + bwd 2x slower (torch 2.13)
            mask = alibi_bias(slopes, T, S, x.device)[None]  # (1, H, T, S)
            if causal:
                hidden = ~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)  # (T, S)
                mask = mask.masked_fill(hidden, float("-inf"))
                causal = False
            if key_valid is not None:
                mask = mask.masked_fill(~key_valid[:, None, None, :], float("-inf"))  # (B, H, T, S)
            mask = mask.to(q.dtype)
        elif key_valid is not None:
            mask = key_valid[:, None, None, :]  # (B, 1, 1, S)
            if causal:  # SDPA cannot combine is_causal with a mask
                mask = mask & torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)  # (B, 1, T, S)
                causal = False
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T, hd)
        return self.out(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)


def rope_angles(T: int, head_dim: int, device) -> torch.Tensor:
    """(T, head_dim) float32 rotation angles t * theta_i, theta_i = 10000^(-2i/head_dim) (Su et al. 2021,
    eq. 15), each repeated for the pair of channels it rotates (the package's interleaved layout)."""
    theta = 10000.0 ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)  # (hd/2,)
    pos = torch.arange(T, device=device, dtype=torch.float32)  # (T,)
    return (pos[:, None] * theta).repeat_interleave(2, dim=-1)  # (T, hd)


def alibi_bias(slopes: torch.Tensor, T: int, S: int, device) -> torch.Tensor:
    """(H, T, S) float32 ALiBi bias -m_h |i - j| for queries at the last T of S positions: -m_h (i - j)
    on and below the diagonal (the paper's causal bias) and its mirror above, for bidirectional attention."""
    i = torch.arange(S - T, S, device=device)[:, None]  # (T, 1) query positions
    j = torch.arange(S, device=device)[None, :]  # (1, S) key positions
    return -slopes.float()[:, None, None] * (i - j).abs()  # (H, T, S)


class FeedForward(nn.Sequential):
    def __init__(self, d: int, d_ff: int, dropout: float):
        super().__init__(nn.Linear(d, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d))


class TransformerLayer(nn.Module):
    """Self-attention, optional cross-attention (decoder), feed-forward; each a Residual."""

    def __init__(self, cfg: TransformerFields, cross: bool = False):
        super().__init__()
        d, p = cfg.d_model, cfg.dropout

        def res(f: nn.Module) -> Residual:
            return Residual(f, d, cfg.norm_position, cfg.norm, p)

        self.self_attn = res(Attention(d, cfg.n_heads, p, positions=split_positions(cfg.pos_encoding)[1]))
        self.cross_attn = res(Attention(d, cfg.n_heads, p)) if cross else None
        self.ff = res(FeedForward(d, cfg.ff_width(), p))

    def forward(self, x, *, valid=None, causal=False, memory=None, memory_valid=None):
        x = self.self_attn(x, key_valid=valid, causal=causal)
        if self.cross_attn is not None:
            x = self.cross_attn(x, memory, key_valid=memory_valid)
        return self.ff(x)


class TransformerStack(nn.Module):
    """``n_layers`` TransformerLayers; pre-norm stacks end with a final norm."""

    def __init__(self, cfg: TransformerFields, cross: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(TransformerLayer(cfg, cross) for _ in range(cfg.n_layers))
        self.final_norm = make_norm(cfg.norm, cfg.d_model) if cfg.norm_position == "pre" else None

    def forward(self, x, **kw) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, **kw)
        return x if self.final_norm is None else self.final_norm(x)


class PositionalEncoding(nn.Module):
    """Adds positions to (B, T, d) inputs: sinusoidal (any length), learned (<= max_len), none (rope
    and alibi act inside attention: ``split_positions`` gives what is added here)."""

    def __init__(self, kind: str, d: int, max_len: int):
        super().__init__()
        if kind not in ("sinusoidal", "learned", "none"):
            raise ValueError(f"input positions: {kind!r}; choose sinusoidal, learned or none")
        self.kind, self.d, self.max_len = kind, d, max_len
        self.table = nn.Embedding(max_len, d) if kind == "learned" else None
        if self.table is not None:
            nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.shape[1]
        if self.kind == "none":
            return x
        if self.kind == "learned":
            if offset + T > self.max_len:
                raise ValueError(
                    f"model.max_len: a sequence of {offset + T} positions exceeds the learned "
                    f"encoding's max_len={self.max_len}; raise model.max_len or use "
                    "model.pos_encoding=sinusoidal"
                )
            assert self.table is not None  # the learned encoding's table
            return x + self.table.weight[offset : offset + T]
        return x + sinusoid(offset + T, self.d, x.device, x.dtype)[offset:]


def sinusoid(T: int, d: int, device, dtype) -> torch.Tensor:
    """The (T, d) table of Vaswani et al.: sin on even, cos on odd channels."""
    pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    freq = torch.exp(torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(T, d, device=device)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return table.to(dtype)


def valid_mask(lengths: torch.Tensor | None, T: int, device) -> torch.Tensor | None:
    """(B, T) bool, True at real tokens; None when every sequence is full length."""
    if lengths is None:
        return None
    return torch.arange(T, device=device)[None, :] < lengths.to(device)[:, None]
