"""The MAD probe tasks (fuzzy_recall, noisy_recall, compression, memorization): worked examples, memoryless
baselines checked against the label distribution, and learning by learning on an easy rung.
(Determinism, splits, lengths and facts are covered for every synthetic task by tests/tasks/test_tasks.py.)"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import IGNORE
from seqbench.bench.training.train import train_run
from tests.tasks.test_tasks import first, make


def memoryless_loss(pairs: list[tuple[int, int]]) -> float:
    """Cross-entropy of the best predictor that sees only the current token: the conditional entropy of
    the target given the current token, from (current token, target) pairs."""
    by_token: dict[int, Counter] = defaultdict(Counter)
    for tok, target in pairs:
        by_token[tok][target] += 1
    total = len(pairs)
    return -sum(c * math.log(c / sum(cnt.values())) for cnt in by_token.values() for c in cnt.values()) / total


def scored_pairs(batch) -> list[tuple[int, int]]:
    mask = batch.y != IGNORE
    return list(zip(batch.x[mask].tolist(), batch.y[mask].tolist()))


def test_fuzzy_recall_queries_repeat_the_stored_pairs():
    task = make("fuzzy_recall", vocab=10, n_pairs=3, key_len=3, value_len=2)
    half = 5
    for x, y in zip(*(lambda b: (b.x, b.y))(first(task, bs=16))):
        toks = x[x > 0].tolist()  # the front padding dropped
        assert (x[: len(x) - len(toks)] == 0).all()
        units, cur = [], []  # split into maximal runs of key tokens / value tokens
        for t in toks:
            if cur and (t > half) != (cur[-1] > half):
                units.append(tuple(cur))
                cur = []
            cur.append(t)
        units.append(tuple(cur))
        pairs = list(zip(units[0::2], units[1::2]))
        assert len(pairs) == 6 and all(1 <= len(k) <= 3 and 1 <= len(v) <= 2 for k, v in pairs)
        stored = dict(reversed(pairs[:3]))  # a key drawn twice keeps its first value
        assert sorted(pairs[3:]) == sorted((k, stored[k]) for k, _ in pairs[:3])
        scored = [int(y[i]) for i in range(len(x)) if y[i] != IGNORE]
        assert scored == [t for _, v in pairs[3:] for t in v]  # every queried value token, nothing else


def test_fuzzy_recall_a_repeated_key_keeps_its_first_value():
    from seqbench.tasks.synthetic.fuzzy_recall import first_of_equal

    keys = torch.tensor([[[1, 2], [3, 0], [1, 2], [3, 0], [3, 4]]])
    lengths = torch.tensor([[2, 1, 2, 1, 2]])
    assert first_of_equal(keys, lengths).tolist() == [[0, 1, 0, 1, 4]]


def test_noisy_recall_pairs_sit_among_noise_and_queries_ask_for_them():
    task = make("noisy_recall", vocab=20, noise_vocab=5, n_pairs=3, noise=0.5)
    assert task.cfg.n_noise() == 3 and task.cfg.seq_len() == 2 * 6 + 6
    b = first(task, bs=8)
    for x, y in zip(b.x, b.y):
        ctx = x[:12].view(6, 2).tolist()
        pairs = {k: v for k, v in ctx if k < 20}
        assert len(pairs) == 3 and all(1 <= k < 10 <= v < 20 for k, v in pairs.items())
        assert sum(1 for k, v in ctx if k >= 20 and v >= 20) == 3  # noise comes in pairs of noise tokens
        q = (y != IGNORE).nonzero().flatten().tolist()
        assert len(q) == 3 and all(p >= 12 for p in q)
        assert all(int(y[p]) == pairs[int(x[p])] for p in q)
        rest = [int(x[p]) for p in range(12, 18) if p not in q]
        assert all(20 <= t < 25 for t in rest)


def test_compression_targets_are_the_symbols_before_the_summary():
    task = make("compression", length=5, alphabet=4)
    b = first(task, bs=6)
    assert b.x.shape == (6, 6) and (b.x[:, -1] == 5).all() and torch.equal(b.x[:, :5], b.y)
    longer = first(task, "test", length=9, bs=2)
    assert (longer.x[:, :3] == 4).all() and torch.equal(longer.x[:, 3:8], longer.y)  # blanks in front
    assert task.spec.n_classes == 20


def test_compression_loss_and_accuracy_read_one_position():
    task = make("compression", length=3, alphabet=4)
    b = first(task, bs=5)
    perfect = torch.nn.functional.one_hot(b.y, 4).float().flatten(1) * 50  # (B, length * alphabet)
    assert task.loss(perfect, b).item() < 1e-6
    uniform = torch.zeros(5, 12)
    assert task.loss(uniform, b).item() == pytest.approx(task.baseline()["loss"])
    m = task.metrics()
    task.update_metrics(m, perfect, b)
    assert m["acc"].compute().item() == 1.0


def test_memorization_map_is_the_tasks_not_the_runs():
    a, b = make("memorization", seed=0, n_keys=16, n_values=16), make("memorization", seed=1, n_keys=16, n_values=16)
    assert torch.equal(a.map, b.map)
    assert not torch.equal(a.map, make("memorization", n_keys=16, n_values=16, map_seed=7).map)
    batch = first(a, bs=4)
    assert torch.equal(batch.y[:, 1::2], a.map[batch.x[:, 0::2]]) and (batch.x[:, 1::2] == 16).all()
    own = make("memorization", n_keys=16, n_values="null")  # as many values as keys, MAD's size
    assert own.spec.n_classes == 16 and own.map.max() < 16


@pytest.mark.parametrize(
    "name, fields",
    [
        ("fuzzy_recall", {"vocab": 8, "n_pairs": 3, "key_len": 2, "value_len": 3}),
        ("noisy_recall", {"vocab": 12, "noise_vocab": 3, "n_pairs": 4, "noise": 0.5}),
        ("memorization", {"n_keys": 12, "n_values": 5}),  # a many-to-one map: its entropy, not ln(5)
    ],
)
def test_baseline_is_what_a_memoryless_model_reaches(name, fields):
    task = make(name, **fields)
    b = first(task, "val", bs=4000)
    assert memoryless_loss(scored_pairs(b)) == pytest.approx(task.baseline()["loss"], rel=0.01)
    if name == "memorization":
        counts = Counter(task.map.tolist())
        assert task.baseline()["acc"] == max(counts.values()) / 12 and task.baseline()["loss"] < math.log(5)


def test_compression_baseline_is_the_symbols_entropy():
    task = make("compression", length=4, alphabet=5)
    y = first(task, "val", bs=8000).y
    freq = torch.stack([torch.bincount(y[:, i], minlength=5) for i in range(4)]).double() / len(y)
    assert float(-(freq * freq.log()).sum(1).mean()) == pytest.approx(task.baseline()["loss"], rel=0.01)


LEARN = [
    "train.batch_size=32",
    "train.val_every=50",
    "train.val_batches=4",
    "eval.test=false",
    "tracking.wandb=off",
    "optim.lr=0.01",
    "model.d_model=32",
    "train.early_stop={metric: val/acc, threshold: 0.97}",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        ["task=memorization", "task.n_keys=8", "task.n_values=8", "task.length=8", "model=lstm"],
        ["task=compression", "task.length=3", "task.alphabet=3", "model=lstm"],
        ["task=fuzzy_recall", "task.vocab=8", "task.n_pairs=1", "task.key_len=2", "task.value_len=2", "model=lstm"],
        [
            "task=noisy_recall",
            "task.vocab=8",
            "task.noise_vocab=4",
            "task.n_pairs=2",
            "task.noise=0.25",
            "model=stack",
            "model.mixer=attention",
            "model.n_layers=2",
            "optim.lr=0.003",
        ],
    ],
    ids=["memorization", "compression", "fuzzy_recall", "noisy_recall"],
)
def test_a_tiny_model_solves_an_easy_rung(settings, out_dir):
    r = train_run(build_config({}, LEARN + settings + ["train.max_steps=400", f"out_dir={out_dir}"]), progress=False)
    assert r["solved"] and r["final"]["val/loss"] < r["baseline"]["val/loss"] / 4, r["final"]
