"""Linear attention (Katharopoulos et al. 2020, Sec. 3.2-3.3, eq. 4-10; Based, Arora et al. 2024,
Sec. 3): the module (torch). Its config, which imports no torch, is in
``models/configs/linear_attention.py`` (the feature maps and the chunked causal form are described there).

Written here after Zoology's ``mixers/based.py`` (projections without bias, q and k projected to
``feature_dim`` per head, ``TaylorExp``), which computes the causal sums with cumulative sums of
(B, H, T, F, Dh) tensors: 273 x 16 running sums per position of a taylor head would be ~70 MB per
sequence at T = 1024. Two causal forms here instead, the same sums:

- on a CPU, where a C compiler is found (``models/cpu.py``), ``causal_sums``: the same chunks in C
  (``SUMS_SOURCE``), 32 positions at a time, every product a small register-blocked loop over one chunk's
  tiles, which stay in the L1 cache, and the F x Dv state of a head beside them; q, k and v are read in the
  projections' own (B, T, H, ·) layout and the normaliser's ones are added inside, so nothing is copied on
  the way in or out. The chunked matrix form in PyTorch spent most of its CPU time in element-wise passes
  over its (C, C) weights and (T, F) features in main memory;
- elsewhere (a GPU, no compiler, ``SEQBENCH_CPU_KERNELS=0``), ``causal_chunked``: chunks of matrix
  products (O(T/C·F·Dh) state memory). Inside a chunk the Taylor weights come from the raw scores q·k
  (``taylor_kernel``, Based's own identity), so the 273-wide features are built only for the sums across
  chunks: at T <= 512 never. ``flash-linear-attention`` has fused kernels but needs Triton and a GPU.

The normaliser rides along as a column of ones appended to v, so one product gives both the numerator and
the denominator of eq. 6. One thread, d_model 64, batch 8, forward + backward, as a ratio to
causal attention in the same run (``benchmarks/mixers.py``, Nov 28 2026, a shared 2-core CPU): 1.06-1.28x at T
= 256, 0.50-0.51x at 1024, 0.19-0.20x at 4096, step time ~T^0.98-1.01; the PyTorch chunked form 4.3x, 9.5x,
3.0x and T^1.12 (Nov 27 2026).
"""

from __future__ import annotations

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


# The causal sums in C (models/cpu.py builds it), chunk by chunk as ``causal_chunked``: per sequence and head
# the state S = Σ_j φ(k_j) [v_j, 1]ᵀ of the chunks before, read by the chunk's φ(q_t) and then updated with
# its φ(k_j); inside a chunk the weights from the scores q·k (Taylor's closed form, or φ(q)·φ(k) for elu). The
# backward (Katharopoulos et al. Sec. 3.3.1) runs forward in time for dq and everything inside a chunk (S
# again), then backward in time for the rest of dk and dv (R = Σ φ(q_t) dy_tᵀ from the end). Taylor features
# are kept symmetric here, [1, x_i / f^¼, x_i x_j c_ij for i <= j] with c_ii = 1/√(2f), c_ij = 1/√f: the same
# φ(q)·φ(k) as ``taylor_features`` with 1 + f + f(f+1)/2 entries instead of 1 + f + f² (153, not 273, at f =
# 16). Tiles are column-wise (a row of 32 positions per feature), so that features, their gradients and the
# weights are built a vector of positions at a time. Written once over REAL (float or double).
#
# Until Nov 28 2026 the kernel ran the recurrence of eq. 8-10 a position at a time (4 positions per pass over
# the state, 8 multiply-adds per 9 loads and a store), on (B·H, T, ·) copies of q, k and [v, 1]. Against it,
# interleaved in one process on one thread (batch 32, 4 heads, f 16, Dh 8: the probe battery's shapes), forward
# / backward time: T 10 1.05 / 0.80, T 30 0.49 / 0.36 (one chunk: no state at all), T 34 0.97 / 0.94, T 66 0.91
# / 0.84, T 262 0.81 / 0.77. A chunk is 32 positions whatever the sequence's length, so the state's products are
# skipped where the state is zero (the first chunk) or no longer read (the last): without that, T 10 took 1.9x.
#
# Tried and dropped (Nov 28 2026): a value-major state (Dv x Fp, each update vectorised along the 160 features,
# so none of the 16 value lanes' 7 padded ones is multiplied): 9/16 of the update's multiply-adds, yet 1.3-1.6x
# slower at T 34-258 (forward and backward, same shapes, interleaved). Its input is the features as rows, a
# strided transpose of a 160 x 32 tile per update, and the normaliser's lone row is one dependent chain of
# multiply-adds; both cost more than the saved work.
_SUMS_BODY = r"""
/* a vector of 64 bytes, loaded from and stored to any REAL address */
typedef REAL vREAL __attribute__((vector_size(64), aligned(sizeof(REAL)), may_alias));
#define LANES_REAL ((int64_t)(64 / sizeof(REAL)))
#define NV_REAL (CH / LANES_REAL) /* vectors per chunk-long row */
static inline __attribute__((always_inline)) vREAL vload_REAL(const REAL *p) { return *(const vREAL *)p; }
static inline __attribute__((always_inline)) void vstore_REAL(REAL *p, vREAL v) { *(vREAL *)p = v; }

/* φ of a chunk's positions, column-wise: PT[i·CH + t] = φ(x_t)_i from XT[a·CH + t] = x_t,a, every entry a
   product over the chunk's CH positions at once; rows F .. Fp - 1 zero. elu(x) + 1, or the symmetric Taylor
   features, whose pairs (a, b) are laid out by distance around a circle of f: 1, x_a / f^¼, the squares x_a²,
   then for d = 1 .. (f-1)/2 the products x_a x_{(a+d) mod f} for every a, then (f even) x_a x_{a+f/2} for
   a < f/2: every pair once. A padded position's column is φ(0); it is never read out. */
static void features_REAL(int64_t taylor, int64_t f, int64_t Fp, const REAL *restrict XT, REAL *restrict PT) {
    REAL *p = PT;
    if (taylor) {
        const REAL r4 = (REAL)(1 / sqrt(sqrt((double)f))), co = (REAL)(1 / sqrt((double)f));
        const REAL cd = (REAL)(1 / sqrt(2.0 * f));
        for (int64_t t = 0; t < CH; t++) p[t] = 1;
        p += CH;
        for (int64_t a = 0; a < f; a++, p += CH)
#pragma omp simd
            for (int64_t t = 0; t < CH; t++) p[t] = XT[a * CH + t] * r4;
        for (int64_t a = 0; a < f; a++, p += CH)
#pragma omp simd
            for (int64_t t = 0; t < CH; t++) p[t] = XT[a * CH + t] * XT[a * CH + t] * cd;
        for (int64_t d = 1; 2 * d < f; d++)
            for (int64_t a = 0; a < f; a++, p += CH) {
                const REAL *x = XT + a * CH, *y = XT + (a + d < f ? a + d : a + d - f) * CH; /* no division */
#pragma omp simd
                for (int64_t t = 0; t < CH; t++) p[t] = co * x[t] * y[t];
            }
        if (f % 2 == 0)
            for (int64_t a = 0, h = f / 2; a < h; a++, p += CH) {
                const REAL *x = XT + a * CH, *y = XT + (a + h) * CH;
#pragma omp simd
                for (int64_t t = 0; t < CH; t++) p[t] = co * x[t] * y[t];
            }
    } else {
        for (int64_t a = 0; a < f; a++, p += CH) {
            const REAL *x = XT + a * CH;
#pragma omp simd
            for (int64_t t = 0; t < CH; t++) p[t] = x[t] > 0 ? x[t] + 1 : exp2_REAL(x[t] * LOG2E);
        }
    }
    memset(p, 0, sizeof(REAL) * (PT + Fp * CH - p));
}

/* DXT (+)= (dφ/dx)ᵀ DPT, column-wise as features_REAL (add: accumulate into DXT, else overwrite it) */
static void features_bwd_REAL(int64_t taylor, int64_t f, const REAL *restrict XT, const REAL *restrict DPT,
                              REAL *restrict DXT, int add) {
    if (!add) memset(DXT, 0, sizeof(REAL) * f * CH);
    if (taylor) {
        const REAL r4 = (REAL)(1 / sqrt(sqrt((double)f))), co = (REAL)(1 / sqrt((double)f));
        const REAL cd2 = (REAL)(2 / sqrt(2.0 * f));
        const REAL *g = DPT + CH;
        for (int64_t a = 0; a < f; a++) {
            const REAL *x = XT + a * CH, *g1 = g + a * CH, *g2 = g + (f + a) * CH;
            REAL *dx = DXT + a * CH;
#pragma omp simd
            for (int64_t t = 0; t < CH; t++) dx[t] += g1[t] * r4 + cd2 * g2[t] * x[t];
        }
        g += 2 * f * CH;
        for (int64_t d = 1; 2 * d < f; d++)
            for (int64_t a = 0; a < f; a++, g += CH) {
                const int64_t b = a + d < f ? a + d : a + d - f;
                const REAL *x = XT + a * CH, *y = XT + b * CH;
                REAL *dx = DXT + a * CH, *dy = DXT + b * CH;
#pragma omp simd
                for (int64_t t = 0; t < CH; t++) {
                    dx[t] += co * g[t] * y[t];
                    dy[t] += co * g[t] * x[t];
                }
            }
        if (f % 2 == 0)
            for (int64_t a = 0, h = f / 2; a < h; a++, g += CH) {
                const REAL *x = XT + a * CH, *y = XT + (a + h) * CH;
                REAL *dx = DXT + a * CH, *dy = DXT + (a + h) * CH;
#pragma omp simd
                for (int64_t t = 0; t < CH; t++) {
                    dx[t] += co * g[t] * y[t];
                    dy[t] += co * g[t] * x[t];
                }
            }
    } else {
        for (int64_t a = 0; a < f; a++) {
            const REAL *x = XT + a * CH, *g = DPT + a * CH;
            REAL *dx = DXT + a * CH;
#pragma omp simd
            for (int64_t t = 0; t < CH; t++) dx[t] += x[t] > 0 ? g[t] : g[t] * exp2_REAL(x[t] * LOG2E);
        }
    }
}

/* The products, each a register-blocked loop over a chunk's tiles: vectors of LANES = 64 bytes (GCC/clang
   vector extensions, so that the accumulators stay in registers whatever the autovectoriser decides), blocks
   of at most 8 rows of broadcast numbers against them.
   read:    out[c·CH + t] (+)= Σ_{i<n} M[c·mc + i·mi] XT[i·CH + t]                 for c < NC, t < CH
   project: D[r·ldd + i] += Σ_{c<nc} Y[r·ldy + c] M[c·ldm + i]    for r < NR, i < n (a multiple of LANES) */
#define DEF_READ_REAL(NC)                                                                                     \
    static void read##NC##_REAL(int64_t n, const REAL *restrict M, int64_t mc, int64_t mi,                      \
                                const REAL *restrict XT, REAL *restrict out, int zero) {                        \
        vREAL acc[NC][NV_REAL];                                                                                \
        for (int c = 0; c < NC; c++)                                                                           \
            for (int u = 0; u < NV_REAL; u++)                                                                  \
                acc[c][u] = zero ? (vREAL){0} : vload_REAL(out + c * CH + u * LANES_REAL);                     \
        for (int64_t i = 0; i < n; i++) {                                                                      \
            vREAL x[NV_REAL];                                                                                  \
            for (int u = 0; u < NV_REAL; u++) x[u] = vload_REAL(XT + i * CH + u * LANES_REAL);                 \
            for (int c = 0; c < NC; c++) {                                                                     \
                const REAL m = M[c * mc + i * mi];                                                             \
                for (int u = 0; u < NV_REAL; u++) acc[c][u] += m * x[u];                                       \
            }                                                                                                  \
        }                                                                                                      \
        for (int c = 0; c < NC; c++)                                                                           \
            for (int u = 0; u < NV_REAL; u++) vstore_REAL(out + c * CH + u * LANES_REAL, acc[c][u]);           \
    }
#define DEF_PROJECT_REAL(NR)                                                                                  \
    static void project##NR##_REAL(int64_t nc, int64_t n, const REAL *restrict Y, int64_t ldy,                  \
                                   const REAL *restrict M, int64_t ldm, REAL *restrict D, int64_t ldd) {        \
        for (int64_t i0 = 0; i0 < n; i0 += LANES_REAL) {                                                       \
            vREAL acc[NR];                                                                                     \
            for (int r = 0; r < NR; r++) acc[r] = vload_REAL(D + r * ldd + i0);                                \
            for (int64_t c = 0; c < nc; c++) {                                                                 \
                const vREAL m = vload_REAL(M + c * ldm + i0);                                                  \
                for (int r = 0; r < NR; r++) acc[r] += Y[r * ldy + c] * m;                                     \
            }                                                                                                  \
            for (int r = 0; r < NR; r++) vstore_REAL(D + r * ldd + i0, acc[r]);                                \
        }                                                                                                      \
    }
DEF_READ_REAL(8)
DEF_READ_REAL(4)
DEF_READ_REAL(2)
DEF_READ_REAL(1)
DEF_PROJECT_REAL(8)
DEF_PROJECT_REAL(4)
DEF_PROJECT_REAL(2)
DEF_PROJECT_REAL(1)

/* read over any number of rows nc and project over any nr, in blocks of 8, 4, 2 and 1 */
static void read_REAL(int64_t nc, int64_t n, const REAL *M, int64_t mc, int64_t mi, const REAL *XT, REAL *out,
                      int zero) {
    int64_t c = 0;
    for (; c + 8 <= nc; c += 8) read8_REAL(n, M + c * mc, mc, mi, XT, out + c * CH, zero);
    if (c + 4 <= nc) read4_REAL(n, M + c * mc, mc, mi, XT, out + c * CH, zero), c += 4;
    if (c + 2 <= nc) read2_REAL(n, M + c * mc, mc, mi, XT, out + c * CH, zero), c += 2;
    if (c < nc) read1_REAL(n, M + c * mc, mc, mi, XT, out + c * CH, zero);
}
static void project_REAL(int64_t nr, int64_t nc, int64_t n, const REAL *Y, int64_t ldy, const REAL *M, int64_t ldm,
                         REAL *D, int64_t ldd) {
    int64_t r = 0;
    for (; r + 8 <= nr; r += 8) project8_REAL(nc, n, Y + r * ldy, ldy, M, ldm, D + r * ldd, ldd);
    if (r + 4 <= nr) project4_REAL(nc, n, Y + r * ldy, ldy, M, ldm, D + r * ldd, ldd), r += 4;
    if (r + 2 <= nr) project2_REAL(nc, n, Y + r * ldy, ldy, M, ldm, D + r * ldd, ldd), r += 2;
    if (r < nr) project1_REAL(nc, n, Y + r * ldy, ldy, M, ldm, D + r * ldd, ldd);
}

/* A chunk's tiles in and out (positions t0 + t, t < CH, of a row; n of them real; src and dst step `stride`
   numbers from one position to the next). A padded position's inputs are zeros, so it adds nothing to any sum
   (its value and output gradient are zero), and its outputs are not written. rows: width-wide rows, padded to
   ld; cols: transposed, rows of CH, padded to nrows rows of zeros; ones: a last column (row) of ones at the real
   positions, the normaliser's values. */
static void rows_REAL(int64_t n, int64_t width, int64_t ld, int64_t stride, const REAL *restrict src,
                      REAL *restrict dst, int ones) {
    memset(dst, 0, sizeof(REAL) * CH * ld);
    for (int64_t t = 0; t < n; t++) {
        memcpy(dst + t * ld, src + t * stride, sizeof(REAL) * width);
        if (ones) dst[t * ld + width] = 1;
    }
}
static void cols_REAL(int64_t n, int64_t width, int64_t nrows, int64_t stride, const REAL *restrict src,
                      REAL *restrict dst, int ones) {
    memset(dst + width * CH, 0, sizeof(REAL) * CH * (nrows - width));
    for (int64_t a = 0; a < width; a++) {
        REAL *d = dst + a * CH;
        for (int64_t t = 0; t < n; t++) d[t] = src[t * stride + a];
        for (int64_t t = n; t < CH; t++) d[t] = 0;
    }
    if (ones)
        for (int64_t t = 0; t < n; t++) dst[width * CH + t] = 1;
}
static void out_REAL(int64_t n, int64_t width, int64_t stride, const REAL *restrict src, REAL *restrict dst,
                     int add) {
    for (int64_t t = 0; t < n; t++)
        for (int64_t a = 0; a < width; a++)
            dst[t * stride + a] = (add ? dst[t * stride + a] : 0) + src[a * CH + t];
}
static void transpose_REAL(const REAL *restrict a, REAL *restrict at) { /* CH x CH */
    for (int64_t t = 0; t < CH; t++)
        for (int64_t i = 0; i < CH; i++) at[i * CH + t] = a[t * CH + i];
}

/* A row's scratch (``_work_numbers`` in Python counts it): the state S (Fp x Dvp: feature-major, values padded
   to Dvp, so that a chunk's update is one project), then a chunk's tiles: raw q, k and their gradients
   transposed (Dp x CH: *T), features (QT, KT) and their gradients (DPT), transposed (Fp x CH); values and
   output gradients as rows (V, G: CH x Dvp) and transposed (VT, GT), an output (OT: Dv x CH); the scores, the
   weights and their gradients (CH x CH). */
typedef struct {
    REAL *S, *QRT, *KRT, *DQT, *DKT, *DXT, *QT, *KT, *DPT, *V, *G, *VT, *GT, *OT, *ST, *WT, *WR, *GST, *GS;
} tiles_REAL;
static tiles_REAL tiles_REAL_at(REAL *w, int64_t f, int64_t Dv, int64_t taylor) {
    const int64_t Fp = FEATURES(taylor, f), Dp = DIMS(f), Dvp = PAD(Dv);
    tiles_REAL s;
    REAL **dp[] = {&s.QRT, &s.KRT, &s.DQT, &s.DKT, &s.DXT}, **fp[] = {&s.QT, &s.KT, &s.DPT};
    REAL **vp[] = {&s.VT, &s.GT, &s.OT}, **cp[] = {&s.ST, &s.WT, &s.WR, &s.GST, &s.GS};
    s.S = w, w += Fp * Dvp;
    for (int i = 0; i < 5; i++) *dp[i] = w, w += Dp * CH;
    for (int i = 0; i < 3; i++) *fp[i] = w, w += Fp * CH;
    s.V = w, w += CH * Dvp;
    s.G = w, w += CH * Dvp;
    for (int i = 0; i < 3; i++) *vp[i] = w, w += Dv * CH;
    for (int i = 0; i < 5; i++) *cp[i] = w, w += CH * CH;
    return s;
}

/* ST[j][t] = x_k_j · x_q_t, the scores inside the chunk (Taylor: raw q, k; elu: their features), then WT[j][t] =
   the weight φ(q_t)·φ(k_j) where j <= t, else 0; and (dkernel) GST[j][t] *= its derivative in the score where
   j <= t, else 0. Needs QRT and KRT (Taylor) or QT and KT (elu). */
static void chunk_weights_REAL(const tiles_REAL *s, int64_t taylor, int64_t f, int dkernel) {
    const int64_t Dp = DIMS(f);
    const REAL a = (REAL)(1 / sqrt((double)f)), h = (REAL)(0.5 / f), d2 = (REAL)(1.0 / f);
    read_REAL(CH, Dp, taylor ? s->KRT : s->KT, 1, CH, taylor ? s->QRT : s->QT, s->ST, 1);
    for (int64_t j = 0; j < CH; j++) {
        REAL *w = s->WT + j * CH, *g = s->GST + j * CH;
        const REAL *x = s->ST + j * CH;
#pragma omp simd
        for (int64_t t = 0; t < CH; t++) {
            const REAL sc = x[t];
            w[t] = t >= j ? (taylor ? 1 + sc * (a + h * sc) : sc) : 0;
            if (dkernel) g[t] = t >= j ? g[t] * (taylor ? a + d2 * sc : 1) : 0;
        }
    }
}

/* Where a row's positions lie: row b of B·H is sequence b / H, head b % H, of a (B, T, H, width) tensor. */
static int64_t at_REAL(int64_t b, int64_t t0, int64_t T, int64_t H, int64_t width) {
    return ((b / H * T + t0) * H + b % H) * width;
}

/* A chunk's inputs: q and k transposed with their features; [v, 1] (and dy) as rows and transposed. */
static void chunk_in_REAL(const tiles_REAL *s, int64_t taylor, int64_t f, int64_t Dv, int64_t n, int64_t H,
                          const REAL *q, const REAL *k, const REAL *v, const REAL *go) {
    const int64_t Fp = FEATURES(taylor, f), Dp = DIMS(f), Dvp = PAD(Dv), Dh = Dv - 1;
    cols_REAL(n, f, Dp, H * f, q, s->QRT, 0);
    cols_REAL(n, f, Dp, H * f, k, s->KRT, 0);
    features_REAL(taylor, f, Fp, s->QRT, s->QT);
    features_REAL(taylor, f, Fp, s->KRT, s->KT);
    rows_REAL(n, Dh, Dvp, H * Dh, v, s->V, 1);
    cols_REAL(n, Dh, Dv, H * Dh, v, s->VT, 1);
    if (go) {
        rows_REAL(n, Dv, Dvp, H * Dv, go, s->G, 0);
        cols_REAL(n, Dv, Dv, H * Dv, go, s->GT, 0);
    }
}

/* q, k (B, T, H, f), v (B, T, H, Dh) -> o (B, T, H, Dh + 1): o_t = Σ_{j≤t} (φ(q_t)·φ(k_j)) [v_j, 1] for rows
   (sequence, head) b0 .. b1 - 1 of B·H. work: ``_work_numbers`` scratch. */
void sums_fwd_REAL(int64_t b0, int64_t b1, int64_t T, int64_t H, int64_t f, int64_t Dh, int64_t taylor,
                   const REAL *restrict q, const REAL *restrict k, const REAL *restrict v, REAL *restrict o,
                   REAL *restrict work) {
    if (T <= 0) return;
    const int64_t Dv = Dh + 1, Fp = FEATURES(taylor, f), Dvp = PAD(Dv);
    const tiles_REAL s = tiles_REAL_at(work, f, Dv, taylor);
    for (int64_t b = b0; b < b1; b++) {
        memset(s.S, 0, sizeof(REAL) * Fp * Dvp);
        for (int64_t t0 = 0; t0 < T; t0 += CH) {
            const int64_t n = T - t0 < CH ? T - t0 : CH, rf = at_REAL(b, t0, T, H, f);
            chunk_in_REAL(&s, taylor, f, Dv, n, H, q + rf, k + rf, v + at_REAL(b, t0, T, H, Dh), NULL);
            chunk_weights_REAL(&s, taylor, f, 0);
            /* across chunks: S φ(q_t) (S is zero before the first), then inside: Σ_j w(t, j) v_j */
            if (t0 > 0) read_REAL(Dv, Fp, s.S, 1, Dvp, s.QT, s.OT, 1);
            read_REAL(Dv, CH, s.VT, CH, 1, s.WT, s.OT, t0 == 0);
            if (t0 + CH < T) project_REAL(Fp, CH, Dvp, s.KT, CH, s.V, Dvp, s.S, Dvp); /* S += Σ_j φ(k_j) v_jᵀ */
            out_REAL(n, Dv, H * Dv, s.OT, o + at_REAL(b, t0, T, H, Dv), 0);
        }
    }
}

/* The gradients of <o, go> (go as o): gq, gk as q and gv as v. work: ``_work_numbers`` scratch.
   Forward in time: S again, dφ(q_t) = S dy_t, and everything inside a chunk (dv, and dq, dk through the
   weights). Backward in time: R = Σ_{t in later chunks} φ(q_t) dy_tᵀ; dv_j += Rᵀ φ(k_j), dφ(k_j) = R v_j. */
void sums_bwd_REAL(int64_t b0, int64_t b1, int64_t T, int64_t H, int64_t f, int64_t Dh, int64_t taylor,
                   const REAL *restrict q, const REAL *restrict k, const REAL *restrict v,
                   const REAL *restrict go, REAL *restrict gq, REAL *restrict gk, REAL *restrict gv,
                   REAL *restrict work) {
    if (T <= 0) return;
    const int64_t Dv = Dh + 1, Fp = FEATURES(taylor, f), Dp = DIMS(f), Dvp = PAD(Dv);
    const tiles_REAL s = tiles_REAL_at(work, f, Dv, taylor);
    for (int64_t b = b0; b < b1; b++) {
        memset(s.S, 0, sizeof(REAL) * Fp * Dvp);
        for (int64_t t0 = 0; t0 < T; t0 += CH) {
            const int64_t n = T - t0 < CH ? T - t0 : CH, rf = at_REAL(b, t0, T, H, f), rh = at_REAL(b, t0, T, H, Dh);
            chunk_in_REAL(&s, taylor, f, Dv, n, H, q + rf, k + rf, v + rh, go + at_REAL(b, t0, T, H, Dv));
            /* GST[j][t] = dy_t · v_j, the weights' gradient, then through the kernel */
            read_REAL(CH, Dv, s.V, Dvp, 1, s.GT, s.GST, 1);
            chunk_weights_REAL(&s, taylor, f, 1);
            transpose_REAL(s.WT, s.WR);
            transpose_REAL(s.GST, s.GS);
            /* dv_j (inside) = Σ_t w(t, j) dy_t: the values' columns only, not the normaliser's */
            read_REAL(Dh, CH, s.GT, CH, 1, s.WR, s.OT, 1);
            out_REAL(n, Dh, H * Dh, s.OT, gv + rh, 0);
            /* the scores' inputs: dx_q_t = Σ_j gs(t, j) x_k_j, dx_k_j = Σ_t gs(t, j) x_q_t (transposed) */
            const REAL *xq = taylor ? s.QRT : s.QT, *xk = taylor ? s.KRT : s.KT;
            read_REAL(Dp, CH, xk, CH, 1, s.GST, s.DQT, 1);
            read_REAL(Dp, CH, xq, CH, 1, s.GS, s.DKT, 1);
            /* dφ(q_t) = S dy_t (+ the features' share from inside, elu) */
            if (!taylor) memcpy(s.DPT, s.DQT, sizeof(REAL) * Fp * CH);
            if (t0 > 0) read_REAL(Fp, Dv, s.S, Dvp, 1, s.GT, s.DPT, taylor);
            else if (taylor) memset(s.DPT, 0, sizeof(REAL) * Fp * CH);
            if (t0 + CH < T) project_REAL(Fp, CH, Dvp, s.KT, CH, s.V, Dvp, s.S, Dvp);
            features_bwd_REAL(taylor, f, s.QRT, s.DPT, taylor ? s.DQT : s.DXT, taylor);
            out_REAL(n, f, H * f, taylor ? s.DQT : s.DXT, gq + rf, 0);
            if (!taylor) features_bwd_REAL(taylor, f, s.KRT, s.DKT, s.DXT, 0);
            out_REAL(n, f, H * f, taylor ? s.DKT : s.DXT, gk + rf, 0);
        }
        memset(s.S, 0, sizeof(REAL) * Fp * Dvp); /* now R: zero at the last chunk, which only adds to it */
        for (int64_t t0 = T > CH ? (T - 1) / CH * CH : -1; t0 >= 0; t0 -= CH) { /* one chunk: nothing to do */
            const int64_t n = T - t0 < CH ? T - t0 : CH, rf = at_REAL(b, t0, T, H, f), rh = at_REAL(b, t0, T, H, Dh);
            chunk_in_REAL(&s, taylor, f, Dv, n, H, q + rf, k + rf, v + rh, go + at_REAL(b, t0, T, H, Dv));
            if (t0 + CH < T) {
                read_REAL(Fp, Dv, s.S, Dvp, 1, s.VT, s.DPT, 1); /* dφ(k_j) = R v_j */
                read_REAL(Dh, Fp, s.S, 1, Dvp, s.KT, s.OT, 1);  /* dv_j += Rᵀ φ(k_j) */
                out_REAL(n, Dh, H * Dh, s.OT, gv + rh, 1);
                features_bwd_REAL(taylor, f, s.KRT, s.DPT, s.DXT, 0);
                out_REAL(n, f, H * f, s.DXT, gk + rf, 1);
            }
            if (t0 > 0) project_REAL(Fp, CH, Dvp, s.QT, CH, s.G, Dvp, s.S, Dvp); /* R += Σ_t φ(q_t) dy_tᵀ */
        }
    }
}
"""
_CH, _W = 32, 16  # the kernel's positions per chunk, and the lanes its features, raw q, k and values are padded to
_SUMS_DEFINES = f"""
#define CH {_CH}
#define W {_W}
#define LOG2E 1.4426950408889634 /* exp(x) = exp2(x·log2 e) */
#define PAD(n) (((n) + W - 1) / W * W)
#define FEATURES(taylor, f) PAD((taylor) ? 1 + (f) + (f) * ((f) + 1) / 2 : (f)) /* φ's width, padded */
#define DIMS(f) PAD(f) /* the scores' inputs inside a chunk: raw q, k (Taylor) or φ (elu, = FEATURES) */
"""
SUMS_SOURCE = cpu.instantiate(_SUMS_BODY, _SUMS_DEFINES)
_KERNEL_DTYPES = cpu.DTYPES


def _pad(n: int) -> int:
    """``n`` rounded up to whole blocks of lanes (the kernel's PAD)."""
    return -(-n // _W) * _W


def _padded_features(taylor: bool, f: int) -> int:
    """The kernel's features per position, padded to whole blocks (its FEATURES)."""
    return _pad(1 + f + f * (f + 1) // 2 if taylor else f)


def _work_numbers(taylor: bool, f: int, Dv: int) -> int:
    """The kernel's scratch for one row (``tiles_at`` lays it out): the state, and a chunk's five tiles of raw
    q and k or their gradients, three of features, two of values as rows and three transposed, five of weights."""
    Fp, Dp, Dvp = _padded_features(taylor, f), _pad(f), _pad(Dv)
    return Fp * Dvp + 5 * Dp * _CH + 3 * Fp * _CH + 2 * _CH * Dvp + 3 * Dv * _CH + 5 * _CH * _CH


class _CausalSums(torch.autograd.Function):
    """``o_t = Σ_{j≤t} (φ(q_t)·φ(k_j)) [v_j, 1]`` by the C kernel (``SUMS_SOURCE``): q, k (B, T, H, f), v (B, T,
    H, Dh) -> (B, T, H, Dh + 1), in the projections' own layout (no copies in or out); ``taylor``: Based's Taylor
    features, else elu + 1."""

    @staticmethod
    def forward(ctx, q, k, v, taylor, lib):
        B, T, H, f = q.shape
        Dh, real = v.shape[-1], _KERNEL_DTYPES[v.dtype]
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o = v.new_empty(B, T, H, Dh + 1)
        work = v.new_empty(cpu.slots(B * H), _work_numbers(taylor, f, Dh + 1))
        run = getattr(lib, f"sums_fwd_{real}")
        cpu.parallel(B * H, lambda b0, b1, s: cpu.call(run, b0, b1, T, H, f, Dh, taylor, q, k, v, o, work[s]), lib)
        ctx.lib, ctx.run, ctx.taylor = lib, getattr(lib, f"sums_bwd_{real}"), taylor
        ctx.save_for_backward(q, k, v)
        return o

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        q, k, v = ctx.saved_tensors
        (B, T, H, f), Dh = q.shape, v.shape[-1]
        go = go.contiguous()
        gq, gk, gv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        work = v.new_empty(cpu.slots(B * H), _work_numbers(ctx.taylor, f, Dh + 1))
        args = (q, k, v, go, gq, gk, gv)
        run = ctx.run
        cpu.parallel(B * H, lambda b0, b1, s: cpu.call(run, b0, b1, T, H, f, Dh, ctx.taylor, *args, work[s]), ctx.lib)
        return gq, gk, gv, None, None


def kernel_runs(x: torch.Tensor) -> bool:
    """Whether ``causal_sums`` takes ``x`` here: a float32 or float64 CPU tensor, and the kernel built."""
    return cpu.choose("linear_attention_sums", SUMS_SOURCE, x, None) is not None


def causal_sums(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, taylor: bool) -> torch.Tensor:
    """``causal_chunked``'s sums of ``[v, 1]`` by the C kernel (where ``kernel_runs``), in the projections'
    layout: q, k (B, T, H, f) before the feature map, v (B, T, H, Dh) -> (B, T, H, Dh + 1), the last column the
    normaliser Σ_{j≤t} φ(q_t)·φ(k_j); ``taylor``: Based's feature map, else elu + 1."""
    if not kernel_runs(v):
        raise RuntimeError("the linear_attention_sums kernel takes float32 or float64 CPU tensors where it builds")
    return _CausalSums.apply(q.to(v.dtype), k.to(v.dtype), v, taylor, cpu.load("linear_attention_sums", SUMS_SOURCE))


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
        q = self.q(x).view(B, T, H, f)  # (B, T, H, f), before the feature map
        k = self.k(x).view(B, T, H, f)  # (B, T, H, f)
        v = self.v(x).view(B, T, H, d // H)  # (B, T, H, Dh)
        if self.causal and kernel_runs(v):  # on a CPU: the sums in C, in this layout, the normaliser's ones added there
            out = causal_sums(q, k, v, self.taylor)  # (B, T, H, Dh + 1)
        else:
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, ·)
            v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (B, H, T, Dh + 1): the last column sums φ(q)·φ(k)
            if self.causal:
                out = causal_chunked(q, k, v, self.phi, self.kernel)  # (B, H, T, Dh + 1)
            else:
                q, k = self.phi(q), self.phi(k)  # (B, H, T, F)
                if valid is not None:  # a padded key adds nothing to the sums
                    k = k * valid[:, None, :, None].to(k.dtype)
                out = q @ (k.transpose(-1, -2) @ v)  # (B, H, F, Dh + 1) state over all T, then (B, H, T, Dh + 1)
            out = out.transpose(1, 2)  # (B, T, H, Dh + 1)
        y = out[..., :-1] / (out[..., -1:] + EPS)  # (B, T, H, Dh)
        return self.out(y.reshape(B, T, d))  # (B, T, d)
