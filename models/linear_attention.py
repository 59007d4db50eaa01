"""Linear attention (Katharopoulos et al. 2020, Sec. 3.2-3.3, eq. 4-10; Based, Arora et al. 2024,
Sec. 3): the module (torch). Its config, which imports no torch, is in
``models/configs/linear_attention.py`` (the feature maps and the chunked causal form are described there).

Written here after Zoology's ``mixers/based.py`` (projections without bias, q and k projected to
``feature_dim`` per head, ``TaylorExp``), which computes the causal sums with cumulative sums of
(B, H, T, F, Dh) tensors: 273 x 16 running sums per position of a taylor head would be ~70 MB per
sequence at T = 1024. Two causal forms here instead, the same sums:

- on a CPU, where a C compiler is found (``models/cpu.py``), ``causal_sums``: the recurrence of eq. 8-10
  in C (``SUMS_SOURCE``), the F x Dv state of a head in the L1 cache and the features built per position,
  never stored; O(T·F·Dv) work and no (T, F) tensor at all. The chunked matrix form below spent most of
  its CPU time in element-wise passes over its (C, C) weights and (T, F) features in main memory;
- elsewhere (a GPU, no compiler, ``SEQBENCH_CPU_KERNELS=0``), ``causal_chunked``: chunks of matrix
  products (O(T/C·F·Dh) state memory). Inside a chunk the Taylor weights come from the raw scores q·k
  (``taylor_kernel``, Based's own identity), so the 273-wide features are built only for the sums across
  chunks: at T <= 512 never. ``flash-linear-attention`` has fused kernels but needs Triton and a GPU.

The normaliser rides along as a column of ones appended to v, so one product (or one recurrence) gives both
the numerator and the denominator of eq. 6. One thread, d_model 64, batch 8, forward + backward, as a ratio to
causal attention in the same run (``benchmarks/mixer_speed.py``, Nov 27 2026, a shared 2-core CPU at load
3.2-3.5): 1.3x at T = 256, 0.64x at 1024, 0.20x at 4096, step time ~T^0.99 over 512-8192; the chunked form
4.3x, 9.5x, 3.0x and T^1.12.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
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


# The causal sums in C (models/cpu.py builds it), as the recurrence of Katharopoulos et al. eq. 8-10:
# per sequence and head the state S = Σ_{j≤t} φ(k_j) v_jᵀ (Dv x F, in the L1 cache) takes one rank-one
# update per position and is read by φ(q_t) in the same pass; features are built per position and never
# stored. The backward runs two such passes (Katharopoulos et al. Sec. 3.3.1): forward for dq (S again),
# backward in time for dk and dv (the sums of φ(q_t) dy_tᵀ from the end). Taylor features are kept
# symmetric here, [1, x_i / f^¼, x_i x_j c_ij for i <= j] with c_ii = 1/√(2f), c_ij = 1/√f: the same
# φ(q)·φ(k) as ``taylor_features`` with 1 + f + f(f+1)/2 entries instead of 1 + f + f² (153, not 273, at f =
# 16). Written once over REAL (float or double).
_SUMS_BODY = r"""
/* φ(x) into phi[0 .. Fp): elu(x) + 1, or the symmetric Taylor features; zeros up to Fp. The Taylor
   features' pairs (i, j) are laid out by distance around a circle of f: the squares x_i², then for d = 1 ..
   (f-1)/2 the products x_i x_{(i+d) mod f} for every i, then (f even) x_i x_{i+f/2} for i < f/2: every pair
   once, in f-long vector products (a row of pairs i <= j would be a loop of another length for each i). */
static void features_REAL(int64_t taylor, int64_t f, int64_t Fp, const REAL *restrict x, REAL *restrict phi) {
    REAL *p = phi;
    if (taylor) {
        const REAL r4 = (REAL)(1 / sqrt(sqrt((double)f))), co = (REAL)(1 / sqrt((double)f));
        const REAL cd = (REAL)(1 / sqrt(2.0 * f));
        REAL xx[2 * f]; /* x twice: xx[i + d] = x_{(i+d) mod f} */
        memcpy(xx, x, sizeof(REAL) * f);
        memcpy(xx + f, x, sizeof(REAL) * f);
        *p++ = 1;
        for (int64_t i = 0; i < f; i++) p[i] = x[i] * r4;
        p += f;
        for (int64_t i = 0; i < f; i++) p[i] = x[i] * x[i] * cd;
        p += f;
        for (int64_t d = 1; 2 * d < f; d++, p += f)
            for (int64_t i = 0; i < f; i++) p[i] = co * x[i] * xx[i + d];
        if (f % 2 == 0)
            for (int64_t i = 0, h = f / 2; i < h; i++) *p++ = co * x[i] * x[i + h];
    } else {
        for (int64_t i = 0; i < f; i++) *p++ = x[i] > 0 ? x[i] + 1 : exp2_REAL(x[i] * LOG2E);
    }
    for (; p < phi + Fp; p++) *p = 0;
}

/* dx = (dφ/dx)ᵀ dphi */
static void features_bwd_REAL(int64_t taylor, int64_t f, const REAL *restrict x, const REAL *restrict dphi,
                              REAL *restrict dx) {
    if (taylor) {
        const REAL r4 = (REAL)(1 / sqrt(sqrt((double)f))), co = (REAL)(1 / sqrt((double)f));
        const REAL cd = (REAL)(1 / sqrt(2.0 * f));
        REAL xx[2 * f], back[2 * f]; /* back[i + d]: what x_{(i+d) mod f} gets from the pair (i, i + d) */
        memcpy(xx, x, sizeof(REAL) * f);
        memcpy(xx + f, x, sizeof(REAL) * f);
        memset(back, 0, sizeof back);
        const REAL *g = dphi + 1;
        for (int64_t i = 0; i < f; i++) dx[i] = g[i] * r4 + 2 * cd * g[f + i] * x[i];
        g += 2 * f;
        for (int64_t d = 1; 2 * d < f; d++, g += f)
            for (int64_t i = 0; i < f; i++) {
                dx[i] += co * g[i] * xx[i + d];
                back[i + d] += co * g[i] * x[i];
            }
        if (f % 2 == 0)
            for (int64_t i = 0, h = f / 2; i < h; i++) {
                dx[i] += co * g[i] * x[i + h];
                dx[i + h] += co * g[i] * x[i];
            }
        for (int64_t i = 0; i < f; i++) dx[i] += back[i] + back[i + f];
    } else {
        for (int64_t i = 0; i < f; i++) dx[i] = x[i] > 0 ? dphi[i] : dphi[i] * exp2_REAL(x[i] * LOG2E);
    }
}

/* Positions P at a time (P = 4: each state vector is loaded and stored once per four positions), in blocks of
   W = 16 lanes (Fp is a multiple of W). fill_REAL: features and values of positions t0 .. t0 + P - 1 of row b,
   zeros past the end (a zero feature adds nothing to the sums, and its outputs are not written). */
static void fill_REAL(int64_t taylor, int64_t b, int64_t t0, int64_t T, int64_t f, int64_t Dv, int64_t Fp,
                      const REAL *restrict x, REAL *restrict phi, const REAL *restrict v, REAL *restrict vals) {
    for (int64_t p = 0; p < P; p++) {
        const int64_t t = t0 + p;
        if (t < T) {
            if (x) features_REAL(taylor, f, Fp, x + (b * T + t) * f, phi + p * Fp);
            if (v) memcpy(vals + p * Dv, v + (b * T + t) * Dv, sizeof(REAL) * Dv);
        } else {
            if (x) memset(phi + p * Fp, 0, sizeof(REAL) * Fp);
            if (v) memset(vals + p * Dv, 0, sizeof(REAL) * Dv);
        }
    }
}

static REAL lanes_REAL(const REAL *restrict a) { /* the sum of W = 16 lanes, pairwise */
    REAL h[8];
    for (int64_t l = 0; l < 8; l++) h[l] = a[l] + a[l + 8];
    for (int64_t l = 0; l < 4; l++) h[l] += h[l + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
}

/* q, k (BH, T, f), v (BH, T, Dv) -> o (BH, T, Dv): o_t = Σ_{j≤t} (φ(q_t)·φ(k_j)) v_j, for rows b0 .. b1 - 1.
   work: (Dv + 2P)·Fp + P·Dv scratch. */
void sums_fwd_REAL(int64_t b0, int64_t b1, int64_t T, int64_t f, int64_t Dv, int64_t taylor,
                   const REAL *restrict q, const REAL *restrict k, const REAL *restrict v, REAL *restrict o,
                   REAL *restrict work) {
    if (T <= 0) return;
    const int64_t Fp = FEATURES(taylor, f);
    REAL *restrict S = work, *restrict PQ = S + Dv * Fp, *restrict PK = PQ + P * Fp, *restrict V = PK + P * Fp;
    for (int64_t b = b0; b < b1; b++) {
        memset(S, 0, sizeof(REAL) * Dv * Fp);
        for (int64_t t0 = 0; t0 < T; t0 += P) {
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, q, PQ, NULL, NULL);
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, k, PK, v, V);
            for (int64_t c = 0; c < Dv; c++) {
                REAL *Sc = S + c * Fp, a0[W] = {0}, a1[W] = {0}, a2[W] = {0}, a3[W] = {0};
                const REAL v0 = V[c], v1 = V[Dv + c], v2 = V[2 * Dv + c], v3 = V[3 * Dv + c];
                for (int64_t jb = 0; jb < Fp; jb += W) {
                    const REAL *k0 = PK + jb, *k1 = k0 + Fp, *k2 = k1 + Fp, *k3 = k2 + Fp;
                    const REAL *q0 = PQ + jb, *q1 = q0 + Fp, *q2 = q1 + Fp, *q3 = q2 + Fp;
#pragma omp simd
                    for (int64_t l = 0; l < W; l++) {
                        REAL s = Sc[jb + l] + v0 * k0[l];
                        a0[l] += q0[l] * s;
                        s += v1 * k1[l];
                        a1[l] += q1[l] * s;
                        s += v2 * k2[l];
                        a2[l] += q2[l] * s;
                        s += v3 * k3[l];
                        a3[l] += q3[l] * s;
                        Sc[jb + l] = s;
                    }
                }
                REAL *ot = o + (b * T + t0) * Dv + c;
                const int64_t n = T - t0 < P ? T - t0 : P;
                ot[0] = lanes_REAL(a0);
                if (n > 1) ot[Dv] = lanes_REAL(a1);
                if (n > 2) ot[2 * Dv] = lanes_REAL(a2);
                if (n > 3) ot[3 * Dv] = lanes_REAL(a3);
            }
        }
    }
}

/* The gradients of <o, go>: gq, gk (BH, T, f) and gv (BH, T, Dv). work: (Dv + 3P)·Fp + 2P·Dv scratch. */
void sums_bwd_REAL(int64_t b0, int64_t b1, int64_t T, int64_t f, int64_t Dv, int64_t taylor,
                   const REAL *restrict q, const REAL *restrict k, const REAL *restrict v,
                   const REAL *restrict go, REAL *restrict gq, REAL *restrict gk, REAL *restrict gv,
                   REAL *restrict work) {
    if (T <= 0) return;
    const int64_t Fp = FEATURES(taylor, f);
    REAL *restrict S = work, *restrict PQ = S + Dv * Fp, *restrict PK = PQ + P * Fp, *restrict DP = PK + P * Fp;
    REAL *restrict V = DP + P * Fp, *restrict G = V + P * Dv;
    for (int64_t b = b0; b < b1; b++) {
        /* forward in time: S_t = Σ_{j≤t} φ(k_j) v_jᵀ, and dφ(q_t) = S_t dy_t */
        memset(S, 0, sizeof(REAL) * Dv * Fp);
        for (int64_t t0 = 0; t0 < T; t0 += P) {
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, k, PK, v, V);
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, NULL, NULL, go, G);
            for (int64_t jb = 0; jb < Fp; jb += W) {
                REAL d0[W] = {0}, d1[W] = {0}, d2[W] = {0}, d3[W] = {0};
                const REAL *k0 = PK + jb, *k1 = k0 + Fp, *k2 = k1 + Fp, *k3 = k2 + Fp;
                for (int64_t c = 0; c < Dv; c++) {
                    REAL *Sc = S + c * Fp + jb;
                    const REAL v0 = V[c], v1 = V[Dv + c], v2 = V[2 * Dv + c], v3 = V[3 * Dv + c];
                    const REAL g0 = G[c], g1 = G[Dv + c], g2 = G[2 * Dv + c], g3 = G[3 * Dv + c];
#pragma omp simd
                    for (int64_t l = 0; l < W; l++) {
                        REAL s = Sc[l] + v0 * k0[l];
                        d0[l] += g0 * s;
                        s += v1 * k1[l];
                        d1[l] += g1 * s;
                        s += v2 * k2[l];
                        d2[l] += g2 * s;
                        s += v3 * k3[l];
                        d3[l] += g3 * s;
                        Sc[l] = s;
                    }
                }
                memcpy(DP + jb, d0, sizeof d0);
                memcpy(DP + Fp + jb, d1, sizeof d1);
                memcpy(DP + 2 * Fp + jb, d2, sizeof d2);
                memcpy(DP + 3 * Fp + jb, d3, sizeof d3);
            }
            for (int64_t p = 0; p < P && t0 + p < T; p++) {
                const int64_t r = b * T + t0 + p;
                features_bwd_REAL(taylor, f, q + r * f, DP + p * Fp, gq + r * f);
            }
        }
        /* backward in time: R_t = Σ_{j≥t} φ(q_j) dy_jᵀ; dv_t = R_tᵀ φ(k_t), dφ(k_t) = R_t v_t */
        memset(S, 0, sizeof(REAL) * Dv * Fp);
        for (int64_t t0 = (T - 1) / P * P; t0 >= 0; t0 -= P) {
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, q, PQ, go, G);
            fill_REAL(taylor, b, t0, T, f, Dv, Fp, k, PK, v, V);
            memset(DP, 0, sizeof(REAL) * P * Fp);
            for (int64_t c = 0; c < Dv; c++) {
                REAL *Rc = S + c * Fp, a0[W] = {0}, a1[W] = {0}, a2[W] = {0}, a3[W] = {0};
                const REAL v0 = V[c], v1 = V[Dv + c], v2 = V[2 * Dv + c], v3 = V[3 * Dv + c];
                const REAL g0 = G[c], g1 = G[Dv + c], g2 = G[2 * Dv + c], g3 = G[3 * Dv + c];
                for (int64_t jb = 0; jb < Fp; jb += W) {
                    const REAL *k0 = PK + jb, *k1 = k0 + Fp, *k2 = k1 + Fp, *k3 = k2 + Fp;
                    const REAL *q0 = PQ + jb, *q1 = q0 + Fp, *q2 = q1 + Fp, *q3 = q2 + Fp;
                    REAL *e0 = DP + jb, *e1 = e0 + Fp, *e2 = e1 + Fp, *e3 = e2 + Fp;
#pragma omp simd
                    for (int64_t l = 0; l < W; l++) {
                        REAL r = Rc[jb + l] + g3 * q3[l];
                        a3[l] += r * k3[l];
                        e3[l] += v3 * r;
                        r += g2 * q2[l];
                        a2[l] += r * k2[l];
                        e2[l] += v2 * r;
                        r += g1 * q1[l];
                        a1[l] += r * k1[l];
                        e1[l] += v1 * r;
                        r += g0 * q0[l];
                        a0[l] += r * k0[l];
                        e0[l] += v0 * r;
                        Rc[jb + l] = r;
                    }
                }
                REAL *gt = gv + (b * T + t0) * Dv + c;
                const int64_t n = T - t0 < P ? T - t0 : P;
                gt[0] = lanes_REAL(a0);
                if (n > 1) gt[Dv] = lanes_REAL(a1);
                if (n > 2) gt[2 * Dv] = lanes_REAL(a2);
                if (n > 3) gt[3 * Dv] = lanes_REAL(a3);
            }
            for (int64_t p = 0; p < P && t0 + p < T; p++) {
                const int64_t r = b * T + t0 + p;
                features_bwd_REAL(taylor, f, k + r * f, DP + p * Fp, gk + r * f);
            }
        }
    }
}
"""
_P, _W = 4, 16  # the kernel's positions per pass over the state, and lanes per block of features
_SUMS_DEFINES = f"""
#define P {_P}
#define W {_W}
#define LOG2E 1.4426950408889634 /* exp(x) = exp2(x·log2 e) */
#define FEATURES(taylor, f) ((((taylor) ? 1 + (f) + (f) * ((f) + 1) / 2 : (f)) + W - 1) / W * W) /* padded */
"""
SUMS_SOURCE = cpu.instantiate(_SUMS_BODY, _SUMS_DEFINES)
_KERNEL_DTYPES = cpu.DTYPES


def _sums_library() -> ctypes.CDLL | None:
    return cpu.load("linear_attention_sums", SUMS_SOURCE)


def _padded_features(taylor: bool, f: int) -> int:
    """The kernel's features per position, padded to whole blocks (its FEATURES)."""
    F = 1 + f + f * (f + 1) // 2 if taylor else f
    return -(-F // _W) * _W


class _CausalSums(torch.autograd.Function):
    """``o_t = Σ_{j≤t} (φ(q_t)·φ(k_j)) v_j`` by the C kernel (``SUMS_SOURCE``): q, k (B, H, T, f), v (B, H,
    T, Dv) -> (B, H, T, Dv); ``taylor``: Based's Taylor features, else elu + 1."""

    @staticmethod
    def forward(ctx, q, k, v, taylor, lib):
        B, H, T, f = q.shape
        Dv, real = v.shape[-1], _KERNEL_DTYPES[v.dtype]
        q, k, v = (t.reshape(B * H, T, t.shape[-1]).contiguous() for t in (q, k, v))  # (BH, T, ·)
        o = v.new_empty(B * H, T, Dv)
        work = v.new_empty(cpu.slots(B * H), (Dv + 2 * _P) * _padded_features(taylor, f) + _P * Dv)
        run = getattr(lib, f"sums_fwd_{real}")
        cpu.parallel(B * H, lambda b0, b1, s: cpu.call(run, b0, b1, T, f, Dv, taylor, q, k, v, o, work[s]), lib)
        ctx.lib, ctx.run, ctx.taylor, ctx.heads = lib, getattr(lib, f"sums_bwd_{real}"), taylor, (B, H)
        ctx.save_for_backward(q, k, v)
        return o.view(B, H, T, Dv)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        q, k, v = ctx.saved_tensors
        (B, H), (BH, T, f), Dv = ctx.heads, q.shape, v.shape[-1]
        go = go.reshape(BH, T, Dv).contiguous()
        gq, gk, gv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        work = v.new_empty(cpu.slots(BH), (Dv + 3 * _P) * _padded_features(ctx.taylor, f) + 2 * _P * Dv)
        args = (q, k, v, go, gq, gk, gv)
        cpu.parallel(BH, lambda b0, b1, s: cpu.call(ctx.run, b0, b1, T, f, Dv, ctx.taylor, *args, work[s]), ctx.lib)
        return gq.view(B, H, T, f), gk.view(B, H, T, f), gv.view(B, H, T, Dv), None, None


def kernel_runs(x: torch.Tensor) -> bool:
    """Whether ``causal_sums`` takes ``x`` here: a float32 or float64 CPU tensor, and the kernel built."""
    return x.device.type == "cpu" and x.dtype in _KERNEL_DTYPES and _sums_library() is not None


def causal_sums(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, taylor: bool) -> torch.Tensor:
    """``causal_chunked``'s sums by the C kernel (where ``kernel_runs``): q, k (B, H, T, f) before the feature
    map, v (B, H, T, Dv) -> (B, H, T, Dv); ``taylor``: Based's feature map, else elu + 1."""
    lib = _sums_library()
    if lib is None or v.device.type != "cpu" or v.dtype not in _KERNEL_DTYPES:
        raise RuntimeError("the linear_attention_sums kernel takes float32 or float64 CPU tensors where it builds")
    return _CausalSums.apply(q.to(v.dtype), k.to(v.dtype), v, taylor, lib)


@MIXERS.module("linear_attention")
class LinearAttention(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: the causal sums (position t reads positions
    <= t), else one state summed over all positions."""

    def __init__(
        self,
        d_model: int,
        n_heads: int = 4,
        feature_map: str = "taylor",
        feature_dim: int = 16,
        short_conv: int = 3,
        *,
        causal: bool = True,
    ):
        super().__init__()
        problem = heads_problem(d_model, n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        if feature_map not in ("elu", "taylor"):
            raise ValueError(f"model.mixer_args.feature_map: {feature_map!r}; choose elu or taylor")
        self.n_heads, self.feature_dim, self.causal = n_heads, feature_dim, causal
        self.taylor = feature_map == "taylor"
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

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d_model) -> (B, T, d_model); ``valid`` (B, T) bool or None. In the causal form padding (after
        the real positions) never reaches them. The non-causal form zeroes the padded keys' features, so its
        sums (numerator and normaliser) run over real keys only. Until Nov 28 2026 it summed padded keys too,
        which the ``Mixer`` protocol does not allow: a non-causal run of a padded task (sentiment) made before
        then gives other numbers under the same config hash (its git sha tells them apart)."""
        B, T, d = x.shape
        H, f = self.n_heads, self.feature_dim
        if self.short is not None:  # (B, T, d) -> (B, d, T) -> causal depthwise conv -> (B, T, d)
            x = self.short(F.pad(x.transpose(1, 2), (self.short_taps - 1, 0))).transpose(1, 2)
        q = self.q(x).view(B, T, H, f).transpose(1, 2)  # (B, H, T, f), before the feature map
        k = self.k(x).view(B, T, H, f).transpose(1, 2)  # (B, H, T, f)
        v = self.v(x).view(B, T, H, d // H).transpose(1, 2)  # (B, H, T, Dh)
        v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (B, H, T, Dh + 1): the last column sums φ(q)·φ(k)
        if self.causal:
            if kernel_runs(v):  # on a CPU: the recurrence in C
                out = causal_sums(q, k, v, self.taylor)  # (B, H, T, Dh + 1)
            else:
                out = causal_chunked(q, k, v, self.phi, self.kernel)  # (B, H, T, Dh + 1)
        else:
            q, k = self.phi(q), self.phi(k)  # (B, H, T, F)
            if valid is not None:  # a padded key adds nothing to the sums
                k = k * valid[:, None, :, None].to(k.dtype)
            out = q @ (k.transpose(-1, -2) @ v)  # (B, H, F, Dh + 1) state over all T, then (B, H, T, Dh + 1)
        y = out[..., :-1] / (out[..., -1:] + EPS)  # (B, H, T, Dh)
        return self.out(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)
