"""Every config field reaches the code it names (a knob that does nothing is a bug)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqbench.bench.config import build_config
from seqbench.bench.training.module import SeqModule
from seqbench.bench.training.train import build_task


def module_for(*ovs: str) -> SeqModule:
    cfg = build_config({}, ["tracking.wandb=off", "task.delay=4", "task.n_symbols=2", *ovs])
    return SeqModule(cfg, build_task(cfg))


def n_params(m: SeqModule) -> int:
    return sum(p.numel() for p in m.net.parameters())


@pytest.mark.parametrize("model", ["rnn", "irnn", "lstm", "gru"])
def test_recurrent_width_depth_dropout_direction(model):
    base = module_for(f"model={model}", "model.d_model=8")
    assert n_params(module_for(f"model={model}", "model.d_model=16")) > n_params(base)
    deep = module_for(f"model={model}", "model.d_model=8", "model.n_layers=3")
    assert deep.net.backbone.rnn.num_layers == 3 and n_params(deep) > n_params(base)
    drop = module_for(f"model={model}", "model.d_model=8", "model.n_layers=2", "model.dropout=0.3")
    assert drop.net.backbone.rnn.dropout == 0.3 and drop.net.backbone.drop.p == 0.3
    # causal synthetic tasks refuse bidirectional models (test_config), so build one directly
    from seqbench.bench.core.contract import OutputKind, TaskSpec
    from seqbench.models.base import build_model

    spec = TaskSpec(OutputKind.CLASS, n_classes=3, causal=False, vocab_size=5)
    cfg = base.cfg.model.model_validate({**base.cfg.model.model_dump(), "bidirectional": True})
    net = build_model(cfg, spec)
    assert net.backbone.d_out == 16 and net.backbone.rnn.bidirectional
    x = torch.randint(0, 5, (2, 7))
    from seqbench.bench.core.contract import Batch

    out, _ = net(Batch(x=x, y=torch.zeros(2, dtype=torch.long)))
    assert out.shape == (2, 3)
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % 5
    h1, _ = net.backbone(net.encoder(x))
    h2, _ = net.backbone(net.encoder(x2))
    assert not torch.allclose(h1[:, 0], h2[:, 0])  # the first step sees the last token


def test_embedding_learned_vs_onehot():
    learned = module_for("model.embedding=learned")
    onehot = module_for("model.embedding=onehot")
    assert isinstance(learned.net.encoder.embed, nn.Embedding) and onehot.net.encoder.embed is None
    assert onehot.net.backbone.rnn.input_size == onehot.task.spec.vocab_size


def test_irnn_identity_init_and_scale():
    m = module_for("model=irnn", "model.d_model=6", "model.recurrent_init_scale=0.5")
    rnn = m.net.backbone.rnn
    assert rnn.nonlinearity == "relu"
    assert torch.equal(rnn.weight_hh_l0, 0.5 * torch.eye(6))
    assert torch.all(rnn.bias_hh_l0 == 0) and torch.all(rnn.bias_ih_l0 == 0)


@pytest.mark.parametrize("model, gates", [("rnn", 1), ("lstm", 4), ("gru", 3)])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_orthogonal_recurrent_init(model, gates, n_layers):
    ovs = (f"model={model}", "model.d_model=16", f"model.n_layers={n_layers}")
    default = module_for(*ovs).net.backbone.rnn
    ortho = module_for(*ovs, "model.recurrent_init=orthogonal").net.backbone.rnn
    for layer in range(n_layers):
        w = getattr(ortho, f"weight_hh_l{layer}")
        assert w.shape == (gates * 16, 16)
        for block in w.split(16, dim=0):  # each gate's block: all singular values 1
            assert torch.allclose(block @ block.T, torch.eye(16), atol=1e-5)
        # PyTorch's uniform default is not orthogonal (singular values spread over about 0 to
        # 2/sqrt(3)), so the field changed the module
        w0 = getattr(default, f"weight_hh_l{layer}")[:16]
        assert not torch.allclose(w0 @ w0.T, torch.eye(16), atol=0.1)
    assert module_for(*ovs).cfg.model.recurrent_init == "default"
    if model == "lstm":  # the forget bias is still set after the orthogonal init
        assert torch.allclose((ortho.bias_ih_l0 + ortho.bias_hh_l0)[16:32], torch.ones(16))


@pytest.mark.parametrize("fb", [0.0, 1.0, 2.5])
def test_lstm_forget_bias(fb):
    rnn = module_for("model=lstm", "model.d_model=4", f"model.forget_bias={fb}").net.backbone.rnn
    total = rnn.bias_ih_l0 + rnn.bias_hh_l0  # gate order i, f, g, o
    assert torch.allclose(total[4:8], torch.full((4,), fb))


def test_task_fields_change_the_data():
    m = module_for("task.delay=9", "task.n_symbols=3", "task.alphabet=5")
    key = next(iter(m.task.loader("train", 2, n_batches=1)))
    b = m.task.materialize(key, torch.device("cpu"))
    assert b.x.shape == (2, 15) and m.task.spec.vocab_size == 7 and m.task.spec.n_classes == 6


def _lrs(*ovs: str, steps: int = 4) -> list[float]:
    m = module_for(*ovs)
    conf = m.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_warmup_and_schedule_reach_the_optimizer():
    assert _lrs("optim.lr=0.1", "optim.warmup_steps=0")[0] == pytest.approx(0.1)
    warm = _lrs("optim.lr=0.1", "optim.warmup_steps=3")
    assert warm[0] == pytest.approx(0.025) and warm[3] == pytest.approx(0.1)
    cos = _lrs("optim.lr=0.1", "optim.schedule=cosine", "train.max_steps=4")
    assert cos[0] == pytest.approx(0.1) and cos[2] == pytest.approx(0.05) and cos[3] < cos[2]
    lin = _lrs("optim.lr=0.1", "optim.schedule=linear", "train.max_steps=4", "optim.min_lr_ratio=0.5")
    assert lin[2] == pytest.approx(0.075)
    inv = _lrs("optim.lr=0.1", "optim.schedule=inverse_sqrt", "optim.warmup_steps=1", steps=5)
    assert inv[4] == pytest.approx(0.1 * (1 / 4) ** 0.5)


def test_decay_from_makes_a_no_warmup_arm_differ_by_the_warmup_only():
    plain = _lrs("optim.lr=0.1", "optim.schedule=inverse_sqrt", steps=5)
    assert plain[4] == pytest.approx(0.1 * (1 / 4) ** 0.5)  # decays from step 1 without decay_from
    held = _lrs("optim.lr=0.1", "optim.schedule=inverse_sqrt", "optim.decay_from=3", steps=6)
    warm = _lrs("optim.lr=0.1", "optim.schedule=inverse_sqrt", "optim.warmup_steps=3", steps=6)
    assert held[:3] == pytest.approx([0.1] * 3) and warm[:3] != pytest.approx(held[:3])
    decay = [0.1, 0.1 * (3 / 4) ** 0.5, 0.1 * (3 / 5) ** 0.5]  # sqrt(3 / step) from step 3 in both arms
    assert held[3:] == pytest.approx(decay) and warm[3:] == pytest.approx(decay)
    cos = _lrs("optim.lr=0.1", "optim.schedule=cosine", "optim.decay_from=2", "train.max_steps=6", steps=6)
    assert cos[:3] == pytest.approx([0.1] * 3) and cos[4] == pytest.approx(0.05)


@pytest.mark.parametrize(
    "name, cls",
    [("adam", torch.optim.Adam), ("adamw", torch.optim.AdamW), ("sgd", torch.optim.SGD), ("radam", torch.optim.RAdam)],
)
def test_optimizer_choice_and_hyperparameters(name, cls):
    m = module_for(f"optim.optimizer={name}", "optim.weight_decay=0.01", "optim.momentum=0.5")
    opt = m.configure_optimizers()["optimizer"]
    assert type(opt) is cls and opt.param_groups[0]["weight_decay"] == 0.01
    if name == "sgd":
        assert opt.param_groups[0]["momentum"] == 0.5


@pytest.mark.parametrize("name", ["adam", "adamw", "radam"])
def test_betas_reach_the_optimizer(name):
    m = module_for(f"optim.optimizer={name}", "optim.betas=[0.5, 0.98]")
    opt = m.configure_optimizers()["optimizer"]
    assert opt.param_groups[0]["betas"] == (0.5, 0.98)
    default = module_for(f"optim.optimizer={name}").configure_optimizers()["optimizer"]
    assert default.param_groups[0]["betas"] == (0.9, 0.999)


def test_beta2_changes_the_update():
    # the same two gradients give a different second Adam step under beta2 0.5 and 0.999
    # (Adam's step is m_hat / sqrt(v_hat); v_hat weighs the newer, larger gradient by beta2)
    moved = []
    for b2 in (0.5, 0.999):
        p = nn.Parameter(torch.zeros(1))
        m = module_for("optim.optimizer=adam", f"optim.betas=[0.0, {b2}]", "optim.lr=1.0")
        m.net = nn.Module()
        m.net.p = p
        opt = m.configure_optimizers()["optimizer"]
        for g in (1.0, 10.0):
            p.grad = torch.tensor([g])
            opt.step()
        moved.append(p.item())
    assert moved[0] != pytest.approx(moved[1], rel=0.05)


@pytest.mark.parametrize("bad", ["[0.9, 1.0]", "[-0.1, 0.9]", "[0.9]", "[0.9, 0.98, 0.9]", "[false, 0.98]", "0.9"])
def test_betas_refused_out_of_range(bad):
    from seqbench.bench.core.errors import UserError

    with pytest.raises(UserError, match="optim.betas"):
        module_for(f"optim.betas={bad}")


def test_betas_refused_for_sgd():
    from seqbench.bench.core.errors import UserError

    with pytest.raises(UserError, match="optim.betas.*sgd"):
        module_for("optim.optimizer=sgd", "optim.betas=[0.9, 0.98]")
    module_for("optim.optimizer=sgd")  # the default betas are not the user's


def test_transformer_xavier_init():
    ovs = ("model=transformer", "model.d_model=32", "model.n_heads=4", "model.n_layers=2")
    default = module_for(*ovs).net.backbone
    xavier = module_for(*ovs, "model.init=xavier").net.backbone
    linears = [m for m in xavier.stack.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == 2 * 5  # per layer: q, kv, out, two feed-forward layers
    for m in linears:
        assert torch.all(m.bias == 0)
        fan_in = m.in_features
        fan_out = m.out_features if m.out_features != 2 * 32 else 32  # k and v each its own block
        bound = (6 / (fan_in + fan_out)) ** 0.5
        assert m.weight.abs().max() <= bound and m.weight.abs().max() > 0.9 * bound
    # PyTorch's default (kaiming-uniform a=sqrt(5): bound 1/sqrt(fan_in)) has non-zero biases
    assert any(torch.any(m.bias != 0) for m in default.stack.modules() if isinstance(m, nn.Linear))


@pytest.mark.parametrize("name", ["adam", "adamw", "radam"])
def test_beta2_alone_reaches_the_optimizer(name):
    # optim.beta2 is the scalar a sweep can vary (a grid's values are scalars; betas is a list)
    opt = module_for(f"optim.optimizer={name}", "optim.beta2=0.95").configure_optimizers()["optimizer"]
    assert opt.param_groups[0]["betas"] == (0.9, 0.95)
    kept = module_for(f"optim.optimizer={name}", "optim.betas=[0.5, 0.95]", "optim.beta2=0.95")
    assert kept.configure_optimizers()["optimizer"].param_groups[0]["betas"] == (0.5, 0.95)


@pytest.mark.parametrize(
    "args, match",
    [
        (["optim.betas=[0.9, 0.98]", "optim.beta2=0.95"], "optim.beta2: 0.95 and optim.betas.*keep one"),
        (["optim.optimizer=sgd", "optim.beta2=0.95"], "optim.beta2.*sgd"),
        (["optim.beta2=1.0"], "optim.beta2"),
    ],
)
def test_beta2_refused(args, match):
    from seqbench.bench.core.errors import UserError

    with pytest.raises(UserError, match=match):
        module_for(*args)


def test_beta2_unset_keeps_the_config_hash():
    # a field added after runs were recorded: unset, every earlier run keeps its hash
    from seqbench.bench.config import build_config

    assert build_config({}, ["optim.betas=[0.9, 0.999]"]).config_hash() == "1ca4de0cca99"
    assert build_config({}, ["optim.beta2=0.95"]).config_hash() != "1ca4de0cca99"
