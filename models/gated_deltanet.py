"""Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025, Sec. 3; negative eigenvalues: Grazzi et al. 2025):
the module (torch). Its config, which imports no torch, is in ``models/configs/gated_deltanet.py``
(the rule and the layer are described there).

The layer follows flash-linear-attention's ``fla/layers/gated_deltanet.py`` (MIT): the same
projections (``q_proj``, ``k_proj``, ``v_proj``, ``a_proj``, ``b_proj``, ``g_proj``, ``o_proj``, no
biases), short convolutions with SiLU (``q_conv1d``, ``k_conv1d``, ``v_conv1d``), the decay
``-exp(A_log)·softplus(a + dt_bias)`` with A uniform in [0, 16] and Δ log-uniform in [0.001, 0.1],
L2-normalised q and k, β = sigmoid(b) (times 2 with ``allow_neg_eigval``), the output
``rmsnorm(o)·w·silu(g)`` with one norm weight over a head's values (``o_norm``). Which kernel runs
the rule depends on where the input is:

- CUDA with flash-linear-attention importable: its Triton kernel ``chunk_gated_delta_rule``, given
  the same normalised q and k, log-decays and β, so the same parameters run either way.
- On a CPU: ``_KernelRule``, a C kernel (``RULE_SOURCE``, built by ``models/cpu.py``) that runs the rule one
  step after another with each head's K x V state in the cache: at d_model 64 the chunked form below spent
  its time in the fixed cost of its per-chunk products and solve (2.7x causal attention's step at T = 256 on
  one thread, against 1.3-2.1x in four runs with the kernels, benchmarks/mixers.py).
- Anywhere else, and on a CPU without a C compiler (or with ``SEQBENCH_CPU_KERNELS=0``): the chunked
  ``_GatedDelta`` below (``gated_delta_chunked(..., kernel=False)``), in plain PyTorch after fla's naive
  chunked reference
  (``fla/ops/gated_delta_rule/naive.py``, ``naive_chunk_gated_delta_rule``). flash-linear-attention
  0.6.0 does not run on a CPU: every ``fla.ops`` module (the naive references included) imports
  Triton, whose kernels then find no CPU driver ("0 active drivers"), and its layers also need
  ``transformers``; its naive references also compute in float32 only and invert the triangular
  matrix by a Python loop over the chunk's rows. Here, per chunk of Q positions, the WY form: one
  triangular solve ``(I + M) [U | W] = [β v | β Γ k]`` with ``M_ij = β_i (k_i·k_j) L_ij`` for j < i
  (``torch.linalg.solve_triangular``), the outputs inside the chunk ``(q kᵀ ∘ L) U``, and across
  chunks the state carried by one (K x K) @ (K x V) product per chunk: the chunk's transition
  ``γ I - K̃ᵀ W`` (the product of its α (I - β k kᵀ)) applied to the state, plus ``K̃ᵀ U``. Every
  decay is a power of a difference of cumulative log-decays within one chunk, in (0, 1]. The forward
  and backward are written out (``_GatedDelta``), as are the L2 normalisation, the short convolution
  and the gated norm: autograd of the same steps made twice the passes over memory.

tests/models/test_mixers_2024.py checks both forms against the step-by-step rule at odd lengths and chunk sizes,
with and without negative eigenvalues, and, on a GPU with flash-linear-attention, against the kernel.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu
from seqbench.models.configs.gated_deltanet import CHUNK, GatedDeltaNetConfig, chunking, heads_problem  # noqa: F401  (the config, re-exported beside its module)
from seqbench.models.mamba2 import (
    LOG2E,
    decay_matrix,
    decays,
    fla_gated_backward_refused,
    gated_rms_norm,
    short_conv_silu,
    transposed,
)

EPS = 1e-5  # the output RMSNorm's (fla's norm_eps)
L2_EPS = 1e-6  # q and k are divided by sqrt(|x|² + eps), fla's l2norm


@functools.cache
def cuda_chunk_rule():
    """flash-linear-attention's chunked gated delta rule kernel for CUDA, or None where fla (Triton, GPU) is
    not installed, loads no kernels or would refuse its backward here (``fla_gated_backward_refused``)."""
    rule = fla_chunk_rule()
    return None if rule is None or fla_gated_backward_refused("gated_deltanet") else rule


@functools.cache
def fla_chunk_rule():
    """flash-linear-attention's ``chunk_gated_delta_rule``, or None where it does not load."""
    try:
        # fla has no stubs and is absent where mypy runs: pyproject's mypy overrides ignore it
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    except (ImportError, OSError, RuntimeError):  # not installed, no Triton, or built for another torch
        return None
    return chunk_gated_delta_rule


class _L2Normalise(torch.autograd.Function):
    """``x / sqrt(|x|² + eps)`` over the last dimension, with its own backward ``r (dn - n (n · dn))``: half the
    passes of autograd's over the same steps."""

    @staticmethod
    def forward(ctx, x):
        r = torch.linalg.vector_norm(x, dim=-1, keepdim=True).square_().add_(L2_EPS).rsqrt_()
        n = x * r
        ctx.save_for_backward(n, r)
        return n

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dn):
        n, r = ctx.saved_tensors
        return torch.addcmul(dn, n, (dn * n).sum(-1, keepdim=True), value=-1.0).mul_(r)


def l2_normalise(x: torch.Tensor) -> torch.Tensor:
    """``x / sqrt(|x|² + eps)`` over the last dimension (fla's ``l2norm``)."""
    return _L2Normalise.apply(x)


def _chunks(t: torch.Tensor, n: int, Q: int) -> torch.Tensor:
    """(b, T, H, ·) or (b, T, H) -> chunk-major (n, b·H, Q, ·) or (n, b·H, Q), zero past T; a copy, or a view of
    t where none is needed (so never written into). Chunk-major, so that chunks 1 .. n-1 (or 0 .. n-2) of a
    tensor are one batch of matrices: a batched product of a slice along a middle dimension copies its operands."""
    b, T, H = t.shape[:3]
    if n * Q > T:
        t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, n * Q - T))
    t = t.view(b, n, Q, H, *t.shape[3:]).transpose(1, 3)  # (b, H, Q, n, ·) as a view
    return t.permute(3, 0, 1, 2, *range(4, t.dim())).reshape(n, b * H, Q, *t.shape[4:])


def _unchunk(t: torch.Tensor, b: int, T: int) -> torch.Tensor:
    """The inverse of ``_chunks``: (n, b·H, Q, ·) or (n, b·H, Q) -> (b, T, H, ·) or (b, T, H), a view."""
    n, bH, Q = t.shape[:3]
    t = t.view(n, b, bH // b, Q, *t.shape[3:])  # (n, b, H, Q, ·)
    return t.permute(1, 0, 3, 2, *range(4, t.dim())).reshape(b, n * Q, bH // b, *t.shape[4:])[:, :T]


class _GatedDelta(torch.autograd.Function):
    """The gated delta rule in chunks (``gated_delta_chunked``), with its own backward.

    Per chunk of Q positions (chunk-major, (n, b·H, Q, ·)), with c the cumulative log-decay from the chunk's
    start, ``L_ij = exp(c_i - c_j)`` (j <= i), ``Γ = exp(c)``, ``γ = exp(c_Q)`` and ``K̃ = k ∘ exp(c_Q - c)``:

    - the WY form: ``(I + M) [U | W] = [β v | β Γ k]`` with ``M = tril₋₁(k kᵀ ∘ L) ∘ β`` (a unit lower
      triangular solve): U are the values each step writes once the chunk's earlier writes are taken into
      account, W the keys through which the state entering the chunk is read and erased;
    - inside the chunk ``o = (tril(q kᵀ) ∘ L) U``;
    - across chunks, with the state S_c entering chunk c (S_0 = 0): ``o += (q Γ - (tril(q kᵀ) ∘ L) W) S_c``
      and ``S_{c+1} = (γ_c I - K̃_cᵀ W_c) S_c + K̃_cᵀ U_c`` (the first factor is the chunk's transition, the
      product of its steps' α (I - β k kᵀ): one K x K by K x V product per chunk is the sequential part).

    The backward runs the same products transposed (the solve with Mᵀ), the carry in reverse. Autograd of
    the same operations took 1.5-2 times as long on one CPU thread (d_model 64, T 256-4096)."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, scale, chunk):
        b, T, H, K = q.shape
        V = v.shape[-1]
        n, Q = chunking(T, chunk)  # past T: k = v = q = β = 0 and g = 0, so padded steps change no state read before
        qc, kc, vc = (_chunks(t, n, Q) for t in (q, k, v))  # (n, b·H, Q, K or V); may be views of the inputs
        qc = qc * scale
        bc = _chunks(beta, n, Q)  # (n, b·H, Q)
        cs = _chunks(g, n, Q).cumsum(-1).mul_(LOG2E)  # (n, b·H, Q): c, in log2 units
        L = decay_matrix(cs)  # (n, b·H, Q, Q): exp(c_i - c_j) for j <= i, 1 above
        kT = transposed(kc)  # (n, b·H, K, Q)
        KKL = (kc @ kT).mul_(L)  # (n, b·H, Q, Q)
        Gam = decays(cs)  # (n, b·H, Q)
        rhs = vc.new_empty(n, vc.shape[1], Q, V + K)  # [β v | β Γ k], written in place (a cat would copy)
        torch.mul(vc, bc[..., None], out=rhs[..., :V])
        torch.mul(kc, (bc * Gam)[..., None], out=rhs[..., V:])
        # M's diagonal and upper triangle are not read (unit lower triangular)
        UW = torch.linalg.solve_triangular(KKL * bc[..., None], rhs, upper=False, unitriangular=True)
        U, W = UW[..., :V].contiguous(), UW[..., V:].contiguous()  # (n, b·H, Q, V), (n, b·H, Q, K)
        scores = (qc @ kT).tril_().mul_(L)  # (n, b·H, Q, Q)
        o = scores @ U  # (n, b·H, Q, V): from inside each chunk
        S = reads = k_end = to_end = gam = carry = None
        if n > 1:
            to_end = decays(cs[..., -1:] - cs)  # (n, b·H, Q)
            k_end = kc * to_end[..., None]  # (n, b·H, Q, K): K̃
            k_endT = transposed(k_end)
            adds = k_endT[:-1] @ U[:-1]  # (n-1, b·H, K, V): what chunks 0 .. n-2 write
            gam = decays(cs[1:-1, :, -1])  # (n-2, b·H): γ of chunks 1 .. n-2
            eye = torch.eye(K, dtype=q.dtype, device=q.device)
            carry = gam[..., None, None] * eye - k_endT[1:-1] @ W[1:-1]  # (n-2, b·H, K, K)
            entering = [adds[0]]  # (b·H, K, V): the state entering chunk 1, 2, ...
            for j in range(1, n - 1):  # fresh outputs: a product into a slice of its own input's storage is slow
                entering.append(torch.baddbmm(adds[j], carry[j - 1], entering[-1]))
            S = torch.stack(entering)  # (n-1, b·H, K, V)
            reads = qc[1:] * Gam[1:, :, :, None] - scores[1:] @ W[1:]  # (n-1, b·H, Q, K)
            o[1:] += reads @ S
        ctx.save_for_backward(qc, kc, vc, bc, L, KKL, Gam, UW, scores, S, reads, k_end, to_end, gam, carry)
        ctx.scale = scale
        return _unchunk(o, b, T).contiguous()  # (b, T, H, V)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do):
        qc, kc, vc, bc, L, KKL, Gam, UW, scores, S, reads, k_end, to_end, gam, carry = ctx.saved_tensors
        n, _, Q, V = vc.shape
        b, T = do.shape[:2]
        U, W = UW[..., :V], UW[..., V:]
        dO = _chunks(do, n, Q)  # (n, b·H, Q, V)
        dU = scores.transpose(-1, -2) @ dO
        UWT = transposed(UW)  # (n, b·H, V + K, Q)
        UT, WT = UWT[..., :V, :], UWT[..., V:, :]
        dscores = dO @ UT  # (n, b·H, Q, Q)
        dW = torch.zeros_like(W)
        dq, dk = torch.zeros_like(qc), torch.zeros_like(kc)
        dc = torch.zeros_like(Gam)  # the gradient of each cumulative log-decay c
        if n > 1:
            dO1 = dO[1:]
            ST, carryT = transposed(S), transposed(carry)
            dreads = dO1 @ ST  # (n-1, b·H, Q, K)
            dS = reads.transpose(-1, -2) @ dO1  # (n-1, b·H, K, V): from the reads, directly
            dq[1:] = dreads * Gam[1:, :, :, None]
            dc[1:] += (qc[1:] * dreads).sum(-1) * Gam[1:]
            dscores[1:] -= dreads @ WT[1:]
            dW[1:] -= scores[1:].transpose(-1, -2) @ dreads
            whole, dcarry = [dS[n - 2]], []  # the whole gradients of S[n-2], S[n-3], ...; of carry_{n-2}, ...
            for j in range(n - 2, 0, -1):  # S[j] = carry_j S[j-1] + adds_j, so dS[j - 1] is whole after this
                dcarry.append(torch.bmm(whole[-1], ST[j - 1]))
                whole.append(torch.baddbmm(dS[j - 1], carryT[j - 1], whole[-1]))
            dadds = torch.stack(whole[::-1])  # (n-1, b·H, K, V): adds_c = K̃_cᵀ U_c
            dk_end = torch.zeros_like(k_end)
            dk_end[:-1] = U[:-1] @ transposed(dadds)
            dU[:-1] += k_end[:-1] @ dadds
            if n > 2:  # carry_c = γ_c I - K̃_cᵀ W_c, c = 1 .. n-2
                dcarry_ = torch.stack(dcarry[::-1])  # (n-2, b·H, K, K)
                dc[1:-1, :, -1] += dcarry_.diagonal(dim1=-2, dim2=-1).sum(-1) * gam
                dk_end[1:-1] -= W[1:-1] @ transposed(dcarry_)
                dW[1:-1] -= k_end[1:-1] @ dcarry_
            dk += dk_end * to_end[..., None]
            dend = (dk_end * kc).sum(-1) * to_end  # through exp(c_Q - c)
            dc[..., -1] += dend.sum(-1)
            dc -= dend
        # scores = tril(q kᵀ) ∘ L
        dQK = (dscores * L).tril_()
        dq += dQK @ kc
        dk += dQK.transpose(-1, -2) @ qc
        expo = dscores.mul_(scores)  # the gradient reaching the exponent c_i - c_j of L_ij, through the scores
        # (I + M) [U | W] = R: dR = (I + M)⁻ᵀ d[U | W] and dM = -tril₋₁(dR [U | W]ᵀ), with M = (k kᵀ ∘ L) ∘ β
        M = KKL * bc[..., None]
        dR = torch.linalg.solve_triangular(M.transpose(-1, -2), torch.cat([dU, dW], -1), upper=True, unitriangular=True)
        dM = (dR @ UWT).tril_(-1).neg_()  # (n, b·H, Q, Q)
        dbeta = (dM * KKL).sum(-1)  # (n, b·H, Q): row i of M carries β_i
        dKKL = dM.mul_(bc[..., None])
        expo.addcmul_(dKKL, KKL)  # and through the L inside M
        dKK = dKKL.mul_(L)
        dk += dKK @ kc + dKK.transpose(-1, -2) @ kc
        dRv, dRw = dR[..., :V], dR[..., V:]  # R = [β v | β Γ k]
        kw = (kc * dRw).sum(-1)  # (n, b·H, Q)
        dbeta += (vc * dRv).sum(-1) + kw * Gam
        dk.addcmul_(dRw, (bc * Gam)[..., None])
        dc += kw * bc * Gam + expo.sum(-1) - expo.sum(-2)
        dg = dc.flip(-1).cumsum(-1).flip(-1)  # g_s enters every c_i with i >= s of its chunk
        dq.mul_(ctx.scale)
        dv = dRv * bc[..., None]
        return (*(_unchunk(t, b, T) for t in (dq, dk, dv, dg, dbeta)), None, None)


# The gated delta rule in C (models/cpu.py builds it), for a CPU: one step after another per sequence, each
# head's (K, V) state in the L1 cache, keeping the state entering every ``chunk`` steps; the backward rebuilds
# a chunk's states from its checkpoint into a buffer that stays in the L2 cache and runs the adjoint
# recurrence back through it (as Mamba's selective scan kernel, models/mamba.py). A step is three passes over
# the state forward and two backward, where the chunked form above runs a triangular solve and a dozen
# small batched products per chunk: at d_model 64 (K = V = 32) its per-operation cost, not its arithmetic,
# set the step time. Written once over REAL (float or double).
_RULE_BODY = r"""
/* q, k (B, L, H, K) with q already scaled, v (B, L, H, V), g, beta (B, L, H): S_t = exp(g_t)(I - β_t k_t k_tᵀ)
   S_{t-1} + β_t k_t v_tᵀ, o_t = S_tᵀ q_t into o (B, L, H, V); ckpt (B, C, H, K, V) out: the state entering
   each chunk; work: H·K·V + V scratch. Sequences b0 .. b1 - 1. */
void gdr_fwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t H, int64_t K, int64_t V, int64_t chunk,
                  const REAL *restrict q, const REAL *restrict k, const REAL *restrict v,
                  const REAL *restrict g, const REAL *restrict beta, REAL *restrict o,
                  REAL *restrict ckpt, REAL *restrict work) {
    const int64_t C = (L + chunk - 1) / chunk, KV = K * V, S = H * KV;
    REAL *restrict h = work, *restrict e = work + S;
    for (int64_t b = b0; b < b1; b++) {
        memset(h, 0, sizeof(REAL) * S);
        for (int64_t t = 0; t < L; t++) {
            if (t % chunk == 0) memcpy(ckpt + (b * C + t / chunk) * S, h, sizeof(REAL) * S);
            const int64_t r = b * L + t;
            for (int64_t j = 0; j < H; j++) {
                const int64_t rj = r * H + j;
                const REAL *qj = q + rj * K, *kj = k + rj * K, *vj = v + rj * V;
                const REAL a = exp2_REAL(g[rj] * 1.4426950408889634), bt = beta[rj];
                REAL *hj = h + j * KV, *oj = o + rj * V;
#pragma omp simd
                for (int64_t c = 0; c < V; c++) e[c] = 0;
                for (int64_t i = 0; i < K; i++) { /* M = a S; e = v - Mᵀ k */
                    REAL *row = hj + i * V;
                    const REAL ki = kj[i];
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) {
                        row[c] *= a;
                        e[c] += row[c] * ki;
                    }
                }
#pragma omp simd
                for (int64_t c = 0; c < V; c++) {
                    e[c] = vj[c] - e[c];
                    oj[c] = 0;
                }
                for (int64_t i = 0; i < K; i++) { /* S = M + β k eᵀ; o = Sᵀ q */
                    REAL *row = hj + i * V;
                    const REAL w = bt * kj[i], qi = qj[i];
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) {
                        row[c] += w * e[c];
                        oj[c] += row[c] * qi;
                    }
                }
            }
        }
    }
}

/* The gradients of <o, go>: gq, gk (B, L, H, K), gv (B, L, H, V), gg, gbeta (B, L, H), all written.
   work: (chunk + 1)·H·K·V + chunk·H·(V + 1) + V + K scratch. */
void gdr_bwd_REAL(int64_t b0, int64_t b1, int64_t L, int64_t H, int64_t K, int64_t V, int64_t chunk,
                  const REAL *restrict q, const REAL *restrict k, const REAL *restrict v,
                  const REAL *restrict g, const REAL *restrict beta, const REAL *restrict ckpt,
                  const REAL *restrict go, REAL *restrict gq, REAL *restrict gk, REAL *restrict gv,
                  REAL *restrict gg, REAL *restrict gbeta, REAL *restrict work) {
    const int64_t C = (L + chunk - 1) / chunk, KV = K * V, S = H * KV;
    REAL *restrict G = work, *restrict hb = G + S, *restrict eb = hb + chunk * S, *restrict ab = eb + chunk * H * V;
    REAL *restrict de = ab + chunk * H, *restrict Ge = de + V;
    for (int64_t b = b0; b < b1; b++) {
        memset(G, 0, sizeof(REAL) * S); /* dL/dS_t through S_{t+1} */
        for (int64_t ch = C - 1; ch >= 0; ch--) {
            const int64_t s0 = ch * chunk, n = L - s0 < chunk ? L - s0 : chunk;
            const REAL *h0 = ckpt + (b * C + ch) * S, *prev = h0;
            for (int64_t i = 0; i < n; i++) { /* the chunk's states and errors e, again */
                const int64_t r = b * L + s0 + i;
                for (int64_t j = 0; j < H; j++) {
                    const int64_t rj = r * H + j;
                    const REAL *kj = k + rj * K, *vj = v + rj * V, *pj = prev + j * KV;
                    const REAL a = exp2_REAL(g[rj] * 1.4426950408889634), bt = beta[rj];
                    REAL *hj = hb + i * S + j * KV, *e = eb + (i * H + j) * V;
                    ab[i * H + j] = a;
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) e[c] = 0;
                    for (int64_t x = 0; x < K; x++) {
                        const REAL kx = kj[x];
                        const REAL *pr = pj + x * V;
#pragma omp simd
                        for (int64_t c = 0; c < V; c++) e[c] += a * pr[c] * kx;
                    }
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) e[c] = vj[c] - e[c];
                    for (int64_t x = 0; x < K; x++) {
                        const REAL w = bt * kj[x];
                        const REAL *pr = pj + x * V;
                        REAL *row = hj + x * V;
#pragma omp simd
                        for (int64_t c = 0; c < V; c++) row[c] = a * pr[c] + w * e[c];
                    }
                }
                prev = hb + i * S;
            }
            for (int64_t i = n - 1; i >= 0; i--) {
                const int64_t r = b * L + s0 + i;
                const REAL *hp = i ? hb + (i - 1) * S : h0, *hi = hb + i * S;
                for (int64_t j = 0; j < H; j++) {
                    const int64_t rj = r * H + j;
                    const REAL *qj = q + rj * K, *kj = k + rj * K, *goj = go + rj * V;
                    const REAL *e = eb + (i * H + j) * V, *Sj = hi + j * KV, *Pj = hp + j * KV;
                    const REAL a = ab[i * H + j], bt = beta[rj];
                    REAL *Gj = G + j * KV, *gqj = gq + rj * K, *gkj = gk + rj * K, *gvj = gv + rj * V;
                    REAL db = 0, dg = 0;
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) de[c] = 0;
                    for (int64_t x = 0; x < K; x++) { /* G = G + q goᵀ; gq = S go; Ge = G e; de = Gᵀ k */
                        REAL *Gr = Gj + x * V;
                        const REAL *Sr = Sj + x * V, qx = qj[x], kx = kj[x];
                        REAL sq = 0, se = 0;
#pragma omp simd reduction(+ : sq, se)
                        for (int64_t c = 0; c < V; c++) {
                            const REAL gr = Gr[c] + qx * goj[c];
                            Gr[c] = gr;
                            sq += Sr[c] * goj[c];
                            se += gr * e[c];
                            de[c] += gr * kx;
                        }
                        gqj[x] = sq;
                        Ge[x] = se;
                        db += kx * se;
                    }
#pragma omp simd
                    for (int64_t c = 0; c < V; c++) {
                        de[c] *= bt;
                        gvj[c] = de[c];
                    }
                    for (int64_t x = 0; x < K; x++) { /* dM = G - k deᵀ; gk = β G e - M de; G_{t-1} = a dM */
                        REAL *Gr = Gj + x * V;
                        const REAL *Pr = Pj + x * V, kx = kj[x];
                        REAL sm = 0, sg = 0;
#pragma omp simd reduction(+ : sm, sg)
                        for (int64_t c = 0; c < V; c++) {
                            const REAL m = a * Pr[c], dm = Gr[c] - kx * de[c];
                            sm += m * de[c];
                            sg += dm * m;
                            Gr[c] = a * dm;
                        }
                        gkj[x] = bt * Ge[x] - sm;
                        dg += sg;
                    }
                    gg[rj] = dg;
                    gbeta[rj] = db;
                }
            }
        }
    }
}
"""
RULE_SOURCE = cpu.instantiate(_RULE_BODY)


class _KernelRule(torch.autograd.Function):
    """``o_t = S_tᵀ q_t`` of the gated delta rule by the C kernel (``RULE_SOURCE``): q, k (b, T, H, K) with q
    already scaled, v (b, T, H, V), g, beta (b, T, H), all of one dtype (float32 or float64)."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, lib, chunk):
        real = cpu.DTYPES[q.dtype]
        b, T, H, K = q.shape
        V, C = v.shape[-1], -(-T // chunk)
        q, k, v, g, beta = (t.contiguous() for t in (q, k, v, g, beta))
        o, states = q.new_empty(b, T, H, V), q.new_empty(b, C, H * K * V)  # states: the one entering each chunk
        work = q.new_empty(cpu.slots(b), H * K * V + V)
        run = getattr(lib, f"gdr_fwd_{real}")
        cpu.parallel(
            b, lambda b0, b1, s: cpu.call(run, b0, b1, T, H, K, V, chunk, q, k, v, g, beta, o, states, work[s]), lib
        )
        ctx.lib, ctx.run, ctx.chunk = lib, getattr(lib, f"gdr_bwd_{real}"), chunk
        ctx.save_for_backward(q, k, v, g, beta, states)
        return o

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, go):
        q, k, v, g, beta, states = ctx.saved_tensors
        b, T, H, K = q.shape
        V, n, chunk = v.shape[-1], cpu.slots(b), ctx.chunk
        go = go.contiguous()
        gq, gk, gv, gg, gbeta = (torch.empty_like(t) for t in (q, k, v, g, beta))
        work = q.new_empty(n, (chunk + 1) * H * K * V + chunk * H * (V + 1) + V + K)
        args = (q, k, v, g, beta, states, go, gq, gk, gv, gg, gbeta)
        cpu.parallel(b, lambda b0, b1, s: cpu.call(ctx.run, b0, b1, T, H, K, V, chunk, *args, work[s]), ctx.lib)
        return gq, gk, gv, gg, gbeta, None, None


def gated_delta_chunked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float,
    chunk: int = CHUNK,
    kernel: bool | None = None,
) -> torch.Tensor:
    """``S_t = exp(g_t)(I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ``, ``o_t = scale·S_tᵀ q_t`` from S_0 = 0:
    q, k (b, T, H, K), v (b, T, H, V), g (b, T, H) log-decays <= 0, beta (b, T, H) -> (b, T, H, V). fla's
    ``chunk_gated_delta_rule(q, k, v, g, beta, scale)``.

    ``kernel``: the C kernel (True; ``chunk`` is then its steps between checkpoints), the chunked PyTorch
    form ``_GatedDelta`` (False; ``chunk`` positions per chunk), or the kernel wherever it builds and takes
    the dtype (None: float32 or float64 on a CPU, its checkpoints chosen from the shapes)."""
    lib = cpu.choose("gated_delta_rule", RULE_SOURCE, q, kernel)
    if lib is None:
        return _GatedDelta.apply(q, k, v, g, beta, scale, chunk)
    H, K, V = q.shape[2], q.shape[3], v.shape[3]
    k, v, g, beta = (t.to(q.dtype) for t in (k, v, g, beta))
    return _KernelRule.apply(q * scale, k, v, g, beta, lib, chunk if kernel else cpu.checkpoint_steps(H * K * V))


@MIXERS.module("gated_deltanet")
class GatedDeltaNet(nn.Module):
    """A ``Mixer`` (``models/configs/mixer.py``). ``causal``: causal convolutions and a recurrence forward in
    time, so causal at any value (``causal=False`` permits reading later positions, it does not require it)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        expand_v: int = 1,
        d_conv: int = 4,
        allow_neg_eigval: bool = False,
        *,
        causal: bool = True,
    ):
        super().__init__()
        problem = heads_problem(d_model, n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        H, K = n_heads, d_model // n_heads
        V = expand_v * K
        self.n_heads, self.head_k, self.head_v, self.d_conv = H, K, V, d_conv
        self.allow_neg_eigval = allow_neg_eigval
        self.q_proj = nn.Linear(d_model, H * K, bias=False)
        self.k_proj = nn.Linear(d_model, H * K, bias=False)
        self.v_proj = nn.Linear(d_model, H * V, bias=False)
        self.a_proj = nn.Linear(d_model, H, bias=False)  # the decay's input, per head
        self.b_proj = nn.Linear(d_model, H, bias=False)  # β's input, per head
        self.g_proj = nn.Linear(d_model, H * V, bias=False)  # the output gate
        # depthwise, no bias, causal: position t sees t - d_conv + 1 .. t (``qkv``)
        self.q_conv1d, self.k_conv1d, self.v_conv1d = (
            nn.Conv1d(c, c, d_conv, groups=c, bias=False) for c in (H * K, H * K, H * V)
        )
        self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(0, 16)))
        dt = torch.exp(torch.rand(H) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)).clamp(min=1e-4)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt at initialisation
        self.o_norm = nn.Parameter(torch.ones(V))  # the RMSNorm's weight, shared by the heads
        self.o_proj = nn.Linear(H * V, d_model, bias=False)

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Everything the rule and the output gate read, from one product of x with all six projections:
        q, k (b, T, H, K), L2-normalised after the short convolutions and SiLU (run as one convolution over
        q, k and v, as fla's fused path does); v (b, T, H, V); the log-decay g = -exp(A_log)·softplus(a +
        dt_bias) <= 0 and the writing strength β = sigmoid(b), in (0, 2) with ``allow_neg_eigval``, each
        (b, T, H); the output gate's input (b, T, H, V)."""
        b, T, _ = x.shape
        H, K, V = self.n_heads, self.head_k, self.head_v
        projections = (self.q_proj, self.k_proj, self.v_proj, self.g_proj, self.a_proj, self.b_proj)
        w = torch.cat([p.weight for p in projections])  # (H·(2K + 2V + 2), d)
        qkv, gate, a, bb = F.linear(x, w).split([H * (2 * K + V), H * V, H, H], dim=-1)
        convs = (self.q_conv1d, self.k_conv1d, self.v_conv1d)
        q, k, v = short_conv_silu(qkv, torch.cat([c.weight for c in convs])).split([H * K, H * K, H * V], dim=-1)
        g = -torch.exp(self.A_log) * F.softplus(a + self.dt_bias)
        beta = torch.sigmoid(bb)
        return (
            l2_normalise(q.view(b, T, H, K)),
            l2_normalise(k.view(b, T, H, K)),
            v.view(b, T, H, V),
            g,
            2 * beta if self.allow_neg_eigval else beta,
            gate.view(b, T, H, V),
        )

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (b, T, d_model) -> (b, T, d_model). ``valid`` is not read: padding comes after the real positions,
        and a causal mixer never carries it back to them."""
        b, T, _ = x.shape
        q, k, v, g, beta, gate = self.heads(x)
        rule = cuda_chunk_rule() if x.is_cuda else None
        if rule is not None:
            o, _ = rule(q, k, v, g, beta, scale=self.head_k**-0.5)
        else:
            o = gated_delta_chunked(q, k, v, g, beta, self.head_k**-0.5)  # (b, T, H, V)
        o = gated_rms_norm(o, gate, self.o_norm, False, EPS)  # rmsnorm(o)·w·silu(gate), per head
        return self.o_proj(o.reshape(b, T, -1))  # (b, T, d_model)
