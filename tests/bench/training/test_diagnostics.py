"""Gradient diagnostics: the through-time curve equals an independent unrolled autograd
computation, decays for a contractive tanh RNN and much less for an LSTM with forget bias 1,
per-layer grouping works for recurrent/transformer/TCN names, norms are taken before clipping."""

from __future__ import annotations

import math

import pytest
import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import IGNORE
from seqbench.bench.core.diagnostics_format import DiagnosticsFormatError, parse_diagnostics, read_diagnostics
from seqbench.bench.training.diagnostics import GradientDiagnostics, distances, layer_group, through_time
from seqbench.bench.training.module import SeqModule
from seqbench.bench.training.train import build_task, quiet_lightning, train_run
from seqbench.tasks.synthetic.base import BatchKey
from tests.helpers import tiny_overrides


def test_layer_groups_for_recurrent_transformer_and_tcn_names():
    assert layer_group("backbone.rnn.weight_hh_l0") == "backbone.rnn.l0"
    assert layer_group("backbone.rnn.bias_ih_l2_reverse") == "backbone.rnn.l2"
    assert layer_group("_orig_mod.backbone.rnn.weight_hr_l1") == "backbone.rnn.l1"
    assert layer_group("backbone.stack.layers.3.self_attn.f.q.weight") == "backbone.stack.layers.3"
    assert layer_group("backbone.stack.final_norm.weight") == "backbone.stack.final_norm"
    assert layer_group("backbone.blocks.1.net.0.conv.parametrizations.weight.original0") == "backbone.blocks.1"
    assert layer_group("encoder.embed.weight") == "encoder.embed"
    assert layer_group("head.bias") == "head"
    assert layer_group("alpha") == "alpha"


def test_distance_from_loss_positions():
    mask = torch.tensor([[0, 0, 1, 0, 0, 1, 0]], dtype=torch.bool)
    assert distances(mask, causal=True).tolist() == [[2, 1, 0, 2, 1, 0, -1]]
    assert distances(mask, causal=False).tolist() == [[2, 1, 0, 1, 1, 0, 1]]
    g = torch.ones(1, 7, 3) * torch.arange(7.0)[None, :, None]  # ||g_t|| = t * sqrt(3)
    tt = through_time(g, mask, causal=True)
    assert tt.distance == [0, 1, 2] and tt.count == [2, 2, 2]
    assert tt.grad_norm == pytest.approx([3.5 * 3**0.5, 2.5 * 3**0.5, 1.5 * 3**0.5])
    short = through_time(g, mask, causal=True, lengths=torch.tensor([3]))
    assert short.count == [1, 1, 1]


def _fit_one_step(cfg, scale_whh: float | None = None):
    """One training step through Lightning with the diagnostics callback; returns (record, module, batch)."""
    quiet_lightning()
    pl.seed_everything(cfg.seed, verbose=False)
    task = build_task(cfg)
    module = SeqModule(cfg, task)
    if scale_whh is not None:
        with torch.no_grad():
            w = module.net.backbone.rnn.weight_hh_l0
            w.mul_(scale_whh / torch.linalg.matrix_norm(w, ord=2))
    start = {k: v.detach().clone() for k, v in module.net.state_dict().items()}
    diag = GradientDiagnostics(1, cfg.out_dir)
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    trainer = pl.Trainer(
        max_steps=1,
        limit_val_batches=0,
        logger=False,
        callbacks=[diag],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        gradient_clip_val=cfg.optim.grad_clip,
        use_distributed_sampler=False,
    )
    trainer.fit(module)
    module.net.load_state_dict(start)
    L = cfg.task.seq_len()
    batch = task.materialize(BatchKey(("train", 0, 0, L, cfg.train.batch_size)), torch.device("cpu"))
    return diag.records[0], module, batch


def test_through_time_matches_unrolled_autograd(out_dir):
    cfg = build_config(
        {},
        tiny_overrides(
            "copy",
            "rnn",
            out_dir,
            **{"task.delay": 6, "model.d_model": 8, "train.batch_size": 3, "optim.grad_clip": 1e-4},
        ),
    )
    rec, module, batch = _fit_one_step(cfg)
    net = module.net
    rnn, head = net.backbone.rnn, net.head
    x = net.encoder(batch.x).detach().requires_grad_()  # (B, T, d): the leaf we differentiate by
    h = torch.zeros(x.shape[0], cfg.model.d_model)
    hs = []
    for t in range(x.shape[1]):  # h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), step by step
        h = torch.tanh(x[:, t] @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0)
        hs.append(h)
    logits = head(torch.stack(hs, 1))  # (B, T, C)
    y = batch.y.masked_fill(~batch.score_mask, IGNORE)
    (g,) = torch.autograd.grad(F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE), x)
    want = g.norm(dim=-1).mean(0)  # (T,)
    got = torch.tensor(rec.through_time.by_position)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-9)
    n_sym = cfg.task.n_symbols
    d = rec.through_time.distance
    assert d[0] == 0 and d[-1] == cfg.task.delay + n_sym  # first symbol (t=0) to the first recall (t=n+delay)
    assert rec.through_time.grad_norm[-1] == pytest.approx(float(want[0]), rel=1e-4)

    net.zero_grad()
    module.task.loss(net(batch)[0], batch).backward()  # full training loss, as in the step
    total = sum(float(p.grad.pow(2).sum()) for p in net.parameters()) ** 0.5
    assert rec.global_grad_norm == pytest.approx(total, rel=1e-4) and total > 100 * 1e-4  # before clipping
    groups = rec.layer_grad_norm
    assert list(groups) == ["encoder.embed", "backbone.rnn.l0", "head"]
    assert sum(v * v for v in groups.values()) == pytest.approx(total**2, rel=1e-4)
    sigma = torch.linalg.matrix_norm(rnn.weight_hh_l0.detach(), ord=2)
    assert rec.w_hh_spectral_norm == {"backbone.rnn.weight_hh_l0": pytest.approx(float(sigma), rel=1e-5)}


def _decay_slope(rec) -> float:
    """Least-squares slope of log ||dL/dx|| against distance, distances 1..end."""
    tt = rec.through_time
    d = torch.tensor(tt.distance[1:], dtype=torch.float64)
    y = torch.tensor(tt.grad_norm[1:], dtype=torch.float64).log()
    d = d - d.mean()
    return float((d * (y - y.mean())).sum() / (d * d).sum())


def test_tanh_rnn_gradient_decays_lstm_with_forget_bias_much_less(tmp_path):
    common = {"task.delay": 12, "model.d_model": 32, "train.batch_size": 16}
    rnn_cfg = build_config({}, tiny_overrides("copy", "rnn", tmp_path / "rnn", **common))
    lstm_cfg = build_config(
        {}, tiny_overrides("copy", "lstm", tmp_path / "lstm", **common, **{"model.forget_bias": 1.0})
    )
    rnn_rec, *_ = _fit_one_step(rnn_cfg, scale_whh=0.5)
    lstm_rec, *_ = _fit_one_step(lstm_cfg)
    rnn_slope, lstm_slope = _decay_slope(rnn_rec), _decay_slope(lstm_rec)
    assert rnn_slope < -1.0  # ||W_hh|| = 0.5 and tanh' <= 1: at most ~e^-1 survives each step back
    assert lstm_slope > rnn_slope / 3  # the forget gate keeps far more of it (about e^-0.15 a step)
    far_rnn = rnn_rec.through_time.grad_norm[-1] / rnn_rec.through_time.grad_norm[1]
    far_lstm = lstm_rec.through_time.grad_norm[-1] / lstm_rec.through_time.grad_norm[1]
    assert far_rnn < 1e-4 < far_lstm


def test_run_writes_diagnostics_file(out_dir):
    cfg = build_config(
        {},
        tiny_overrides(
            "copy",
            "gru",
            out_dir,
            **{"train.max_steps": 5, "diagnostics.gradients": True, "diagnostics.every": 2, "model.n_layers": 2},
        ),
    )
    r = train_run(cfg, progress=False)
    data = read_diagnostics(out_dir / "runs" / r["run_id"])  # the shared typed reader
    recs = data.records
    assert [x.step for x in recs] == [0, 2, 4] and set(data.definitions) >= {"through_time", "distance"}
    for rec in recs:
        assert set(rec.layer_grad_norm) == {"encoder.embed", "backbone.rnn.l0", "backbone.rnn.l1", "head"}
        assert set(rec.w_hh_spectral_norm) == {"backbone.rnn.weight_hh_l0", "backbone.rnn.weight_hh_l1"}
        assert all(v > 0 for v in rec.through_time.grad_norm)
        assert rec.global_grad_norm > 0 and rec.loss > 0
    assert (
        cfg.config_hash()
        == build_config(
            {}, tiny_overrides("copy", "gru", out_dir, **{"train.max_steps": 5, "model.n_layers": 2})
        ).config_hash()
    )  # diagnostics only observe


def test_format_refuses_a_file_of_another_shape_with_the_field_named():
    with pytest.raises(DiagnosticsFormatError, match=r"records\.0\.global_grad_norm: Field required"):
        parse_diagnostics('{"records": [{"step": 0, "layer_grad_norm": {}, "w_hh_spectral_norm": {}}]}')
    with pytest.raises(DiagnosticsFormatError, match="grad_through_time: Extra inputs"):
        parse_diagnostics('{"grad_through_time": {"distance": [0, 1], "norm": [1.0, 0.5]}}')
    with pytest.raises(DiagnosticsFormatError, match="differ in length"):
        parse_diagnostics(
            '{"records": [{"step": 0, "global_grad_norm": 1.0, "layer_grad_norm": {}, '
            '"w_hh_spectral_norm": {}, "through_time": {"distance": [0, 1], "grad_norm": [1.0], '
            '"count": [1, 1], "by_position": []}}]}'
        )


def test_diagnostics_leave_training_unchanged(tmp_path):
    ovs = {"train.max_steps": 3, "eval.test": False}
    a = train_run(build_config({}, tiny_overrides("copy", "lstm", tmp_path / "a", **ovs)), progress=False)
    b = train_run(
        build_config(
            {},
            tiny_overrides(
                "copy", "lstm", tmp_path / "b", **ovs, **{"diagnostics.gradients": True, "diagnostics.every": 1}
            ),
        ),
        progress=False,
    )
    assert a["final"]["val/loss"] == b["final"]["val/loss"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bf16_autocast_on_gpu_trains_and_records_finite_diagnostics(out_dir):
    cfg = build_config(
        {},
        tiny_overrides(
            "copy",
            "lstm",
            out_dir,
            **{
                "train.accelerator": "gpu",
                "train.precision": "bf16-mixed",
                "train.max_steps": 4,
                "diagnostics.gradients": True,
                "diagnostics.every": 2,
            },
        ),
    )
    r = train_run(cfg, progress=False)
    assert r["status"] == "completed" and r["device"].startswith("cuda")
    recs = read_diagnostics(out_dir / "runs" / r["run_id"]).records
    assert all(torch.isfinite(torch.tensor(x.through_time.grad_norm)).all() for x in recs)


def test_diagnostics_refuse_compile_with_the_fix_named(out_dir):
    from seqbench.bench.core.errors import UserError

    with pytest.raises(UserError, match="diagnostics.gradients: .* set train.compile=false"):
        build_config(
            {}, tiny_overrides("copy", "lstm", out_dir, **{"diagnostics.gradients": True, "train.compile": True})
        )


def _backbones() -> list[str]:
    from seqbench.bench.core.registry import MODELS
    from seqbench.models.base import Backbone

    return [e.name for e in MODELS if isinstance(e.cls, type) and issubclass(e.cls, Backbone)]


@pytest.mark.parametrize("model", _backbones())
def test_every_backbone_gets_a_through_time_curve_and_layer_norms(model, out_dir):
    depth = "model.n_levels" if model == "tcn" else "model.n_layers"  # a tcn's depth is n_levels
    cfg = build_config({}, tiny_overrides("copy", model, out_dir, **{depth: 2}))
    rec, *_ = _fit_one_step(cfg)
    tt = rec.through_time
    assert tt.distance[0] == 0 and all(math.isfinite(v) for v in tt.grad_norm)
    groups = list(rec.layer_grad_norm)
    per_layer = [g for g in groups if g.startswith("backbone.")]
    assert len(per_layer) >= 2, groups  # two stacked layers show up as two groups
    assert rec.global_grad_norm**2 == pytest.approx(sum(v * v for v in rec.layer_grad_norm.values()), rel=1e-4)
