"""Mamba-2 (Dao & Gu 2024, "Transformers are SSMs", Sec. 6-7): the module (torch). Its config, which
imports no torch, is in ``models/configs/mamba2.py`` (the recurrence and the block are described there).

The block follows mamba_ssm's ``Mamba2`` module (``mamba_ssm/modules/mamba2.py``, Apache-2.0) with
``ngroups = 1``: the same parameters (``in_proj``, ``conv1d``, ``dt_bias``, ``A_log``, ``D``,
``norm.weight``, ``out_proj``, the same state_dict keys), the same initialisation (A uniform in
[1, 16], Δ log-uniform in [0.001, 0.1] through the inverse softplus of ``dt_bias``, D = 1) and the
same gated RMSNorm ``norm(y · silu(z))``. Which SSD scan runs depends on where the input is:

- CUDA with ``mamba_ssm`` importable: its fused Triton kernel ``mamba_chunk_scan_combined`` (the
  softplus of Δ and the D skip fused in), switched per call, so the same parameters run either way;
  without it, flash-linear-attention's ``chunk_simple_gla`` (Triton), the same SSD (``cuda_ssd``).
- On a CPU: ``_KernelSSD``, a C kernel (``SSD_SOURCE``, built by ``models/cpu.py`` as Mamba-1's selective
  scan is) that runs the recurrence one step after another with the state in the cache: at d_model 64 the
  chunked form below spent its time in the fixed cost of a dozen small products per chunk (2.1x causal
  attention's step at T = 256 on one thread, against 1.3-1.7x in four runs with the kernels, benchmarks/mixers.py).
- Anywhere else, and on a CPU without a C compiler (or with ``SEQBENCH_CPU_KERNELS=0``): ``_SSD`` below, in
  plain PyTorch after the authors' minimal reference
  (``mamba_ssm/modules/ssd_minimal.py``, ``ssd_minimal_discrete``, Listing 1 of the paper): a
  chunk's outputs as one masked matrix product, ``(C Bᵀ ∘ L) X``, its state as ``Bᵀ X`` weighted by
  the decay to the chunk's end. Every decay is a power of a difference of cumulative log-decays
  within a chunk, so it lies in (0, 1]: nothing is divided by a cumulated decay, so nothing
  overflows. Departures, each for a CPU: the reference passes states between chunks by a (chunks x
  chunks) matrix, quadratic in T, where here a loop over chunks carries them (one multiply-add per
  chunk), so the cost stays linear in T; the forward and backward are written out (``_SSD``), as are
  the short convolution and the gated norm, which halved the passes over memory that autograd of the
  same steps made; decays are floored at about 1e-18 (``decays``), since denormal floats took 50 times
  longer.

No CPU package implements Mamba-2: mamba-ssm needs CUDA (its SSD kernels are Triton), mambapy's
Mamba-2 imports them, and flash-linear-attention's ops need Triton too (flash-linear-attention 0.6.0:
every ``fla.ops`` module, the naive references included, imports Triton, whose kernels then find no
CPU driver), hence this one and the kernel. tests/models/test_mixers_2024.py checks both against the
step-by-step recurrence (outputs and gradients) at odd lengths and chunk sizes, and, on a GPU with
mamba_ssm or fla, against the field's kernel.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models.configs.mamba2 import CHUNK, Mamba2Config, chunking, inner_heads_problem  # noqa: F401  (the config, re-exported beside its module)

EPS = 1e-5  # the gated RMSNorm's (mamba_ssm's RMSNormGated)
LOG2E = math.log2(math.e)  # decays are computed as powers of 2: torch's exp2 is about twice as fast as exp on a CPU
FLOOR = -60.0  # the smallest log2-decay kept (``decays``)


@functools.cache
def fla_gated_backward_refused(mixer: str) -> bool:
    """Whether flash-linear-attention would refuse the backward of its gated chunk kernels here, with a
    warning (once per mixer) that the PyTorch chunked form runs instead. fla 0.6.0 raises in
    ``chunk_bwd_dqkwg`` on Hopper GPUs with Triton 3.4.0 to 3.7.0, which it says give wrong gradients
    there (fla issue #640), unless ``tilelang`` is installed; seen on an H200 with Triton 3.6.0."""
    try:
        from fla.utils import TRITON_ABOVE_3_4_0, TRITON_ABOVE_3_7_1
        from fla.utils.hardware import IS_NVIDIA_HOPPER
    except (ImportError, OSError, RuntimeError):
        return False
    if not (IS_NVIDIA_HOPPER and TRITON_ABOVE_3_4_0 and not TRITON_ABOVE_3_7_1) or importlib.util.find_spec("tilelang"):
        return False
    warnings.warn(
        f"{mixer}: flash-linear-attention refuses its gated backward on Hopper with Triton < 3.7.1 (fla #640) "
        "and tilelang is not installed: the PyTorch chunked form runs on the GPU instead",
        stacklevel=2,
    )
    return True


@functools.cache
def fla_ssd():
    """flash-linear-attention's ``chunk_simple_gla`` as ``f(x, dt, A, B, C, D, dt_bias) -> y`` (``ssd``'s
    arguments), or None where fla does not load. Scalar decay per head is SSD: q = C, k = B, v = Δ·x and
    the log-decay g = Δ·A per head."""
    try:
        # fla has no stubs and is absent where mypy runs: pyproject's mypy overrides ignore it
        from fla.ops.simple_gla import chunk_simple_gla
    except (ImportError, OSError, RuntimeError):  # not installed, no Triton, or built for another torch
        return None

    def simple_gla(x, dt, A, B, C, D, dt_bias):
        H = x.shape[2]
        delta = F.softplus(dt + dt_bias)  # (b, T, H)
        q, k = (t[:, :, None].expand(-1, -1, H, -1).contiguous() for t in (C, B))  # (b, T, H, N)
        y, _ = chunk_simple_gla(q, k, x * delta[..., None], g=delta * A, scale=1.0)
        return y + x * D[:, None]

    return simple_gla


@functools.cache
def cuda_ssd():
    """The field's SSD kernel for CUDA as ``f(x, dt, A, B, C, D, dt_bias) -> y`` with ``ssd``'s arguments, or
    None where neither package loads: mamba_ssm's fused ``mamba_chunk_scan_combined`` first, else
    flash-linear-attention's (``fla_ssd``) unless it would refuse its backward here. mamba_ssm ships no
    binary wheel (its kernels are built against the local CUDA), so a machine often has fla's only."""
    try:
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except (ImportError, OSError, RuntimeError):  # not installed, or built against another CUDA/torch
        pass
    else:

        def fused(x, dt, A, B, C, D, dt_bias):
            return mamba_chunk_scan_combined(
                x, dt, A, B[:, :, None], C[:, :, None], CHUNK, D=D, dt_bias=dt_bias, dt_softplus=True
            )

        return fused
    return None if fla_gated_backward_refused("mamba2") else fla_ssd()


def decays(log2_decay: torch.Tensor) -> torch.Tensor:
    """``2^v`` of log2-decays v <= 0, floored at ``2^FLOOR``: a decay below it is taken as ``2^FLOOR``, about
    1e-18 (so its gradient is dropped), which changes no float32 or float64 result that matters, but keeps
    the products out of denormal floats, which on a CPU took 50 times longer than normal ones."""
    return log2_decay.clamp(min=FLOOR).exp2()


def decay_matrix(cs: torch.Tensor) -> torch.Tensor:
    """``L_ij = 2^(cs_i - cs_j)`` for j <= i from cumulative log2-decays cs (..., Q) -> (..., Q, Q), floored as
    ``decays``; the upper triangle (j > i) is 1, not 0: the caller masks it in a factor of the product
    (``2^(positive)`` could overflow, and an inf times a zero gradient is NaN, so it is clamped to 0 instead)."""
    return (cs[..., :, None] - cs[..., None, :]).clamp_(FLOOR, 0.0).exp2_()


def transposed(t: torch.Tensor) -> torch.Tensor:
    """The transpose of the last two dimensions as a contiguous copy. Used for the second factor of a batched
    product: torch's CPU bmm took about twice as long with a transposed view there (torch 2.13, one thread)."""
    return t.transpose(-1, -2).contiguous()


def _heads_major(t: torch.Tensor, n: int, Q: int) -> torch.Tensor:
    """(b, T, H, P) -> a copy in (b, H, n, Q, P) layout, zero past T: one pass."""
    b, T, H, P = t.shape
    out = t.new_empty(b, H, n * Q, P)
    out[:, :, T:] = 0
    out[:, :, :T].copy_(t.transpose(1, 2))
    return out.view(b, H, n, Q, P)


class _SSD(torch.autograd.Function):
    """``SSD(x·Δ, A·Δ, B, C) + D·x`` with ``Δ = softplus(dt + dt_bias)``, in chunks, with its own backward.

    Inside, time is cut into n chunks of Q positions and every tensor is heads-major (b, H, n, Q, ·), so
    each product below is one batched matrix product. With c the cumulative log-decay from a chunk's start
    (natural units; the decays are taken as powers of 2 of c·log2 e):

    - inside a chunk: ``Y = (G ∘ L) X`` with ``G = tril(C Bᵀ)`` (shared by the heads) and
      ``L_ij = exp(c_i - c_j)``;
    - across chunks: each chunk's state, transposed, ``S = Bᵀ (X ∘ exp(c_Q - c))`` (N x P), carried by
      ``E_{k+1} = exp(c_Q) E_k + S_k`` (the only sequential part, one multiply-add per chunk), read as
      ``Y += (C E_k) ∘ exp(c)``.

    The backward runs the same products transposed and the carry in reverse. Autograd of the same
    operations made about twice the passes over memory (each product's and each element-wise step's
    gradient separately) and took 1.7-1.9 times as long on one CPU thread (d_model 64, T 256-4096).
    Gradients of decays below the floor (``decays``) are those of the unfloored ones, about 1e-18 of
    the others."""

    @staticmethod
    def forward(ctx, x, dt, A, B, C, D, dt_bias, chunk):
        b, T, H, P = x.shape
        N = B.shape[-1]
        n, Q = chunking(T, chunk)
        pad = n * Q - T  # at the end, with A·Δ = 0 (no decay) and x = B = C = 0: no output before T moves
        delta = F.softplus(dt + dt_bias)  # (b, T, H)
        X = x.new_empty(b, H, n * Q, P)
        X[:, :, T:] = 0
        torch.mul(x, delta[..., None], out=X.transpose(1, 2)[:, :T])  # x·Δ, written heads-major
        X = X.view(b, H, n, Q, P)
        a = F.pad(delta * A, (0, 0, 0, pad))  # (b, nQ, H): the log-decays A·Δ
        cs = a.view(b, n, Q, H).permute(0, 3, 1, 2).cumsum(-1) * LOG2E  # (b, H, n, Q): c, in log2 units
        Bc, Cc = (F.pad(t, (0, 0, 0, pad)).view(b, 1, n, Q, N) for t in (B, C))  # (b, 1, n, Q, N)
        BcT = transposed(Bc)  # (b, 1, n, N, Q)
        G = (Cc @ BcT).tril_()  # (b, 1, n, Q, Q): C_i · B_j, j <= i
        L = decay_matrix(cs)  # (b, H, n, Q, Q)
        Sm = L * G
        Y = Sm @ X  # (b, H, n, Q, P): the outputs from inside each chunk
        E = BcT_end = CcG = carry = to_end = Gam = None
        if n > 1:  # the decays scale B and C (N wide), not X and Y (P wide): N <= P at the defaults
            to_end = decays(cs[..., -1:] - cs)  # (b, H, n, Q): decay from each position to its chunk's end
            BcT_end = BcT * to_end[..., None, :]  # (b, H, n, N, Q)
            S = BcT_end @ X  # (b, H, n, N, P): what each chunk adds to the state (transposed)
            carry = decays(cs[..., -1])  # (b, H, n): decay across a whole chunk
            E = torch.empty_like(S)  # (b, H, n, N, P): the state entering each chunk
            E[:, :, 0] = 0
            for k in range(n - 1):
                torch.addcmul(S[:, :, k], E[:, :, k], carry[:, :, k, None, None], out=E[:, :, k + 1])
            Gam = decays(cs)  # (b, H, n, Q): decay from each chunk's start
            CcG = Cc * Gam[..., None]  # (b, H, n, Q, N)
            Y += CcG @ E  # the outputs from earlier chunks
        out = torch.addcmul(Y.view(b, H, n * Q, P)[:, :, :T].transpose(1, 2), x, D[:, None])  # (b, T, H, P)
        ctx.save_for_backward(x, dt, A, D, dt_bias, delta, X, Bc, Cc, L, Sm, E, BcT_end, CcG, carry, to_end, Gam)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        x, dt, A, D, dt_bias, delta, X, Bc, Cc, L, Sm, E, BcT_end, CcG, carry, to_end, Gam = ctx.saved_tensors
        b, T, H, P = x.shape
        n, Q, N = X.shape[2], X.shape[3], Bc.shape[-1]
        dD = (dout * x).sum((0, 1, 3))
        dY = _heads_major(dout, n, Q)  # (b, H, n, Q, P)
        XT = transposed(X)  # (b, H, n, P, Q)
        dSm = dY @ XT  # (b, H, n, Q, Q)
        dX = Sm.transpose(-1, -2) @ dY  # (b, H, n, Q, P)
        dG = (dSm * L).sum(1, keepdim=True).tril_()  # (b, 1, n, Q, Q)
        W = dSm.mul_(Sm)  # dL ∘ L: the gradient reaching the exponent c_i - c_j of each L_ij
        dc = W.sum(-1) - W.sum(-2)  # (b, H, n, Q): the gradient of each c
        dC = dG @ Bc  # (b, 1, n, Q, N)
        dB = dG.transpose(-1, -2) @ Cc  # (b, 1, n, Q, N)
        if n > 1:
            dCcG = dY @ transposed(E)  # (b, H, n, Q, N): the gradient of C ∘ exp(c)
            dc += (dCcG * CcG).sum(-1)  # through exp(c)
            dC += (dCcG * Gam[..., None]).sum(1, keepdim=True)
            dE = CcG.transpose(-1, -2) @ dY  # (b, H, n, N, P): the gradient of each entering state, directly
            dS, dcarry = torch.zeros_like(dE), torch.zeros_like(carry)
            g = dE[:, :, n - 1].clone()  # the whole gradient of the state entering chunk k + 1, from the end
            for k in range(n - 2, -1, -1):
                dS[:, :, k] = g
                dcarry[:, :, k] = (g * E[:, :, k]).sum((-1, -2))
                g = torch.addcmul(dE[:, :, k], g, carry[:, :, k, None, None])
            dc[..., -1] += dcarry * carry
            dBcT_end = dS @ XT  # (b, H, n, N, Q): the gradient of Bᵀ ∘ exp(c_Q - c)
            dBT = (dBcT_end * to_end[..., None, :]).sum(1, keepdim=True)  # (b, 1, n, N, Q)
            dB += dBT.transpose(-1, -2)
            dX += BcT_end.transpose(-1, -2) @ dS
            dend = (dBcT_end * BcT_end).sum(-2)  # (b, H, n, Q): through exp(c_Q - c)
            dc[..., -1] += dend.sum(-1)
            dc -= dend
        da = dc.flip(-1).cumsum(-1).flip(-1)  # a_s enters every c_i with i >= s of its chunk
        da = da.permute(0, 2, 3, 1).reshape(b, n * Q, H)[:, :T]  # (b, T, H)
        dXt = dX.view(b, H, n * Q, P)[:, :, :T].transpose(1, 2)  # (b, T, H, P)
        dx = torch.mul(dXt, delta[..., None]).addcmul_(dout, D[:, None])
        ddelta = (dXt * x).sum(-1) + da * A  # (b, T, H)
        ddt = ddelta * torch.sigmoid(dt + dt_bias)
        dB, dC = dB.view(b, n * Q, N)[:, :T], dC.view(b, n * Q, N)[:, :T]
        return dx, ddt, (da * delta).sum((0, 1)), dB, dC, dD, ddt.sum((0, 1)), None


# The SSD recurrence in C (models/cpu.py builds it), for a CPU: Mamba-1's selective scan kernel
# (models/mamba.py) with one decay per head instead of one per channel and state, so each step takes H
# exponentials instead of E·N, and its inner loops are multiply-adds over a head's P channels. The forward
# runs H_t = a_t·H_{t-1} + Δ_t·x_t·B_tᵀ and y_t = H_t C_t + D·x_t per sequence, one step after another, with
# the (N, E) state in the L1 cache, keeping the state entering every ``chunk`` steps; the backward rebuilds
# a chunk's states from its checkpoint into a buffer that stays in the L2 cache and runs the adjoint
# recurrence back through it. Written once over REAL (float or double).
_SSD_BODY = r"""
/* x (B, L, E = H·P): the input; dl (B, L, H): Δ; Al (H): A·log2 e; Bm, Cm (B, L, N); D (H); y (B, L, E) out;
   ckpt (B, K, N, E) out: the state entering each chunk; work: N·E + E + H scratch. Sequences b0 .. b1 - 1. */
void ssd_fwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t H, int64_t P, int64_t N, int64_t chunk,
                  const REAL *restrict x, const REAL *restrict dl, const REAL *restrict Al,
                  const REAL *restrict Bm, const REAL *restrict Cm, const REAL *restrict D,
                  REAL *restrict y, REAL *restrict ckpt, REAL *restrict work) {
    const int64_t E = H * P, K = (L + chunk - 1) / chunk, NE = N * E;
    REAL *restrict h = work, *restrict u = work + NE, *restrict a = u + E;
    for (int64_t b = b0; b < b1; b++) {
        memset(h, 0, sizeof(REAL) * NE);
        for (int64_t t = 0; t < L; t++) {
            if (t % chunk == 0) memcpy(ckpt + (b * K + t / chunk) * NE, h, sizeof(REAL) * NE);
            const int64_t r = b * L + t;
            const REAL *xr = x + r * E, *dr = dl + r * H, *Br = Bm + r * N, *Cr = Cm + r * N;
            REAL *yr = y + r * E;
            for (int64_t j = 0; j < H; j++) {
                const REAL dj = dr[j], Dj = D[j];
                a[j] = exp2_REAL(dj * Al[j]);
#pragma omp simd
                for (int64_t p = j * P; p < (j + 1) * P; p++) {
                    yr[p] = Dj * xr[p];
                    u[p] = dj * xr[p];
                }
            }
            for (int64_t n = 0; n < N; n++) {
                const REAL bn = Br[n], cn = Cr[n];
                REAL *hn = h + n * E;
                for (int64_t j = 0; j < H; j++) {
                    const REAL aj = a[j];
#pragma omp simd
                    for (int64_t p = j * P; p < (j + 1) * P; p++) {
                        const REAL hv = aj * hn[p] + u[p] * bn;
                        hn[p] = hv;
                        yr[p] += cn * hv;
                    }
                }
            }
        }
    }
}

/* The gradients of <y, gy>: gx (B, L, E), gdl (B, L, H), gB, gC (B, L, N) written; gA (H) and gD (H) added to
   (this slice's partial sums). An (H): A; work: (chunk + 1)·N·E + chunk·(E + H) + 3·E + H scratch. */
void ssd_bwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t H, int64_t P, int64_t N, int64_t chunk,
                  const REAL *restrict x, const REAL *restrict dl, const REAL *restrict Al,
                  const REAL *restrict An, const REAL *restrict Bm, const REAL *restrict Cm,
                  const REAL *restrict D, const REAL *restrict ckpt, const REAL *restrict gy,
                  REAL *restrict gx, REAL *restrict gdl, REAL *restrict gB, REAL *restrict gC,
                  REAL *restrict gA, REAL *restrict gD, REAL *restrict work) {
    const int64_t E = H * P, K = (L + chunk - 1) / chunk, NE = N * E;
    REAL *restrict g = work, *restrict hb = g + NE, *restrict ub = hb + chunk * NE, *restrict ab = ub + chunk * E;
    REAL *restrict du = ab + chunk * H, *restrict gw = du + E, *restrict wl = gw + H, *restrict ae = wl + E;
    for (int64_t b = b0; b < b1; b++) {
        memset(g, 0, sizeof(REAL) * NE); /* dL/dH_t through H_{t+1}: a_{t+1}·g_{t+1} */
        for (int64_t k = K - 1; k >= 0; k--) {
            const int64_t s = k * chunk, c = L - s < chunk ? L - s : chunk;
            const REAL *h0 = ckpt + (b * K + k) * NE, *prev = h0;
            for (int64_t i = 0; i < c; i++) { /* the chunk's states, again, into hb */
                const int64_t r = b * L + s + i;
                const REAL *xr = x + r * E, *dr = dl + r * H, *Br = Bm + r * N;
                REAL *ui = ub + i * E, *ai = ab + i * H, *hi = hb + i * NE;
                for (int64_t j = 0; j < H; j++) {
                    const REAL dj = dr[j];
                    ai[j] = exp2_REAL(dj * Al[j]);
#pragma omp simd
                    for (int64_t p = j * P; p < (j + 1) * P; p++) ui[p] = dj * xr[p];
                }
                for (int64_t n = 0; n < N; n++) {
                    const REAL bn = Br[n], *pn = prev + n * E;
                    REAL *hn = hi + n * E;
                    for (int64_t j = 0; j < H; j++) {
                        const REAL aj = ai[j];
#pragma omp simd
                        for (int64_t p = j * P; p < (j + 1) * P; p++) hn[p] = aj * pn[p] + ui[p] * bn;
                    }
                }
                prev = hi;
            }
            for (int64_t i = c - 1; i >= 0; i--) {
                const int64_t r = b * L + s + i;
                const REAL *xr = x + r * E, *dr = dl + r * H, *Br = Bm + r * N, *Cr = Cm + r * N;
                const REAL *gyr = gy + r * E, *ui = ub + i * E, *ai = ab + i * H, *hi = hb + i * NE;
                const REAL *hp = i ? hb + (i - 1) * NE : h0;
                for (int64_t j = 0; j < H; j++) {
                    const REAL aj = ai[j];
#pragma omp simd
                    for (int64_t p = j * P; p < (j + 1) * P; p++) {
                        ae[p] = aj; /* the decay of each channel's head */
                        du[p] = 0;  /* dL/d(Δ_t x_t) */
                        wl[p] = 0;  /* per channel, summed over the states: dL/da_t · h_{t-1} */
                    }
                }
                for (int64_t n = 0; n < N; n++) { /* over all E channels at once: one sum each for gB, gC */
                    const REAL bn = Br[n], cn = Cr[n], *hn = hi + n * E, *hpn = hp + n * E;
                    REAL *gn = g + n * E, accC = 0, accB = 0;
#pragma omp simd reduction(+ : accC, accB)
                    for (int64_t p = 0; p < E; p++) {
                        const REAL gv = cn * gyr[p] + gn[p]; /* dL/dH_t */
                        wl[p] += gv * hpn[p];
                        accC += hn[p] * gyr[p];
                        accB += gv * ui[p];
                        du[p] += bn * gv;
                        gn[p] = gv * ae[p];
                    }
                    gC[r * N + n] = accC;
                    gB[r * N + n] = accB;
                }
                for (int64_t j = 0; j < H; j++) { /* dL/da_t · a_t = dL/d(Δ_t A), per head */
                    REAL w = 0;
#pragma omp simd reduction(+ : w)
                    for (int64_t p = j * P; p < (j + 1) * P; p++) w += wl[p];
                    gw[j] = w * ai[j];
                }
                REAL *gxr = gx + r * E, *gdr = gdl + r * H;
                for (int64_t j = 0; j < H; j++) {
                    const REAL dj = dr[j], Dj = D[j];
                    REAL sx = 0, sd = 0;
#pragma omp simd reduction(+ : sx, sd)
                    for (int64_t p = j * P; p < (j + 1) * P; p++) {
                        gxr[p] = du[p] * dj + gyr[p] * Dj;
                        sx += du[p] * xr[p];
                        sd += gyr[p] * xr[p];
                    }
                    gdr[j] = sx + gw[j] * An[j];
                    gA[j] += gw[j] * dj;
                    gD[j] += sd;
                }
            }
        }
    }
}
"""
SSD_SOURCE = cpu.instantiate(_SSD_BODY)


class _KernelSSD(torch.autograd.Function):
    """``SSD(x·Δ, A·Δ, B, C) + D·x`` by the C kernel (``SSD_SOURCE``): x (b, T, H, P), Δ (b, T, H) after the
    softplus, A, D (H,), B, C (b, T, N), all of one dtype (float32 or float64)."""

    @staticmethod
    def forward(ctx, x, delta, A, B, C, D, lib, chunk):
        real = cpu.DTYPES[x.dtype]
        b, T, H, P = x.shape
        N, E, K = B.shape[-1], H * P, -(-T // chunk)
        x, delta, B, C, D = (t.contiguous() for t in (x, delta, B, C, D))
        Al = (A * LOG2E).contiguous()
        y, states = torch.empty_like(x), x.new_empty(b, K, N, E)  # states: the one entering each chunk
        work = x.new_empty(cpu.slots(b), N * E + E + H)
        run = getattr(lib, f"ssd_fwd_{real}")
        cpu.parallel(
            b,
            lambda b0, b1, s: cpu.call(run, b0, b1, T, H, P, N, chunk, x, delta, Al, B, C, D, y, states, work[s]),
            lib,
        )
        ctx.lib, ctx.run, ctx.chunk = lib, getattr(lib, f"ssd_bwd_{real}"), chunk
        ctx.save_for_backward(x, delta, A, Al, B, C, D, states)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gy):
        x, delta, A, Al, B, C, D, states = ctx.saved_tensors
        b, T, H, P = x.shape
        N, E, n, chunk = B.shape[-1], H * P, cpu.slots(b), ctx.chunk
        gy, An = gy.contiguous(), A.contiguous()
        gx, gdl, gB, gC = torch.empty_like(x), torch.empty_like(delta), torch.empty_like(B), torch.empty_like(C)
        gA, gD = x.new_zeros(n, H), x.new_zeros(n, H)  # one partial sum per thread
        work = x.new_empty(n, (chunk + 1) * N * E + chunk * (E + H) + 3 * E + H)
        args = (x, delta, Al, An, B, C, D, states, gy, gx, gdl, gB, gC)
        cpu.parallel(
            b, lambda b0, b1, s: cpu.call(ctx.run, b0, b1, T, H, P, N, chunk, *args, gA[s], gD[s], work[s]), ctx.lib
        )
        return gx, gdl, gA.sum(0), gB, gC, gD.sum(0), None, None


def ssd(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    dt_bias: torch.Tensor,
    chunk: int = CHUNK,
    kernel: bool | None = None,
) -> torch.Tensor:
    """``y_t = H_t C_t + D·x_t`` with ``H_t = exp(Δ_t A)·H_{t-1} + Δ_t x_t B_tᵀ`` from ``H_0 = 0`` per head,
    ``Δ = softplus(dt + dt_bias)``: mamba_ssm's ``mamba_chunk_scan_combined(x, dt, A, B, C, chunk, D=D,
    dt_bias=dt_bias, dt_softplus=True)`` with one group. x (b, T, H, P), dt (b, T, H), A, D, dt_bias (H,),
    B, C (b, T, N) -> (b, T, H, P).

    ``kernel``: the C kernel (True; ``chunk`` is then its steps between checkpoints), the chunked PyTorch
    form ``_SSD`` (False; ``chunk`` positions per chunk), or the kernel wherever it builds and takes the
    dtype (None: float32 or float64 on a CPU, its checkpoints chosen from the shapes)."""
    lib = cpu.choose("mamba2_ssd", SSD_SOURCE, x, kernel)
    if lib is None:
        return _SSD.apply(x, dt, A, B, C, D, dt_bias, chunk)
    A, B, C, D, dt, dt_bias = (t.to(x.dtype) for t in (A, B, C, D, dt, dt_bias))
    delta = F.softplus(dt + dt_bias)  # (b, T, H)
    steps = chunk if kernel else cpu.checkpoint_steps(x.shape[2] * x.shape[3] * B.shape[-1])
    return _KernelSSD.apply(x, delta, A, B, C, D, lib, steps)


class _ShortConvSiLU(torch.autograd.Function):
    """``silu(bias + Σ_i w_i x_{t-k+1+i})`` per channel, in (B, T, C) layout: a causal depthwise convolution of
    k taps as k shifted multiply-adds forward and backward. oneDNN's depthwise ``conv1d`` wants (B, C, T),
    and with the transposes there and back (the projections are (B, T, C)) it took about 1.5 times as
    long on one CPU thread (k = 4, T 256-4096); its output also left every later (B, T, C) view strided."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        T, k = x.shape[1], weight.shape[-1]
        w = weight[:, 0]  # (C, k): tap i reads x_{t-k+1+i}
        pre = torch.mul(x, w[:, k - 1]) if bias is None else torch.addcmul(bias, x, w[:, k - 1])  # (B, T, C)
        for j in range(1, min(k, T)):
            pre[:, j:].addcmul_(x[:, : T - j], w[:, k - 1 - j])
        ctx.save_for_backward(x, weight, pre)
        ctx.has_bias = bias is not None
        return F.silu(pre)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gout):
        x, weight, pre = ctx.saved_tensors
        T, k = x.shape[1], weight.shape[-1]
        w = weight[:, 0]
        g = torch.ops.aten.silu_backward(gout, pre)  # (B, T, C): the gradient before the SiLU
        gw, tmp = torch.zeros_like(w), torch.empty_like(g)
        for j in range(min(k, T)):  # tap k-1-j reads x_{t-j}
            torch.sum(torch.mul(g[:, j:], x[:, : T - j], out=tmp[:, : T - j]), (0, 1), out=gw[:, k - 1 - j])
        gx = torch.mul(g, w[:, k - 1])
        for j in range(1, min(k, T)):
            gx[:, : T - j].addcmul_(g[:, j:], w[:, k - 1 - j])
        return gx, gw[:, None, :], g.sum((0, 1)) if ctx.has_bias else None


# The short causal convolution and its SiLU in C (models/cpu.py builds it), for a CPU: one pass over the
# sequence forward (k multiply-adds and the SiLU per position, vectorised over the channels) and one back (the
# SiLU's derivative, then each tap's share of the input's and the weight's gradients). The PyTorch form above
# makes a pass over the whole (B, T, C) tensor per tap and per step of the SiLU, each through main memory:
# at d_model 64, T 256, it was about a quarter of a Mamba-2 or Gated DeltaNet step on one thread.
_CONV_BODY = r"""
/* x (B, L, C); wT (k, C): tap i reads x_{t-k+1+i}; bias (C) when has_bias; pre, y (B, L, C) out: the
   convolution and its SiLU. Sequences b0 .. b1 - 1. */
void conv_fwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t C, int64_t k, int64_t has_bias,
                   const REAL *restrict x, const REAL *restrict wT, const REAL *restrict bias,
                   REAL *restrict pre, REAL *restrict y) {
    for (int64_t b = b0; b < b1; b++) {
        for (int64_t t = 0; t < L; t++) {
            REAL *pr = pre + (b * L + t) * C, *yr = y + (b * L + t) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) pr[c] = has_bias ? bias[c] : 0;
            for (int64_t i = 0; i < k; i++) {
                const int64_t s = t - k + 1 + i;
                if (s < 0) continue;
                const REAL *xr = x + (b * L + s) * C, *wi = wT + i * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) pr[c] += wi[c] * xr[c];
            }
#pragma omp simd
            for (int64_t c = 0; c < C; c++) {
                REAL z = -pr[c] * 1.4426950408889634;
                z = z > 126 ? 126 : z; /* exp2_float's range: the sigmoid is then 0 to float precision */
                yr[c] = pr[c] / (1 + exp2_REAL(z));
            }
        }
    }
}

/* The gradients of <y, gy>: gx (B, L, C) written; gwT (k, C) and gb (C) added to (this slice's partial sums);
   work: C scratch. */
void conv_bwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t C, int64_t k, const REAL *restrict x,
                   const REAL *restrict wT, const REAL *restrict pre, const REAL *restrict gy,
                   REAL *restrict gx, REAL *restrict gwT, REAL *restrict gb, REAL *restrict work) {
    REAL *restrict g = work;
    for (int64_t b = b0; b < b1; b++) {
        memset(gx + b * L * C, 0, sizeof(REAL) * L * C);
        for (int64_t t = 0; t < L; t++) {
            const REAL *pr = pre + (b * L + t) * C, *gr = gy + (b * L + t) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) {
                REAL z = -pr[c] * 1.4426950408889634;
                z = z > 126 ? 126 : z;
                const REAL s = 1 / (1 + exp2_REAL(z)); /* sigmoid(pre) */
                g[c] = gr[c] * s * (1 + pr[c] * (1 - s)); /* silu'(pre) = s (1 + pre (1 - s)) */
                gb[c] += g[c];
            }
            for (int64_t i = 0; i < k; i++) {
                const int64_t s = t - k + 1 + i;
                if (s < 0) continue;
                const REAL *xr = x + (b * L + s) * C, *wi = wT + i * C;
                REAL *gxr = gx + (b * L + s) * C, *gwi = gwT + i * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) {
                    gxr[c] += g[c] * wi[c];
                    gwi[c] += g[c] * xr[c];
                }
            }
        }
    }
}
"""
CONV_SOURCE = cpu.instantiate(_CONV_BODY)


class _KernelConvSiLU(torch.autograd.Function):
    """``short_conv_silu`` by the C kernel (``CONV_SOURCE``): x (B, T, C), weight (C, 1, k), bias (C,) or None,
    all of one dtype (float32 or float64)."""

    @staticmethod
    def forward(ctx, x, weight, bias, lib):
        real = cpu.DTYPES[x.dtype]
        B, T, C = x.shape
        k = weight.shape[-1]
        x = x.contiguous()
        wT = weight[:, 0].t().contiguous()  # (k, C)
        b = bias.contiguous() if bias is not None else wT  # not read without a bias
        pre, y = torch.empty_like(x), torch.empty_like(x)
        run = getattr(lib, f"conv_fwd_{real}")
        cpu.parallel(B, lambda b0, b1, s: cpu.call(run, b0, b1, T, C, k, int(bias is not None), x, wT, b, pre, y), lib)
        ctx.lib, ctx.run, ctx.has_bias = lib, getattr(lib, f"conv_bwd_{real}"), bias is not None
        ctx.save_for_backward(x, wT, pre)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gy):
        x, wT, pre = ctx.saved_tensors
        B, T, C = x.shape
        k, n = wT.shape[0], cpu.slots(B)
        gy = gy.contiguous()
        gx, gwT, gb, work = torch.empty_like(x), x.new_zeros(n, k, C), x.new_zeros(n, C), x.new_empty(n, C)
        cpu.parallel(
            B, lambda b0, b1, s: cpu.call(ctx.run, b0, b1, T, C, k, x, wT, pre, gy, gx, gwT[s], gb[s], work[s]), ctx.lib
        )
        return gx, gwT.sum(0).t()[:, None, :], gb.sum(0) if ctx.has_bias else None, None


def short_conv_silu(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, kernel: bool | None = None
) -> torch.Tensor:
    """``silu`` of the causal depthwise convolution of x (B, T, C) with an ``nn.Conv1d(C, C, k, groups=C)``'s
    weight (C, 1, k) and bias (C,) -> (B, T, C): position t sees t - k + 1 .. t. On a CPU, in float32 or
    float64, the C kernel (``_KernelConvSiLU``) where it builds; ``kernel=False`` the PyTorch form."""
    lib = cpu.choose("short_conv_silu", CONV_SOURCE, x, kernel)
    if lib is None:
        return _ShortConvSiLU.apply(x, weight, bias)
    weight = weight.to(x.dtype)
    return _KernelConvSiLU.apply(x, weight, bias.to(x.dtype) if bias is not None else None, lib)


class _GatedRMSNorm(torch.autograd.Function):
    """``rmsnorm(y · silu(z)) · w`` (``gate_first``, mamba_ssm's RMSNormGated with ``norm_before_gate=False``) or
    ``rmsnorm(y) · w · silu(z)`` (fla's FusedRMSNormGated), over the last dimension, with its own backward:
    autograd of the same steps made twice the passes over the (b, T, ·) tensors and took longer than the
    SSD's forward on one CPU thread."""

    @staticmethod
    def forward(ctx, y, z, weight, gate_first, eps):
        s = F.silu(z)
        u = y * s if gate_first else y
        r = torch.linalg.vector_norm(u, dim=-1, keepdim=True).square_().div_(u.shape[-1]).add_(eps).rsqrt_()  # 1/rms
        normed = u * r
        ctx.save_for_backward(y, z, s, normed, r, weight)
        ctx.gate_first = gate_first
        return normed * weight if gate_first else (normed * weight).mul_(s)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        y, z, s, normed, r, weight = ctx.saved_tensors
        d = y.shape[-1]
        if ctx.gate_first:
            dn = dout * weight  # the gradient of normed
            dw = (dout * normed).flatten(0, -2).sum(0)
        else:
            dns = dout * s  # the gradient of normed · w
            dw = (dns * normed).flatten(0, -2).sum(0)
            dz = torch.ops.aten.silu_backward(dout * normed * weight, z)
            dn = dns.mul_(weight)
        # normed = u · r with r = 1/rms(u): du = r · (dn - normed · mean(dn · normed))
        du = torch.addcmul(dn, normed, (dn * normed).sum(-1, keepdim=True).div_(-d)).mul_(r)
        if ctx.gate_first:
            dz = torch.ops.aten.silu_backward(du * y, z)
            du.mul_(s)
        return du, dz, dw, None, None


def gated_rms_norm(
    y: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, gate_first: bool, eps: float
) -> torch.Tensor:
    """``rmsnorm(y · silu(z)) · weight`` when ``gate_first`` (Mamba-2's), else ``rmsnorm(y) · weight · silu(z)``
    (Gated DeltaNet's), the norm over the last dimension."""
    return _GatedRMSNorm.apply(y, z, weight, gate_first, eps)


class GatedRMSNorm(nn.Module):
    """``rmsnorm(y · silu(z)) · weight`` over the whole inner width (mamba_ssm's RMSNormGated with
    ``norm_before_gate=False`` and one group)."""

    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return gated_rms_norm(y, z, self.weight, True, EPS)


@MIXERS.module("mamba2")
class Mamba2(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: a causal convolution and a scan forward in time,
    so causal at any value (``causal=False`` permits reading later positions, it does not require it)."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 2,
        n_heads: int = 2,
        d_conv: int = 4,
        *,
        causal: bool = True,
    ):
        super().__init__()
        d_inner = expand * d_model
        problem = inner_heads_problem(d_inner, n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        self.d_inner, self.d_state, self.n_heads, self.d_conv = d_inner, d_state, n_heads, d_conv
        self.in_proj = nn.Linear(d_model, 2 * d_inner + 2 * d_state + n_heads, bias=False)  # z, x, B, C, dt
        conv_dim = d_inner + 2 * d_state
        # depthwise over (x, B, C), causal: position t sees t - d_conv + 1 .. t (``short_conv_silu``)
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, d_conv, groups=conv_dim)
        dt = torch.exp(torch.rand(n_heads) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)).clamp(min=1e-4)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt at initialisation
        self.A_log = nn.Parameter(torch.log(torch.empty(n_heads).uniform_(1, 16)))  # A = -exp(A_log) per head
        self.D = nn.Parameter(torch.ones(n_heads))
        self.norm = GatedRMSNorm(d_inner)
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def ssm(self, x: torch.Tensor, dt: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
        """``ssd`` of x (b, T, H, P), dt (b, T, H) before the bias, B, C (b, T, N) -> (b, T, H, P); mamba_ssm's
        or fla's kernel on CUDA when one is installed (``cuda_ssd``)."""
        A = -torch.exp(self.A_log.float())  # (H,)
        kernel = cuda_ssd() if x.is_cuda else None
        if kernel is not None:
            return kernel(x, dt, A, B, C, self.D, self.dt_bias)
        return ssd(x, dt, A, B, C, self.D, self.dt_bias)

    def forward(self, u: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """u (b, T, d_model) -> (b, T, d_model). ``valid`` is not read: padding comes after the real positions,
        and a causal mixer never carries it back to them."""
        b, T, _ = u.shape
        di, N, H = self.d_inner, self.d_state, self.n_heads
        z, xBC, dt = self.in_proj(u).split([di, di + 2 * N, H], dim=-1)  # (b, T, E·d), (b, T, E·d + 2N), (b, T, H)
        xBC = short_conv_silu(xBC, self.conv1d.weight, self.conv1d.bias)  # (b, T, E·d + 2N)
        x, B, C = xBC.split([di, N, N], dim=-1)  # (b, T, E·d), (b, T, N), (b, T, N)
        y = self.ssm(x.reshape(b, T, H, di // H), dt, B, C)  # (b, T, H, P)
        return self.out_proj(self.norm(y.reshape(b, T, di), z))  # (b, T, d_model)
