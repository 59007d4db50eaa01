"""Seq2seq tasks (reverse, sort) and encoder-decoders (seq2seq, transformer_seq2seq):
batch layout, baselines, decoded metrics, decoding, teacher forcing, knobs, learning."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import pytest
import torch
from sacrebleu.metrics import BLEU

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch, Goal
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.train import build_task, train_run
from seqbench.tasks.synthetic.seq2seq import EOS, SOS, CorpusBLEU, to_text
from seqbench.tasks.synthetic.sort import order_statistic_pmfs
from tests.models.model_probe import VOCAB, build, fingerprint, same, seq2seq_batch, seq2seq_spec, tiny_config

torch.set_num_threads(1)
CPU = torch.device("cpu")


def task_of(name, **over):
    args = [f"task={name}", "model=seq2seq"] + [f"task.{k}={v}" for k, v in over.items()]
    return build_task(build_config({}, args))


def batch_of(task, bs=16, length=None, split="val"):
    return task.materialize(next(iter(task.loader(split, bs, length=length, n_batches=1))), CPU)


# -- tasks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["reverse", "sort"])
def test_batch_layout(name):
    task = task_of(name, length=5, vocab=4)
    b, spec = batch_of(task), task.spec
    assert (spec.pad_id, spec.sos_id, spec.eos_id, spec.vocab_size, spec.n_classes) == (0, SOS, EOS, 7, 7)
    assert b.x.shape == (16, 5) and b.y.shape == b.aux["y_in"].shape == (16, 6)
    assert (b.y[:, -1] == EOS).all() and (b.aux["y_in"][:, 0] == SOS).all()
    assert torch.equal(b.aux["y_in"][:, 1:], b.y[:, :-1])
    want = b.x.flip(1) if name == "reverse" else b.x.sort(1).values
    assert torch.equal(b.y[:, :-1], want)
    assert batch_of(task, length=9).x.shape == (16, 9)  # longer evaluation lengths are free


def test_config_classvars_and_refusals():
    cfg = build_config({}, ["task=reverse", "model=seq2seq"])
    f = cfg.task.facts
    assert (f.causal, f.primary, f.primary_goal) == (False, "exact_match", Goal.MAX)
    with pytest.raises(UserError, match="model.name: 'lstm' cannot produce the seq2seq output"):
        build_config({}, ["task=reverse", "model=lstm"])
    with pytest.raises(UserError, match="model.name: 'seq2seq' cannot produce the tokens output"):
        build_config({}, ["task=copy", "model=seq2seq"])
    with pytest.raises(UserError, match=r"model.decode.beam_width"):
        build_config({}, ["task=reverse", "model=seq2seq", "model.decode.beam_width=0"])
    with pytest.raises(UserError, match="unknown field"):
        build_config({}, ["task=copy", "model=lstm", "model.decode.beam_width=2"])


def test_reverse_baseline():
    base = task_of("reverse", length=4, vocab=3).baseline()
    assert base["loss"] == pytest.approx(4 * math.log(3) / 5)
    assert base["token_acc"] == pytest.approx((4 / 3 + 1) / 5)
    assert base["exact_match"] == pytest.approx(3**-4)


def test_sort_baseline_matches_sampled_order_statistics():
    T, V = 6, 4
    pmfs = torch.tensor(order_statistic_pmfs(T, V))  # (T, V)
    torch.testing.assert_close(pmfs.sum(1), torch.ones(T, dtype=pmfs.dtype))
    draws = torch.randint(0, V, (40000, T), generator=torch.Generator().manual_seed(0)).sort(1).values
    freq = torch.stack([(draws == v).double().mean(0) for v in range(V)], 1)  # (T, V)
    assert (freq - pmfs).abs().max() < 0.01
    base = task_of("sort", length=T, vocab=V).baseline()
    # the most likely sorted output under no memory: brute force over all V^T sources
    counts = {}
    for src in itertools.product(range(V), repeat=T):
        key = tuple(sorted(src))
        counts[key] = counts.get(key, 0) + 1
    assert base["exact_match"] == pytest.approx(max(counts.values()) / V**T)
    assert base["token_acc"] == pytest.approx((float(pmfs.max(1).values.sum()) + 1) / (T + 1))


# -- metrics on decoded output ----------------------------------------------------------------
class FixedOutput(torch.nn.Module):
    """Stands in for a model: generate() returns the given rows (``greedy``: the rows of a greedy
    decode when the model's beam is wider), whatever out says; score() is a stand-in likelihood:
    minus the number of tokens that differ from the reference."""

    def __init__(self, rows, greedy=None, beam_width=1):
        super().__init__()
        self.rows, self.greedy = rows, greedy
        self.cfg = SimpleNamespace(decode=SimpleNamespace(beam_width=beam_width))
        self.scored: list[torch.Tensor] = []

    def generate(self, batch, max_len=None, beam_width=None):
        return self.greedy if beam_width == 1 and self.greedy is not None else self.rows

    def score(self, batch, tokens):
        self.scored.append(tokens)
        return -(tokens != batch.y).sum(1).float()


def test_metrics_score_decoded_output_not_teacher_forced_logits():
    task = task_of("reverse", length=6, vocab=5)
    b = batch_of(task, bs=8)
    perfect_logits = torch.nn.functional.one_hot(b.y, task.spec.n_classes).float() * 10
    m = task.metrics()
    task.update_metrics(m, perfect_logits, b, net=FixedOutput(b.y))
    got = {k: float(v.compute()) for k, v in m.items()}
    decoded = {k: got.pop(k) for k in ("logprob", "beam_logprob_gain", "beam_share_better", "beam_em_gain")}
    assert got == {"token_acc": 1.0, "exact_match": 1.0, "bleu": 100.0}
    assert set(decoded.values()) == {0.0}  # the reference itself (likelihood 0 here); a greedy model: no gain
    wrong = b.y.clone()
    wrong[:4, 0] = 3 + (wrong[:4, 0] - 2) % 5  # half the rows get one wrong symbol
    m = task.metrics()
    task.update_metrics(m, perfect_logits, b, net=FixedOutput(wrong))
    assert float(m["exact_match"].compute()) == 0.5
    assert float(m["token_acc"].compute()) == pytest.approx(1 - 4 / (8 * 7))
    assert float(m["bleu"].compute()) < 100
    short = b.y[:, :3]  # stopped early: missing tokens count as wrong
    m = task.metrics()
    task.update_metrics(m, perfect_logits, b, net=FixedOutput(short))
    assert float(m["exact_match"].compute()) == 0.0
    with pytest.raises(ValueError, match="needs a model with generate"):
        task.update_metrics(task.metrics(), perfect_logits, b, net=None)


def test_decoder_metrics_compare_the_decoded_output_with_greedy_on_the_same_model():
    task = task_of("reverse", length=6, vocab=5)
    b = batch_of(task, bs=8)
    wrong = lambda rows, n: torch.where(rows < 3, rows, 3 + (rows - 2) % 5) if n else rows  # noqa: E731
    greedy = b.y.clone()
    greedy[:4, :2] = wrong(greedy[:4, :2], 1)  # rows 0-3: two wrong symbols; rows 4-7 right
    beam = b.y.clone()
    beam[:2, :1] = wrong(beam[:2, :1], 1)  # rows 0-1: one wrong; rows 2-3 repaired; 4-7 right
    beam[6:, :1] = wrong(beam[6:, :1], 1)  # rows 6-7: beam search lost the greedy (right) path
    net = FixedOutput(beam, greedy=greedy, beam_width=4)
    m = task.metrics()
    task.update_metrics(m, None, b, net=net)
    got = {k: float(v.compute()) for k, v in m.items()}
    assert got["logprob"] == pytest.approx(-4 / 8)  # the decoded (beam) rows' likelihood: 4 wrong tokens
    assert got["beam_logprob_gain"] == pytest.approx((-4 - -8) / 8)  # beam -4 against greedy -8
    assert got["beam_share_better"] == pytest.approx(4 / 8)  # rows 0-3 strictly better; 6-7 worse, 4-5 tied
    assert got["exact_match"] == pytest.approx(4 / 8) and got["beam_em_gain"] == pytest.approx(4 / 8 - 4 / 8)
    assert any(torch.equal(t, greedy) for t in net.scored)  # the greedy rows were scored, not assumed
    # the same rows from a greedy model: no gain is claimed
    m = task.metrics()
    task.update_metrics(m, None, b, net=FixedOutput(beam, greedy=greedy, beam_width=1))
    assert float(m["beam_logprob_gain"].compute()) == 0.0 and float(m["beam_share_better"].compute()) == 0.0


def test_corpus_bleu_accumulates_to_sacrebleus_corpus_score():
    g = torch.Generator().manual_seed(0)
    hyps = [torch.randint(3, 8, (5, 9), generator=g) for _ in range(3)]
    refs = [torch.randint(3, 8, (5, 9), generator=g) for _ in range(3)]
    metric = CorpusBLEU()
    for h, r in zip(hyps, refs):
        metric.update(to_text(h), to_text(r))
    all_h = sum((to_text(h) for h in hyps), [])
    all_r = sum((to_text(r) for r in refs), [])
    assert float(metric.compute()) == pytest.approx(BLEU(tokenize="none").corpus_score(all_h, [all_r]).score, abs=1e-4)
    assert to_text(torch.tensor([[4, 5, EOS, 0, 0]])) == ["4 5"]


# -- models ------------------------------------------------------------------------------------
VARIANTS = [("seq2seq", {"attention": a, "cell": c}) for a in ("none", "bahdanau", "dot") for c in ("lstm", "gru")]
VARIANTS += [
    ("seq2seq", {"n_layers": 2, "attention": "bahdanau"}),
    ("transformer_seq2seq", {}),
    ("transformer_seq2seq", {"norm_position": "post", "n_layers": 2}),
]
VIDS = [f"{n}-" + "-".join(f"{k}={v}" for k, v in o.items()) for n, o in VARIANTS]


@pytest.mark.parametrize("name,over", VARIANTS, ids=VIDS)
def test_teacher_forced_forward_equals_step_by_step_decoding(name, over):
    net = build(tiny_config(name, **over), seq2seq_spec()).eval()
    b = seq2seq_batch()
    logits, _ = net(b)
    assert logits.shape == (4, 7, VOCAB)
    state, steps = net.encode(b), []
    for t in range(b.aux["y_in"].shape[1]):
        step_logits, state = net.step(b.aux["y_in"][:, t], state)
        steps.append(step_logits)
    torch.testing.assert_close(torch.stack(steps, 1), logits, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name,over", VARIANTS[::2], ids=VIDS[::2])
def test_beam_width_one_is_greedy_and_wider_beams_are_at_least_as_likely(name, over):
    net = build(tiny_config(name, **over), seq2seq_spec()).eval()
    b = seq2seq_batch(B=8)
    greedy = net.generate(b, max_len=7)
    assert torch.equal(net.generate(b, max_len=7, beam_width=1), greedy)
    after_eos = net.live_mask(greedy) == 0
    assert (greedy[after_eos] == 0).all()  # pad after <eos>
    g_score = net.score(b, greedy)
    for k in (3, 5):
        beam = net.generate(b, max_len=7, beam_width=k)
        assert (net.score(b, beam) >= g_score - 1e-4).float().mean() >= 0.75
        assert net.score(b, beam).mean() >= g_score.mean() - 1e-4


@pytest.mark.parametrize("name", ["seq2seq", "transformer_seq2seq"])
def test_exhaustive_beam_finds_the_most_likely_output(name):
    net = build(tiny_config(name), seq2seq_spec()).eval()
    b = seq2seq_batch(B=3, S=4)
    L = 3  # V^L = 343 outputs: a beam that wide keeps every prefix, so it is exact search
    every = torch.tensor(list(itertools.product(range(VOCAB), repeat=L)))  # (343, L)
    best = []
    for i in range(3):
        row = Batch(x=b.x[i : i + 1].expand(len(every), -1), y=every, aux={})
        cut = net.live_mask(every)
        scores = net.score(row, every)
        # one score per distinct output: drop tokens after <eos> by requiring pads there
        canonical = ((every * cut.long()) == every).all(1)
        best.append(float(scores.masked_fill(~canonical, float("-inf")).max()))
    beam = net.generate(b, max_len=L, beam_width=VOCAB**L)
    torch.testing.assert_close(net.score(b, beam), torch.tensor(best), atol=1e-4, rtol=0)
    assert (net.score(b, net.generate(b, max_len=L)) <= net.score(b, beam) + 1e-5).all()


def test_an_encoder_without_positions_sees_the_source_as_a_bag_of_tokens():
    """source_pos_encoding=none: permuting the source permutes nothing the decoder sees (its outputs
    stay the same); with positions they change."""
    b = seq2seq_batch(B=4)
    perm = torch.tensor([3, 0, 4, 1, 2, 5])[: b.x.shape[1]]
    shuffled = Batch(x=b.x[:, perm], y=b.y, lengths=b.lengths, aux=b.aux)
    bag = build(tiny_config("transformer_seq2seq", source_pos_encoding="none"), seq2seq_spec()).eval()
    torch.testing.assert_close(bag(b)[0], bag(shuffled)[0], atol=1e-5, rtol=1e-4)
    ordered = build(tiny_config("transformer_seq2seq"), seq2seq_spec()).eval()
    assert not torch.allclose(ordered(b)[0], ordered(shuffled)[0], atol=1e-3)
    assert ordered.src_pos is ordered.pos and bag.src_pos is not bag.pos  # a learned table stays shared by default


def test_teacher_forcing_ratio_feeds_own_predictions_and_decays():
    b = seq2seq_batch()
    full = build(tiny_config("seq2seq"), seq2seq_spec())
    none = build(tiny_config("seq2seq", teacher_forcing=0.0), seq2seq_spec())
    torch.testing.assert_close(full.eval()(b)[0], none.eval()(b)[0])  # evaluation is always teacher forced
    assert not torch.allclose(full.train()(b)[0], none.train()(b)[0])
    decay = build(
        tiny_config("seq2seq", teacher_forcing=1.0, teacher_forcing_end=0.2, teacher_forcing_decay_steps=4),
        seq2seq_spec(),
    ).train()
    ratios = []
    for _ in range(6):
        ratios.append(round(decay.teacher_forcing_ratio(), 6))
        decay(b)
    assert ratios == [1.0, 0.8, 0.6, 0.4, 0.2, 0.2]
    decay.eval()(b)
    assert int(decay.train_batches) == 6  # evaluation does not advance the schedule


def test_decode_config_reaches_generate(monkeypatch):
    b = seq2seq_batch()
    net = build(tiny_config("seq2seq", decode={"max_len": 2}), seq2seq_spec()).eval()
    assert net.generate(b, max_len=7).shape[1] <= 2  # the config wins over the task's length
    net = build(tiny_config("seq2seq", decode={"beam_width": 3}), seq2seq_spec()).eval()
    widths = []
    monkeypatch.setattr(type(net), "beam", lambda self, batch, L, k: widths.append(k) or batch.y)
    net.generate(b)
    assert widths == [3]


KNOBS = [
    ("seq2seq", f, v)
    for f, v in [
        ("d_model", 8),
        ("n_layers", 2),
        ("dropout", 0.5),
        ("embedding", "onehot"),
        ("cell", "gru"),
        ("attention", "none"),
        ("attention", "bahdanau"),
        ("teacher_forcing", 0.0),
        ("teacher_forcing_end", 0.0),
        ("decode", {"max_len": 3}),
    ]
]  # beam_width: see the test above
KNOBS += [
    ("transformer_seq2seq", f, v)
    for f, v in [
        ("d_model", 8),
        ("n_heads", 4),
        ("n_layers", 2),
        ("d_ff", 8),
        ("dropout", 0.5),
        ("norm_position", "post"),
        ("norm_position", "rezero"),
        ("norm", "rmsnorm"),
        ("pos_encoding", "none"),
        ("source_pos_encoding", "none"),
        ("source_pos_encoding", "learned"),
        ("embedding", "onehot"),
        ("decode", {"max_len": 1}),
    ]
]  # the untrained tiny model stops after 2 tokens: a cap must be shorter to show


@pytest.mark.parametrize("name,field,value", KNOBS, ids=[f"{n}-{f}={v}" for n, f, v in KNOBS])
def test_every_seq2seq_knob_reaches_the_model(name, field, value):
    b = seq2seq_batch(B=6)
    over = {"teacher_forcing": 0.5, "teacher_forcing_decay_steps": 1} if field == "teacher_forcing_end" else {}
    base = fingerprint(build(tiny_config(name, **over), seq2seq_spec()), b)
    other = fingerprint(build(tiny_config(name, **over, **{field: value}), seq2seq_spec()), b)
    assert not same(base, other)


@pytest.mark.parametrize("task,model", [("reverse", "seq2seq"), ("sort", "transformer_seq2seq")])
def test_runs_end_to_end(task, model, tmp_path):
    cfg = build_config(
        {},
        [
            f"task={task}",
            f"model={model}",
            "task.length=5",
            "model.d_model=16",
            "model.n_layers=1",
            "train.max_steps=2",
            "train.batch_size=4",
            "train.val_batches=1",
            "eval.test_batches=1",
            "eval.lengths=[7]",
            "model.decode.beam_width=2",
            "tracking.wandb=off",
            f"out_dir={tmp_path}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["status"] == "completed"
    assert {"val/token_acc", "val/exact_match", "val/bleu", "test@7/exact_match"} <= set(r["final"])
    assert {"val/logprob", "val/beam_logprob_gain", "val/beam_share_better", "val/beam_em_gain"} <= set(r["final"])
    assert r["final"]["val/logprob"] < 0 and r["final"]["val/beam_logprob_gain"] > -1e-3  # beam 2 vs greedy


# -- learning -----------------------------------------------------------------------------------
def _learn(tmp_path, length, attention, steps):
    cfg = build_config(
        {},
        [
            "task=reverse",
            f"task.length={length}",
            "task.vocab=8",
            "model=seq2seq",
            f"model.attention={attention}",
            "model.d_model=64",
            "optim.lr=3e-3",
            "train.batch_size=64",
            f"train.max_steps={steps}",
            f"train.val_every={steps}",
            "train.val_batches=4",
            "eval.test=false",
            "tracking.wandb=off",
            f"out_dir={tmp_path}",
            f"run_id={attention}{length}",
        ],
    )
    return train_run(cfg, progress=False)


@pytest.mark.slow
def test_seq2seq_with_attention_learns_reverse(tmp_path):
    r = _learn(tmp_path, 8, "dot", 300)
    assert r["final"]["val/exact_match"] >= 0.9 and r["solved"]


@pytest.mark.slow
def test_without_attention_the_bottleneck_hurts_at_a_longer_length(tmp_path):
    with_attention = _learn(tmp_path, 16, "dot", 400)["final"]
    bottleneck = _learn(tmp_path, 16, "none", 400)["final"]
    assert with_attention["val/exact_match"] >= bottleneck["val/exact_match"] + 0.3
    assert with_attention["val/token_acc"] >= bottleneck["val/token_acc"] + 0.15
