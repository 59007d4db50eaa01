"""FLOP accounting: every registered model counts (checked against torch's FlopCounterMode) or says
why not; hand counts per architecture; the harness's refusals; the peak table.

Each model counts its own forward multiply-accumulates (``ModelConfig.forward_macs`` in its file);
``bench/training/flops.py`` turns them into ``flops_per_token = 3 (fwd + bwd) * 2 (FLOPs per MAC) * MACs / T``.
Hand counts are those MACs written out from the config.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import OutputKind, TaskSpec
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.training import flops
from seqbench.bench.training.train import build_task
from seqbench.models.base import ModelConfig, build_model
from seqbench.models.configs.recurrent import LSTMConfig, rnn_stack_macs
from seqbench.tasks.synthetic.base import BatchKey
from tests.helpers import TINY_TASK, tiny_overrides

# copy with n_symbols=2, alphabet=3, delay=6: T = 6 + 2*2 = 10, vocab = 3 + 2 = 5, classes = 3 + 1 = 4
COPY = ["task=copy", "task.n_symbols=2", "task.alphabet=3", "task.delay=6"]
T_COPY, V_COPY, C_COPY = 10, 5, 4
# adding with length 8: two input channels, one pooled regression output
ADDING = ["task=adding", "task.length=8"]
T_ADD = 8
# reverse with length 5, vocab 6: S = 5 source tokens, 6 decoder positions (target + <eos>), 6 + 3 ids
REVERSE = ["task=reverse", "task.length=5", "task.vocab=6"]
S_REV, T_REV, V_REV = 5, 6, 9


def setup(*overrides: str):
    cfg = build_config({}, [*overrides, "tracking.wandb=off"])
    return cfg, build_task(cfg).spec


def per_token(macs: int, T: int) -> float:
    return 3 * 2 * macs / T


HAND = {
    # tanh RNN, d=8, learned embedding (input width 8): one weight block, W_ih (8x8) and W_hh (8x8); head 8 -> 4
    "rnn": ([*COPY, "model=rnn", "model.d_model=8"], T_COPY, T_COPY * (1 * 8 * (8 + 8) + 8 * C_COPY)),
    # LSTM, d=8, 2 layers, one-hot inputs (width 5): four gate blocks per layer; head 8 -> 4
    "lstm": (
        [*COPY, "model=lstm", "model.d_model=8", "model.n_layers=2", "model.embedding=onehot"],
        T_COPY,
        T_COPY * (4 * 8 * (V_COPY + 8) + 4 * 8 * (8 + 8) + 8 * C_COPY),
    ),
    # IRNN counts like an RNN
    "irnn": ([*COPY, "model=irnn", "model.d_model=8"], T_COPY, T_COPY * (8 * (8 + 8) + 8 * C_COPY)),
    # GRU, d=8 on two real channels: three gate blocks; pooled head 8 -> 1 once per sequence
    "gru": ([*ADDING, "model=gru", "model.d_model=8"], T_ADD, T_ADD * (3 * 8 * (2 + 8)) + 8 * 1),
    # decoder-only Transformer, d=16, 2 heads, d_ff=32, 2 layers: per layer q,k,v,out 4*16*16 and the
    # feed-forward 2*16*32 per position, scores + weighted sum 2*T*16 per position; head 16 -> 4
    "transformer": (
        [*COPY, "model=transformer", "model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.n_layers=2"],
        T_COPY,
        2 * (T_COPY * (4 * 16 * 16 + 2 * 16 * 32) + 2 * T_COPY * T_COPY * 16) + T_COPY * 16 * C_COPY,
    ),
    # TCN, d=16, kernel 2, 2 levels on two channels: level 0 convs 2*2*16 and 2*16*16 plus the 1x1 skip
    # 2*16; level 1 two convs 2*16*16; pooled head 16 -> 1
    "tcn": (
        [*ADDING, "model=tcn", "model.d_model=16", "model.kernel_size=2", "model.n_levels=2"],
        T_ADD,
        T_ADD * (2 * 2 * 16 + 2 * 16 * 16 + 2 * 16) + T_ADD * (2 * 16 * 16 + 2 * 16 * 16) + 16 * 1,
    ),
    # LSTM encoder-decoder, d=16, dot attention: encoder over S, decoder over T_out, scores + weighted sum
    # 2*S*16 per target, attentional state tanh(W[h; c]) 2*16*16, output 16 -> 9
    "seq2seq": (
        [*REVERSE, "model=seq2seq", "model.d_model=16"],
        S_REV,
        S_REV * 4 * 16 * (16 + 16)
        + T_REV * 4 * 16 * (16 + 16)
        + T_REV * 2 * S_REV * 16
        + T_REV * 2 * 16 * 16
        + T_REV * 16 * V_REV,
    ),
    # Transformer encoder-decoder, d=16, 2 heads, d_ff=32, 1 layer each: encoder self-attention layer over
    # S; decoder self-attention layer over T_out, cross-attention q and out on targets (2*16*16), k and v
    # on the S memory positions (2*16*16), scores + weighted sum 2*S*16 per target; output 16 -> 9
    "transformer_seq2seq": (
        [*REVERSE, "model=transformer_seq2seq", "model.d_model=16", "model.n_heads=2", "model.d_ff=32"],
        S_REV,
        S_REV * (4 * 16 * 16 + 2 * 16 * 32)
        + 2 * S_REV * S_REV * 16
        + T_REV * (4 * 16 * 16 + 2 * 16 * 32)
        + 2 * T_REV * T_REV * 16
        + T_REV * 2 * 16 * 16
        + S_REV * 2 * 16 * 16
        + 2 * T_REV * S_REV * 16
        + T_REV * 16 * V_REV,
    ),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_flops_per_token_matches_the_hand_count(name):
    overrides, T, macs = HAND[name]
    cfg, spec = setup(*overrides)
    assert cfg.task.seq_len() == T
    assert flops.forward_macs(cfg, spec) == macs
    assert flops.flops_per_token(cfg, spec) == pytest.approx(per_token(macs, T), rel=1e-12)


def test_bahdanau_gru_seq2seq_hand_count():
    cfg, spec = setup(*REVERSE, "model=seq2seq", "model.d_model=16", "model.cell=gru", "model.attention=bahdanau")
    # encoder GRU over S; decoder GRU reads embedding + context (16 + 16); keys W_k once per source position;
    # per target: W_q, v . tanh(q + k) over S keys, weighted sum over S, attentional state, output
    macs = (
        S_REV * 3 * 16 * (16 + 16)
        + T_REV * 3 * 16 * (32 + 16)
        + S_REV * 16 * 16
        + T_REV * (16 * 16 + S_REV * 16 + S_REV * 16)
        + T_REV * 2 * 16 * 16
        + T_REV * 16 * V_REV
    )
    assert flops.forward_macs(cfg, spec) == macs


def test_transformer_on_onehot_inputs_counts_the_input_projection():
    cfg, spec = setup(
        *COPY, "model=transformer", "model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.embedding=onehot"
    )
    macs = T_COPY * V_COPY * 16 + T_COPY * (4 * 16 * 16 + 2 * 16 * 32) + 2 * T_COPY * T_COPY * 16 + T_COPY * 16 * C_COPY
    assert flops.forward_macs(cfg, spec) == macs


def test_bidirectional_stack_reads_both_directions_above_the_first_layer():
    # 2 layers of a bidirectional GRU (3 blocks), input 5, hidden 8: layer 2 reads 2 * 8 features
    assert rnn_stack_macs(5, 8, 2, 3, directions=2) == 2 * 3 * 8 * (5 + 8) + 2 * 3 * 8 * (2 * 8 + 8)


def test_attention_pooling_adds_scores_and_weighted_sum():
    cfg, _ = setup(*ADDING, "model=gru", "model.d_model=8")
    spec = TaskSpec(OutputKind.CLASS, n_classes=3, causal=True, input_dim=2, pooling="attention")
    assert flops.forward_macs(cfg, spec) == T_ADD * 3 * 8 * (2 + 8) + 8 * 3 + 2 * T_ADD * 8


def test_padded_variable_length_task_is_not_counted():
    cfg = build_config({}, ["task=sentiment", "model=lstm", "tracking.wandb=off"])
    spec = TaskSpec(OutputKind.CLASS, n_classes=3, causal=False, vocab_size=200, pad_id=0)
    assert flops.flops_per_token(cfg, spec) is None


def test_model_that_does_not_count_is_not_counted(monkeypatch):
    cfg, spec = setup(*COPY, "model=lstm", "model.d_model=8")
    monkeypatch.setattr(LSTMConfig, "forward_macs", ModelConfig.forward_macs)  # the interface's default
    assert flops.flops_per_token(cfg, spec) is None


# -- cross-check with torch's own counter ------------------------------------------------------------
# FlopCounterMode counts aten mm/addmm/bmm/baddbmm/convolution and the CUDA SDPA kernels. On CPU it
# skips two fused kernels: the oneDNN LSTM (mkldnn_rnn_layer) and the CPU flash attention
# (_scaled_dot_product_flash_attention_for_cpu). With oneDNN off and SDPA's math backend the same
# model runs as plain matrix products, which the counter sees: then the counts agree exactly
# (tolerance 0: both count 2 FLOPs per MAC of the same products).
CROSS = {
    "lstm": [*COPY, "model=lstm", "model.d_model=16", "model.n_layers=2"],
    "transformer": [
        *COPY,
        "model=transformer",
        "model.d_model=16",
        "model.n_heads=2",
        "model.d_ff=32",
        "model.n_layers=2",
    ],
    "tcn": [*ADDING, "model=tcn", "model.d_model=16", "model.kernel_size=2", "model.n_levels=3"],
    "seq2seq-bahdanau": [*REVERSE, "model=seq2seq", "model.d_model=16", "model.attention=bahdanau"],
    "transformer_seq2seq": [*REVERSE, "model=transformer_seq2seq", "model.d_model=16", "model.n_heads=2"],
}


def counted_forward_flops(overrides: list[str], *, decompose: bool, B: int = 4) -> tuple[int, int]:
    """(FlopCounterMode's forward FLOPs, ours) for one batch of B sequences."""
    torch.manual_seed(0)
    cfg = build_config({}, [*overrides, "tracking.wandb=off"])
    task = build_task(cfg)
    net = build_model(cfg.model, task.spec)
    n = (cfg.task.train_lengths() or (0, cfg.task.seq_len()))[1]  # the problem length of seq_len positions
    batch = task.materialize(BatchKey(("train", 0, 0, n, B)), torch.device("cpu"))
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        if decompose:
            with torch.backends.mkldnn.flags(enabled=False), sdpa_kernel(SDPBackend.MATH):
                net(batch)
        else:
            net(batch)
    return counter.get_total_flops(), 2 * flops.forward_macs(cfg, task.spec) * B


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # printed by mkldnn.flags()
@pytest.mark.parametrize("name", sorted(CROSS))
def test_forward_flops_agree_with_flop_counter_mode(name):
    theirs, ours = counted_forward_flops(CROSS[name], decompose=True)
    assert theirs == ours


# Registry-wide: no hand entry per model. Every registered model on every compatible synthetic task
# (at one length, which the harness counts: a task trained on a range is held at its longest) at the
# tests' tiny sizes either counts exactly what
# FlopCounterMode sees, or declares why it cannot (``no_flop_count``) and gives None.
REGISTRY_CASES = [
    (m.name, t.name)
    for m in MODELS
    for t in TASKS
    if t.name in TINY_TASK
    and ".synthetic." in t.cls.__module__
    and t.config_cls.facts.output_kind in m.config_cls.supported_kinds
]


def test_every_registered_model_is_covered():
    assert {m for m, _ in REGISTRY_CASES} == set(MODELS.names())


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN", "ignore::UserWarning")
@pytest.mark.parametrize("model_name, task_name", REGISTRY_CASES)
def test_every_registered_model_counts_its_flops_or_says_why_not(model_name, task_name, tmp_path):
    overrides = tiny_overrides(task_name, model_name, tmp_path)
    if "length_min" in TASKS.get(task_name).config_cls.model_fields:  # a range is uncounted: train at one length
        overrides.append(f"task.length_min={TINY_TASK[task_name]['length']}")
    cfg = build_config({}, overrides)
    macs, reason = flops.forward_macs(cfg, build_task(cfg).spec), type(cfg.model).no_flop_count
    if reason is not None:
        assert reason.strip() and macs is None
        return
    assert macs is not None, f"{model_name}: forward_macs gives no count and no_flop_count does not say why"
    theirs, ours = counted_forward_flops(overrides, decompose=True)
    assert theirs == ours > 0


def test_flop_counter_skips_cpu_fused_attention_by_exactly_the_attention_term():
    theirs, ours = counted_forward_flops(CROSS["transformer"], decompose=False)
    # 2 layers x (scores + weighted sum: 2 * T * T * 16 MACs) x 2 FLOPs x 4 sequences
    assert ours - theirs == 2 * (2 * T_COPY * T_COPY * 16) * 2 * 4


# -- peaks ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, precision, tflops",
    [
        ("NVIDIA H100 80GB HBM3", "bf16", 989.5),
        ("NVIDIA H100 80GB HBM3", "fp32", 67.0),
        ("NVIDIA H100 PCIe", "bf16", 756.5),
        ("NVIDIA H100 NVL", "tf32", 417.5),
        ("NVIDIA H200", "bf16", 989.5),
        ("NVIDIA A100-SXM4-80GB", "tf32", 156.0),
        ("NVIDIA A100 80GB PCIe", "bf16", 312.0),
        ("NVIDIA L4", "bf16", 121.0),
        ("NVIDIA L40S", "bf16", 366.5),
        ("NVIDIA L40", "fp32", 90.5),
        ("NVIDIA A10", "bf16", 125.0),
        ("Tesla V100-SXM2-16GB", "fp16", 125.0),
        ("Tesla V100-PCIE-32GB", "fp32", 14.0),
        ("Tesla T4", "fp16", 65.0),
        ("NVIDIA GeForce RTX 4090", "bf16", 165.2),
        ("NVIDIA GeForce RTX 3090", "tf32", 35.6),
    ],
)
def test_peak_table_by_device_name(name, precision, tflops):
    assert flops.peak_flops(name, precision) == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize(
    "name, precision",
    [
        ("NVIDIA A10G", "bf16"),  # no vendor datasheet: unknown rather than borrowed from the A10
        ("Tesla V100-SXM2-16GB", "bf16"),
        ("Tesla T4", "tf32"),  # no such tensor cores
        ("cpu", "fp32"),
        ("AMD Instinct MI300X", "bf16"),
    ],
)
def test_unknown_device_or_precision_has_no_peak(name, precision):
    assert flops.peak_flops(name, precision) is None


def test_peak_refuses_an_unknown_precision_name():
    with pytest.raises(ValueError, match="precision: 'int8'; choose one of fp32, tf32, bf16, fp16 or bf16-mixed"):
        flops.peak_flops("NVIDIA H100 80GB HBM3", "int8")


def test_peak_takes_lightning_precision_names(monkeypatch):
    assert flops.peak_flops("NVIDIA H100 80GB HBM3", "bf16-mixed") == pytest.approx(989.5e12)
    assert flops.peak_flops("NVIDIA H100 80GB HBM3", "64-true") is None
    monkeypatch.setattr(flops, "_matmul_tf32", lambda: False)
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "32-true") == pytest.approx(19.5e12)
    monkeypatch.setattr(flops, "_matmul_tf32", lambda: True)
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "32-true") == pytest.approx(156e12)


def test_matmul_tf32_follows_torch_setting():
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert flops._matmul_tf32()
        torch.set_float32_matmul_precision("highest")
        assert not flops._matmul_tf32()
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize(
    "train_precision, tf32, column",
    [
        ("32-true", False, "fp32"),
        ("32-true", True, "tf32"),
        ("bf16-mixed", False, "bf16"),
        ("bf16-true", True, "bf16"),
        ("16-mixed", False, "fp16"),
        ("64-true", False, None),
    ],
)
def test_train_precision_maps_to_a_peak_column(train_precision, tf32, column):
    assert flops.peak_precision(train_precision, tf32) == column


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bf16_matmul_reaches_a_plausible_share_of_the_table_peak():
    """A check of the table, not a speed claim: a large bf16 matmul must land below the dense peak
    (a peak too low would give MFU > 1) and above a fifth of it (a peak 5x too high)."""
    peak = flops.peak_flops(torch.cuda.get_device_name(), "bf16")
    if peak is None:
        pytest.skip(f"{torch.cuda.get_device_name()} is not in the peak table")
    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    reps = 20
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    achieved = reps * 2 * n**3 / (start.elapsed_time(end) / 1e3)
    assert 0.2 * peak < achieved < peak
