"""Mamba (Gu & Dao 2023, Sec. 3.2, Algorithm 2): the module (torch). Its config, which imports no
torch, is in ``models/configs/mamba.py``.

The block is ``mambapy.mamba.MambaBlock`` of the pinned PyPI package ``mambapy`` 1.2.0 (MIT): its
parameters (``in_proj``, ``conv1d``, ``x_proj``, ``dt_proj``, ``A_log``, ``D``, ``out_proj``: the same
state_dict keys as before, so checkpoints load), its initialisation and its projections. Only the
block is used, without mambapy's RMSNorm and residual (the stack provides those). Which selective
scan runs depends on where the input is:

- CUDA (any device but the CPU): mambapy's own forward, unchanged. With ``mamba_ssm`` importable,
  mamba_ssm's fused kernel (``selective_scan_fn``, which also fuses softplus(Δ + bias) and the
  ``y · silu(z)`` gate) through mambapy's ``use_cuda`` path, switched on per call, so the same
  parameters run either way; without it, mambapy's parallel scan.
- CPU: ``selective_scan`` below, with its own backward, fusing the same softplus and gate as
  mamba_ssm's kernel. mambapy's scan there is a Blelloch parallel scan (``pscan``) over (B, T, E·d, N)
  tensors: dozens of passes over them, forward and backward, and a log2(T) depth that buys nothing on
  CPU threads. Both forms here run the exact recurrence ``h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t``,
  ``y_t = C_t · h_t + D x_t`` one step at a time (no division by a cumulated decay, so nothing underflows
  or overflows), keep only the state entering every chunk of steps, and in the backward recompute a
  chunk's states from it (as mamba_ssm's kernel does) and run the adjoint recurrence ``g_t = C_t dy_t +
  exp(Δ_{t+1} A) g_{t+1}`` back through them. Memory: O(B·T·E·d) plus O(T/chunk · B·N·E·d), never a
  (B, T, E·d, N) tensor.

  * ``_KernelScan``, wherever a C compiler is found (``models/cpu.py`` builds ``SCAN_SOURCE`` once per
    machine): a loop over time per sequence with the (N, E·d) state in the L1 cache and the E·d channels
    in vector lanes, so every input is read once per pass; the backward's chunk of recomputed states
    (``kernel_chunk`` steps, about 512 KiB) stays in the L2 cache. Softplus and gate stay PyTorch ops.
  * ``_ChunkedScan``, where the kernel cannot build (or ``SEQBENCH_CPU_KERNELS=0``): the same recurrence
    in PyTorch, time cut into chunks of ``chunk`` steps (8-64, about 2 MiB per (chunk, B, N, E·d) buffer):
    ``exp(Δ·A)`` and ``Δ·B·x`` for the chunk, then one in-place multiply-add over the (B, N, E·d) state
    per step, then ``y_t = C_t · h_t`` as one batched product per chunk; 3-4x slower than the kernel.

  A long batch runs in pieces (``cpu.batch_pieces``) so that no (B, T, 2·E·d) tensor is fresh memory from the
  kernel at every step. The depthwise convolution keeps its ``F.conv1d`` forward but gets a backward of
  shifted multiply-adds (``_CausalConv``: oneDNN's took longer than the scan at small T). One thread, d_model
  64, batch 8, forward + backward, as a ratio to causal attention in the same run
  (``benchmarks/mixer_speed.py``, Nov 27 2026, a shared 2-core CPU at load 3.2-3.5): 1.5x at T = 256, 0.86x at
  1024, 0.27x at 4096, step time ~T^0.96 over 512-8192; the chunked PyTorch form 5.3x, 2.7x, 1.2x. No
  maintained package has a CPU selective scan (mamba-ssm is CUDA-only; mambapy, minimamba and assoc-scan scan
  whole (B, T, E·d, N) tensors in PyTorch), hence these.
- ``block.config.pscan = False``, anywhere: mambapy's step-by-step loop, the reference that
  tests/models/test_mamba_scan.py compares both CPU forms with, beside mambapy's pscan (outputs and every
  gradient, at odd lengths and across chunk boundaries), and the two forms with each other.
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading

import torch
import torch.nn.functional as F
from mambapy.mamba import MambaBlock
from mambapy.mamba import MambaConfig as MambaPyConfig
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models.configs.mamba import MambaConfig  # noqa: F401  (the config, re-exported beside its module)

_LOG2E = math.log2(math.e)  # exp(v) = exp2(v·log2 e): torch's exp2 is several times faster than exp on CPU
_CHUNK_ELEMENTS = 1 << 19  # aim for (chunk, B, N, E·d) buffers of about 2 MiB in float32


_scratch = threading.local()


def _buffers(like: torch.Tensor, *shapes: tuple[int, ...]) -> list[torch.Tensor]:
    """Scratch tensors of ``shapes``, carved from one flat buffer kept per thread, dtype and device and
    reused from call to call: a fresh multi-MiB tensor costs its page faults at every first write, which on
    a CPU took longer than the arithmetic done in it. Only the chunk loops below use them, within one
    call; nothing saved for the backward or returned lives in them."""
    sizes = [math.prod(s) for s in shapes]
    key = (like.dtype, like.device)
    pool = getattr(_scratch, "pool", None)
    if pool is None:
        pool = _scratch.pool = {}
    flat = pool.get(key)
    if flat is None or flat.numel() < sum(sizes):
        flat = pool[key] = like.new_empty(sum(sizes))
    out, at = [], 0
    for shape, size in zip(shapes, sizes):
        out.append(flat[at : at + size].view(shape))
        at += size
    return out


@functools.cache
def cuda_selective_scan():
    """mamba_ssm's fused selective scan, or None where mamba_ssm (CUDA only) is not installed or loads no kernels."""
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except (ImportError, OSError, RuntimeError):  # not installed, or built against another CUDA/torch
        return None
    return selective_scan_fn


def default_chunk(batch: int, d_inner: int, d_state: int) -> int:
    """Steps per chunk: about 2 MiB of float32 per (chunk, B, N, E·d) buffer, between 8 and 64 steps."""
    return max(8, min(64, _CHUNK_ELEMENTS // max(1, batch * d_inner * d_state)))


def _chunk_states(dl, du, Bt, At, state, dA, h):
    """One chunk's states, in place: ``dA = exp(Δ·A)``, ``h_t = dA_t·h_{t-1} + Δ_t·x_t·B_t`` from ``state``.
    dl, du: (c, B, E) time-major Δ and Δ·x; Bt: (c, B, N); At: (N, E) = Aᵀ·log2 e; dA, h: (c, B, N, E) buffers."""
    torch.mul(dl[:, :, None, :], At, out=dA).exp2_()
    torch.mul(du[:, :, None, :], Bt[:, :, :, None], out=h)
    hs, dAs = h.unbind(0), dA.unbind(0)
    hs[0].addcmul_(dAs[0], state)
    for i in range(1, len(hs)):
        hs[i].addcmul_(dAs[i], hs[i - 1])


def _chunk_output(Ct, h, xt, D, y):
    """``y_t = C_t · h_t + D·x_t`` into ``y`` (c, B, 1, E), returned as (c, B, E): Ct (c, B, N), h (c, B, N, E)."""
    torch.matmul(Ct[:, :, None, :], h, out=y)  # (1, N) @ (N, E) per step and sequence
    return y.view(xt.shape).addcmul_(xt, D)


class _CausalConv(torch.autograd.Function):
    """mambapy's causal depthwise convolution in (B, T, E) layout: forward by the same ``F.conv1d`` (the
    same numbers, and the same products for FlopCounterMode), backward by k shifted multiply-adds, since
    oneDNN's depthwise backward took longer on a CPU than the whole scan at small T."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        T, k = x.shape[1], weight.shape[-1]
        y = F.conv1d(x.transpose(1, 2), weight, bias, padding=k - 1, groups=weight.shape[0])[:, :, :T]
        ctx.save_for_backward(x, weight)
        return y.transpose(1, 2).contiguous()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gy):
        x, weight = ctx.saved_tensors
        T, k = x.shape[1], weight.shape[-1]
        w = weight[:, 0]  # (E, k): y_t = bias + sum_i w_i x_{t-k+1+i}
        gw, gx = torch.empty_like(w), torch.empty_like(gy)
        for j in range(k):  # tap i = k-1-j reads x_{t-j}; gx serves as scratch first
            if j < T:
                torch.sum(torch.mul(gy[:, j:], x[:, : T - j], out=gx[:, : T - j]), (0, 1), out=gw[:, k - 1 - j])
            else:
                gw[:, k - 1 - j] = 0
        torch.mul(gy, w[:, k - 1], out=gx)
        for j in range(1, min(k, T)):
            gx[:, : T - j].addcmul_(gy[:, j:], w[:, k - 1 - j])
        return gx, gw[:, None, :], gy.sum((0, 1)) if ctx.needs_input_grad[2] else None


class _ChunkedScan(torch.autograd.Function):
    """``y = (selective_scan(x, softplus(δ + bias), A, B, C) + D·x) · silu(z)``, chunked over time.
    Time-major inside (a step's slice of every buffer is contiguous); what only one chunk needs (Δ·x,
    the states, their gradients, dy) is made per chunk in scratch buffers, so that few (B, T, E·d)
    tensors are allocated: each costs its page faults, which grew faster than T beyond 32 MiB."""

    @staticmethod
    def forward(ctx, x, delta, A, B, C, D, z, delta_bias, chunk):
        Bsz, T, E = x.shape
        N, K, c0 = A.shape[1], -(-T // chunk), min(chunk, T)
        dl = torch.add(delta.transpose(0, 1), delta_bias, out=x.new_empty(T, Bsz, E))
        torch.ops.aten.softplus.out(dl, 1, 20, out=dl)  # Δ = softplus(δ + bias), as F.softplus, in place
        xt, Bt, Ct = x.transpose(0, 1), B.transpose(0, 1).contiguous(), C.transpose(0, 1).contiguous()
        At = (A * _LOG2E).t().contiguous()
        dA, h, du, y = _buffers(x, (c0, Bsz, N, E), (c0, Bsz, N, E), (c0, Bsz, E), (c0, Bsz, 1, E))
        states = x.new_empty(K, Bsz, N, E)  # the state entering each chunk
        states[0].zero_()
        out = torch.ops.aten.silu.out(z, out=x.new_empty(Bsz, T, E))  # the gate, times y chunk by chunk
        outt = out.transpose(0, 1)
        for k in range(K):
            s, e = k * chunk, min((k + 1) * chunk, T)
            c = e - s
            torch.mul(dl[s:e], xt[s:e], out=du[:c])
            _chunk_states(dl[s:e], du[:c], Bt[s:e], At, states[k], dA[:c], h[:c])
            outt[s:e].mul_(_chunk_output(Ct[s:e], h[:c], xt[s:e], D, y[:c]))
            if k + 1 < K:
                states[k + 1].copy_(h[c - 1])
        ctx.chunk = chunk
        ctx.save_for_backward(x, z, dl, Bt, Ct, At, A, D, states)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gout):
        x, z, dl, Bt, Ct, At, A, D, states = ctx.saved_tensors
        chunk = ctx.chunk
        T, Bsz, E = dl.shape
        N, K, c0 = At.shape[0], states.shape[0], min(chunk, T)
        xt, zt, goutt = x.transpose(0, 1), z.transpose(0, 1), gout.transpose(0, 1)
        Au = A.t().contiguous()
        # the gradients in the inputs' (B, T, ·) layout, written through time-major views: layers below copy less
        gx, gu, gz = (x.new_empty(Bsz, T, E) for _ in range(3))  # dx, dδ (before the softplus), dz
        gB, gC = x.new_empty(Bsz, T, N), x.new_empty(Bsz, T, N)
        gxt, gut, gzt, gBt, gCt = (g.transpose(0, 1) for g in (gx, gu, gz, gB, gC))
        gAt, gD = x.new_zeros(1, N * E), x.new_zeros(1, E)
        dA, h, G, W, du, gy, gdu, gdl, tmp, y = _buffers(
            x, *[(c0, Bsz, N, E)] * 4, *[(c0, Bsz, E)] * 2, (c0, Bsz, 1, E), *[(c0, Bsz, E)] * 2, (c0, Bsz, 1, E)
        )
        carry = x.new_zeros(Bsz, N, E)  # the gradient reaching the last state of the chunk before
        ones = x.new_ones(1, c0 * Bsz)
        for k in range(K - 1, -1, -1):
            s, e = k * chunk, min((k + 1) * chunk, T)
            c = e - s
            dAk, hk, Gk, Wk, duk, gyk, gduk, gdlk, tmpk = (b[:c] for b in (dA, h, G, W, du, gy, gdu, gdl, tmp))
            torch.mul(dl[s:e], xt[s:e], out=duk)
            _chunk_states(dl[s:e], duk, Bt[s:e], At, states[k], dAk, hk)
            # the gate, out = y · silu(z), with y recomputed
            torch.mul(goutt[s:e], _chunk_output(Ct[s:e], hk, xt[s:e], D, y[:c]), out=gzt[s:e])
            torch.ops.aten.silu_backward.grad_input(gzt[s:e], zt[s:e], grad_input=gzt[s:e])
            torch.ops.aten.silu.out(zt[s:e], out=gyk).mul_(goutt[s:e])  # dy, before the gate
            # g_t = dL/dh_t = C_t·dy_t + dA_{t+1}·g_{t+1}
            torch.mul(gyk[:, :, None, :], Ct[s:e, :, :, None], out=Gk)
            Gs, dAs = Gk.unbind(0), dAk.unbind(0)
            Gs[-1].add_(carry)
            for i in range(c - 2, -1, -1):
                Gs[i].addcmul_(dAs[i + 1], Gs[i + 1])
            torch.sum(torch.mul(hk, gyk[:, :, None, :], out=Wk), -1, out=gCt[s:e])  # dC_t = h_t · dy_t
            torch.matmul(Bt[s:e, :, None, :], Gk, out=gduk)  # d(Δx)_t = B_t · g_t
            torch.sum(torch.mul(Gk, duk[:, :, None, :], out=Wk), -1, out=gBt[s:e])  # dB_t = g_t · Δ_t x_t
            # W_t = g_t · dA_t · h_{t-1} = dL/d(Δ_t A) elementwise
            torch.mul(Gs[0], dAs[0], out=carry)
            torch.mul(carry, states[k], out=Wk[0])
            if c > 1:
                torch.mul(Gk[1:], dAk[1:], out=Wk[1:]).mul_(hk[:-1])
            gAt.addmm_(ones[:, : c * Bsz], torch.mul(Wk, dl[s:e, :, None, :], out=Gk).view(c * Bsz, N * E))
            torch.sum(torch.mul(Wk, Au, out=Gk), -2, out=gdlk)  # dΔ_t through exp(Δ_t A)
            gduk = gduk.view(c, Bsz, E)
            torch.mul(gduk, dl[s:e], out=gxt[s:e]).addcmul_(gyk, D)
            gD.addmm_(ones[:, : c * Bsz], torch.mul(gyk, xt[s:e], out=tmpk).view(c * Bsz, E))
            torch.mul(gduk, xt[s:e], out=gut[s:e]).add_(gdlk)  # dΔ_t through Δ_t·x_t and exp(Δ_t A)
            # through the softplus: sigmoid(δ + bias) = 1 - exp(-Δ)
            gut[s:e].mul_(torch.neg(dl[s:e], out=tmpk).expm1_().neg_())
        return gx, gu, gAt.view(N, E).t(), gB, gC, gD.view(E), gz, gu.sum((0, 1)), None


# The selective scan in C (models/cpu.py builds it): the forward runs h_t = exp(Δ_t A)·h_{t-1} +
# Δ_t·x_t·B_t and y_t = C_t·h_t + D·x_t per sequence, one time step after another, with the (N, E) state in
# the L1 cache and the E channels in vector lanes, keeping the state entering every ``chunk`` steps; the
# backward rebuilds a chunk's states from its checkpoint into a buffer that stays in the L2 cache and runs
# the adjoint recurrence back through it (the same recurrences, in the same order, as ``_ChunkedScan``).
# Written once over REAL (float or double).
_SCAN_BODY = r"""
/* x, dl (B, L, E): the input and Δ; At (N, E): Aᵀ·log2 e; Bm, Cm (B, L, N); D (E); y (B, L, E) out;
   ckpt (B, K, N, E) out: the state entering each chunk; work: N·E + E scratch. Sequences b0 .. b1 - 1. */
void scan_fwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t E, int64_t N, int64_t chunk,
                   const REAL *restrict x, const REAL *restrict dl, const REAL *restrict At,
                   const REAL *restrict Bm, const REAL *restrict Cm, const REAL *restrict D,
                   REAL *restrict y, REAL *restrict ckpt, REAL *restrict work) {
    const int64_t K = (L + chunk - 1) / chunk, NE = N * E;
    REAL *restrict h = work, *restrict u = work + NE;
    for (int64_t b = b0; b < b1; b++) {
        memset(h, 0, sizeof(REAL) * NE);
        for (int64_t t = 0; t < L; t++) {
            if (t % chunk == 0) memcpy(ckpt + (b * K + t / chunk) * NE, h, sizeof(REAL) * NE);
            const int64_t r = b * L + t;
            const REAL *xr = x + r * E, *dr = dl + r * E, *Br = Bm + r * N, *Cr = Cm + r * N;
            REAL *yr = y + r * E;
#pragma omp simd
            for (int64_t e = 0; e < E; e++) {
                yr[e] = D[e] * xr[e];
                u[e] = dr[e] * xr[e];
            }
            for (int64_t n = 0; n < N; n++) {
                const REAL bn = Br[n], cn = Cr[n], *an = At + n * E;
                REAL *hn = h + n * E;
#pragma omp simd
                for (int64_t e = 0; e < E; e++) {
                    const REAL hv = exp2_REAL(dr[e] * an[e]) * hn[e] + u[e] * bn;
                    hn[e] = hv;
                    yr[e] += cn * hv;
                }
            }
        }
    }
}

/* The gradients of <y, gy>: gx, gdl (B, L, E), gB, gC (B, L, N) written; gA (N, E) and gD (E) added to
   (this slice's partial sums). An (N, E): Aᵀ; work: (chunk + 1)·N·E + (chunk + 2)·E scratch. */
void scan_bwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t E, int64_t N, int64_t chunk,
                   const REAL *restrict x, const REAL *restrict dl, const REAL *restrict At,
                   const REAL *restrict An, const REAL *restrict Bm, const REAL *restrict Cm,
                   const REAL *restrict D, const REAL *restrict ckpt, const REAL *restrict gy,
                   REAL *restrict gx, REAL *restrict gdl, REAL *restrict gB, REAL *restrict gC,
                   REAL *restrict gA, REAL *restrict gD, REAL *restrict work) {
    const int64_t K = (L + chunk - 1) / chunk, NE = N * E;
    REAL *restrict g = work, *restrict hb = g + NE, *restrict ub = hb + chunk * NE;
    REAL *restrict du = ub + chunk * E, *restrict gdv = du + E;
    for (int64_t b = b0; b < b1; b++) {
        memset(g, 0, sizeof(REAL) * NE); /* dL/dh_t through h_{t+1}: exp(Δ_{t+1} A)·g_{t+1} */
        for (int64_t k = K - 1; k >= 0; k--) {
            const int64_t s = k * chunk, c = L - s < chunk ? L - s : chunk;
            const REAL *h0 = ckpt + (b * K + k) * NE, *prev = h0;
            for (int64_t i = 0; i < c; i++) { /* the chunk's states, again, into hb */
                const int64_t r = b * L + s + i;
                const REAL *xr = x + r * E, *dr = dl + r * E, *Br = Bm + r * N;
                REAL *ui = ub + i * E, *hi = hb + i * NE;
#pragma omp simd
                for (int64_t e = 0; e < E; e++) ui[e] = dr[e] * xr[e];
                for (int64_t n = 0; n < N; n++) {
                    const REAL bn = Br[n], *an = At + n * E, *pn = prev + n * E;
                    REAL *hn = hi + n * E;
#pragma omp simd
                    for (int64_t e = 0; e < E; e++) hn[e] = exp2_REAL(dr[e] * an[e]) * pn[e] + ui[e] * bn;
                }
                prev = hi;
            }
            for (int64_t i = c - 1; i >= 0; i--) {
                const int64_t r = b * L + s + i;
                const REAL *xr = x + r * E, *dr = dl + r * E, *Br = Bm + r * N, *Cr = Cm + r * N;
                const REAL *gyr = gy + r * E, *ui = ub + i * E, *hi = hb + i * NE;
                const REAL *hp = i ? hb + (i - 1) * NE : h0;
#pragma omp simd
                for (int64_t e = 0; e < E; e++) {
                    du[e] = 0; /* dL/d(Δ_t x_t) */
                    gdv[e] = 0; /* dL/dΔ_t through exp(Δ_t A) */
                }
                for (int64_t n = 0; n < N; n++) {
                    const REAL bn = Br[n], cn = Cr[n], *an = At + n * E, *av = An + n * E;
                    const REAL *hn = hi + n * E, *hpn = hp + n * E;
                    REAL *gn = g + n * E, *gAn = gA + n * E, accC = 0, accB = 0;
#pragma omp simd reduction(+ : accC, accB)
                    for (int64_t e = 0; e < E; e++) {
                        const REAL gv = cn * gyr[e] + gn[e]; /* dL/dh_t */
                        const REAL da = exp2_REAL(dr[e] * an[e]);
                        const REAL w = gv * da * hpn[e]; /* dL/d(Δ_t A) */
                        accC += hn[e] * gyr[e];
                        accB += gv * ui[e];
                        du[e] += bn * gv;
                        gAn[e] += w * dr[e];
                        gdv[e] += w * av[e];
                        gn[e] = gv * da;
                    }
                    gC[r * N + n] = accC;
                    gB[r * N + n] = accB;
                }
                REAL *gxr = gx + r * E, *gdr = gdl + r * E;
#pragma omp simd
                for (int64_t e = 0; e < E; e++) {
                    gxr[e] = du[e] * dr[e] + gyr[e] * D[e];
                    gdr[e] = du[e] * xr[e] + gdv[e];
                    gD[e] += gyr[e] * xr[e];
                }
            }
        }
    }
}
"""
SCAN_SOURCE = cpu.instantiate(_SCAN_BODY)
_KERNEL_DTYPES = cpu.DTYPES


def _scan_library() -> ctypes.CDLL | None:
    return cpu.load("mamba_scan", SCAN_SOURCE)


def kernel_chunk(d_inner: int, d_state: int) -> int:
    """Steps between the kernel's checkpoints: its backward's buffer of one chunk's states within about
    512 KiB (float32), between 1 and 64 steps."""
    return cpu.checkpoint_steps(d_inner * d_state)


class _KernelScan(torch.autograd.Function):
    """``y = selective_scan(x, Δ, A, B, C) + D·x`` by the C kernel (``SCAN_SOURCE``): x, Δ (B, T, E) with
    Δ after the softplus, A (E, N), B, C (B, T, N), D (E,), all of one dtype (float32 or float64)."""

    @staticmethod
    def forward(ctx, x, dl, A, B, C, D, lib, chunk):
        real = _KERNEL_DTYPES[x.dtype]
        Bsz, T, E = x.shape
        N, K = A.shape[1], -(-T // chunk)
        x, dl, B, C, D = (t.contiguous() for t in (x, dl, B, C, D))
        At = (A * _LOG2E).t().contiguous()  # (N, E)
        y, states = x.new_empty(Bsz, T, E), x.new_empty(Bsz, K, N, E)  # states: the one entering each chunk
        work = x.new_empty(cpu.slots(Bsz), N * E + E)
        run = getattr(lib, f"scan_fwd_{real}")
        cpu.parallel(
            Bsz, lambda b0, b1, s: cpu.call(run, b0, b1, T, E, N, chunk, x, dl, At, B, C, D, y, states, work[s]), lib
        )
        ctx.lib, ctx.run, ctx.chunk = lib, getattr(lib, f"scan_bwd_{real}"), chunk
        ctx.save_for_backward(x, dl, A, At, B, C, D, states)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gy):
        x, dl, A, At, B, C, D, states = ctx.saved_tensors
        Bsz, T, E = x.shape
        N, n, chunk = A.shape[1], cpu.slots(Bsz), ctx.chunk
        gy, An = gy.contiguous(), A.t().contiguous()  # An: (N, E)
        gx, gdl, gB, gC = torch.empty_like(x), torch.empty_like(x), torch.empty_like(B), torch.empty_like(C)
        gA, gD = x.new_zeros(n, N, E), x.new_zeros(n, E)  # one partial sum per thread
        work = x.new_empty(n, (chunk + 1) * N * E + (chunk + 2) * E)
        args = (x, dl, At, An, B, C, D, states, gy, gx, gdl, gB, gC)
        cpu.parallel(
            Bsz, lambda b0, b1, s: cpu.call(ctx.run, b0, b1, T, E, N, chunk, *args, gA[s], gD[s], work[s]), ctx.lib
        )
        return gx, gdl, gA.sum(0).t(), gB, gC, gD.sum(0), None, None


def selective_scan(
    x: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    z: torch.Tensor,
    delta_bias: torch.Tensor,
    chunk: int | None = None,
    kernel: bool | None = None,
) -> torch.Tensor:
    """``(SSM(x) + D·x) · silu(z)`` with ``Δ = softplus(delta + delta_bias)``: mamba_ssm's
    ``selective_scan_fn(x, delta, A, B, C, D, z, delta_bias, delta_softplus=True)`` in (B, T, ·)
    layout. x, delta, z: (B, T, E); A: (E, N); B, C: (B, T, N); D, delta_bias: (E,).

    ``kernel``: the C kernel (True), the PyTorch form ``_ChunkedScan`` (False), or the kernel wherever it
    builds and takes the dtype (None: float32 or float64 on a CPU). ``chunk``: the kernel's steps between
    checkpoints, or the PyTorch form's steps per chunk; None: chosen from the shapes."""
    E, N = A.shape
    lib = cpu.choose("mamba_scan", SCAN_SOURCE, x, kernel)
    if lib is not None:
        A, B, C, D, delta, delta_bias = (t.to(x.dtype) for t in (A, B, C, D, delta, delta_bias))
        dl = F.softplus(delta + delta_bias)  # (B, T, E): Δ, as mambapy
        return _KernelScan.apply(x, dl, A, B, C, D, lib, chunk or kernel_chunk(E, N)) * F.silu(z)
    return _ChunkedScan.apply(x, delta, A, B, C, D, z, delta_bias, chunk or default_chunk(x.shape[0], E, N))


class _Block(MambaBlock):
    """mambapy's block; on a CPU, its forward with the chunked scan and convolution backward (module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, T, d_model)
        if x.device.type != "cpu" or not self.config.pscan:  # mambapy's own: CUDA (kernel or pscan), or its loop
            return super().forward(x)
        x, z = self.in_proj(x).chunk(2, dim=-1)  # (B, L, ED) each
        x = F.silu(_CausalConv.apply(x, self.conv1d.weight, self.conv1d.bias))  # (B, L, ED), contiguous
        delta, B, C = torch.split(self.x_proj(x), [self.config.dt_rank, self.config.d_state, self.config.d_state], -1)
        delta, B, C = self._apply_layernorms(delta, B, C)
        delta = F.linear(delta, self.dt_proj.weight)  # (B, L, ED); its bias is added inside, before the softplus
        A = -torch.exp(self.A_log.float())
        y = selective_scan(x, delta, A, B, C, self.D.float(), z, self.dt_proj.bias.float())
        return self.out_proj(y)


@MIXERS.module("mamba")
class Mamba(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: a causal convolution and a scan forward in time,
    so causal at any value (``causal=False`` permits reading later positions, it does not require it)."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 2,
        d_conv: int = 4,
        dt_rank: int | str = "auto",
        *,
        causal: bool = True,
    ):
        super().__init__()
        # use_cuda=False at build: mambapy would print and fall back without mamba_ssm; forward decides per call
        self.block = _Block(
            MambaPyConfig(
                d_model=d_model,
                n_layers=1,
                d_state=d_state,
                expand_factor=expand,
                d_conv=d_conv,
                dt_rank=dt_rank,
                use_cuda=False,
            )
        )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d_model) -> (B, T, d_model). ``valid`` is not read: padding comes after the real positions,
        and a causal mixer never carries it back to them."""
        scan = cuda_selective_scan() if x.is_cuda else None
        self.block.config.use_cuda = scan is not None  # read by MambaBlock.forward and .ssm at every call
        if scan is not None:
            self.block.selective_scan_cuda = scan
        # on a CPU, pieces of the batch whose (B, T, 2·E·d) tensors stay small (models/cpu.py)
        ys = [self.block(p) for p in cpu.batch_pieces(x, 2 * self.block.config.d_inner)]
        return ys[0] if len(ys) == 1 else torch.cat(ys)
