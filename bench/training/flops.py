"""Analytic training FLOPs per token and dense peak FLOP/s per GPU: the two halves of MFU.

    mfu = tokens_per_s * flops_per_token(cfg, spec) / peak_flops(device_name, precision)

Conventions (nanoGPT / PaLM appendix B, Chowdhery et al. 2022):
- only multiply-accumulates of matrix products and convolutions count, one MAC = 2 FLOPs;
  element-wise work (activations, gates' sigmoid/tanh products, norms, softmax, biases,
  dropout, the optimizer) is left out, and embedding lookups cost nothing (one-hot inputs
  are real dense products and do count);
- a training step is forward + backward = 3x the forward FLOPs (backward: one product for the
  input gradient and one for the weight gradient per forward product), so a model with N
  matmul parameters costs about 6N per token, plus attention's 12 * n_layers * d_model * T;
- attention scores and the weighted sum count every (query, key) pair: causal masks are not
  halved (PaLM's convention; fused kernels skip about half of that work, so MFU of a causal
  model is a little flattering at long T);
- a "token" is one input position: a step processes ``train.batch_size * task.seq_len()``
  tokens. Pooled heads (one output per sequence) are spread over the sequence's positions,
  and an encoder-decoder's decoder and cross-attention over its source positions.

Each model counts its own forward MACs (``ModelConfig.forward_macs`` in its file, under these
conventions; ``models/base.py`` documents the interface). ``flops_per_token`` returns None where
the count would not be honest: a model that declares it cannot count (``no_flop_count``), or a
task whose batches are padded to a per-batch length (``pad_id`` and no ``TaskConfig.target_len``), where
the work per token depends on the batch, and a task whose batches draw their length from a range
(``TaskConfig.train_lengths``), for the same reason.

``peak_flops`` is a table of dense (not 2:4-sparse) vendor peaks; None for a device or
precision it does not know (CPUs included): MFU is then left out, never guessed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from seqbench.bench.core.contract import OutputKind, TaskSpec

if TYPE_CHECKING:
    from seqbench.bench.config import RunConfig

FLOPS_PER_MAC = 2
TRAIN_MULTIPLIER = 3  # forward + backward (twice the forward)


def forward_macs(cfg: RunConfig, spec: TaskSpec) -> int | None:
    """Multiply-accumulates of one forward pass over one training sequence, or None (see module doc).
    The count is the model's own (``ModelConfig.forward_macs``, in the model's file); this
    function decides only whether the task's sequences have a length it can be counted at."""
    lengths = cfg.task.train_lengths()
    if lengths is not None and lengths[0] < lengths[1]:
        return None  # each batch draws its own length: the cost per token varies by batch
    target_len = cfg.task.target_len()  # declared by a seq2seq task whose targets all have one length
    if spec.pad_id is not None and target_len is None:
        return None  # padded to each batch's longest sequence: the cost per token varies by batch
    if spec.output_kind is OutputKind.SEQ2SEQ and target_len is None:
        return None  # the task declares no target length
    return cfg.model.forward_macs(spec, cfg.task.seq_len(), target_len)


def flops_per_token(cfg: RunConfig, spec: TaskSpec) -> float | None:
    """Training (forward + backward) FLOPs per input token, or None where not countable."""
    macs = forward_macs(cfg, spec)
    if macs is None:
        return None
    return float(TRAIN_MULTIPLIER * FLOPS_PER_MAC * macs / cfg.task.seq_len())


# -- device peaks ---------------------------------------------------------------------------

# Dense peak TFLOP/s by precision, from the vendors' datasheets (sparsity figures halved where a
# sheet gives only those, marked "*"). fp32 = CUDA-core FP32 (what PyTorch uses by default);
# tf32 = tensor cores for fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision
# ('high')); bf16/fp16 = tensor cores with fp32 accumulation (what autocast uses). Matched on
# torch.cuda.get_device_name() (lower-cased) by the first pattern that matches: specific names first.
#   H100 SXM5, H100 NVL, H100 PCIe: NVIDIA H100 Tensor Core GPU datasheet (TF32 989*/835*/756*,
#     BF16/FP16 1979*/1671*/1513*, FP32 67/60/51).
#   H200 SXM, H200 NVL: NVIDIA H200 datasheet (TF32 989*/835*, BF16/FP16 1979*/1671*, FP32 67/60).
#   A100 (SXM and PCIe, 40 and 80 GB): NVIDIA A100 datasheet (FP32 19.5, TF32 156, BF16/FP16 312).
#   L40S: NVIDIA L40S datasheet (FP32 91.6, TF32 366*, BF16/FP16 733*).
#   L40: NVIDIA L40 datasheet (FP32 90.5, TF32 181*, BF16/FP16 362*).
#   L4: NVIDIA L4 datasheet (FP32 30.3, TF32 120*, BF16/FP16 242*).
#   A10: NVIDIA A10 datasheet (FP32 31.2, TF32 62.5, BF16/FP16 125). The AWS A10G is a different
#     part with no public vendor datasheet: unknown (None) rather than borrowed.
#   V100 SXM2/SXM3, V100 PCIe, V100S PCIe: NVIDIA V100 datasheet (FP32 15.7/14/16.4, tensor FP16
#     125/112/130); no TF32 or BF16 tensor cores.
#   T4: NVIDIA T4 datasheet (FP32 8.1, mixed FP16 65); no TF32 or BF16 tensor cores.
#   RTX 4090: NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX 4090 column (FP32 82.6,
#     TF32 82.6, BF16/FP16 with FP32 accumulate 165.2).
#   RTX 3090: NVIDIA Ampere GA102 whitepaper, GeForce RTX 3090 column (FP32 35.6, TF32 35.6,
#     BF16/FP16 with FP32 accumulate 71).
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    (r"h100.*nvl", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5}),
    (r"h100.*pcie", {"fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5}),
    (r"h100", {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}),  # SXM5 ("H100 80GB HBM3")
    (r"h200.*nvl", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5}),
    (r"h200", {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}),
    (r"a100", {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}),
    (r"l40s", {"fp32": 91.6, "tf32": 183.0, "bf16": 366.5, "fp16": 366.5}),
    (r"l40\b", {"fp32": 90.5, "tf32": 90.5, "bf16": 181.0, "fp16": 181.0}),
    (r"l4\b", {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0}),
    (r"a10g", {}),
    (r"a10\b", {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0}),
    (r"v100s", {"fp32": 16.4, "fp16": 130.0}),
    (r"v100.*pcie", {"fp32": 14.0, "fp16": 112.0}),
    (r"v100.*sxm", {"fp32": 15.7, "fp16": 125.0}),
    (r"\bt4\b", {"fp32": 8.1, "fp16": 65.0}),
    (r"rtx 4090", {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2}),
    (r"rtx 3090", {"fp32": 35.6, "tf32": 35.6, "bf16": 71.0, "fp16": 71.0}),
)
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


def peak_flops(device_name: str, precision: str) -> float | None:
    """Dense peak FLOP/s of ``device_name`` (as torch.cuda.get_device_name() spells it) at
    ``precision``, or None when the table does not know it. ``precision`` is a table column (fp32,
    tf32, bf16, fp16) or a Lightning ``train.precision`` (``bf16-mixed``, ``32-true``, ...), read in
    the process that trains: ``32-true`` is tf32 when fp32 matmuls may use TF32 there."""
    if precision not in PRECISIONS:
        column = peak_precision(precision, _matmul_tf32())
        if column is None:
            return None
        precision = column
    name = device_name.lower()
    for pattern, peaks in PEAK_TFLOPS:
        if re.search(pattern, name):
            tflops = peaks.get(precision)
            return None if tflops is None else tflops * 1e12
    return None


LIGHTNING_PRECISIONS = {
    "bf16-mixed": "bf16",
    "bf16-true": "bf16",
    "16-mixed": "fp16",
    "16-true": "fp16",
    "32-true": "fp32",
    "64-true": None,
}


def peak_precision(train_precision: str, tf32: bool) -> str | None:
    """The table column for a Lightning ``train.precision``; ``tf32`` is whether fp32 matmuls may run
    on tensor cores in this process. None for 64-true (no fp64 column)."""
    if train_precision not in LIGHTNING_PRECISIONS:
        raise ValueError(
            f"precision: {train_precision!r}; choose one of {', '.join(PRECISIONS)} "
            f"or {', '.join(LIGHTNING_PRECISIONS)}"
        )
    column = LIGHTNING_PRECISIONS[train_precision]
    return "tf32" if column == "fp32" and tf32 else column


def _matmul_tf32() -> bool:
    """Whether fp32 matmuls may use TF32 here (``torch.set_float32_matmul_precision('high')`` or
    ``torch.backends.cuda.matmul.allow_tf32``). cuDNN's own flag (RNNs, convolutions) defaults to on,
    so fp32 recurrent and TCN runs may run TF32 kernels against the fp32 peak: their MFU flatters."""
    import torch  # here, not at the top: the FLOP count itself is pure Python (`verify --help` imports it)

    return torch.get_float32_matmul_precision() != "highest" or torch.backends.cuda.matmul.allow_tf32
