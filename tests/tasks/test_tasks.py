"""Synthetic tasks: determinism, disjoint splits, worked examples, memoryless baselines."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import IGNORE, Goal, OutputKind
from seqbench.bench.core.registry import TASKS
from seqbench.bench.training.train import build_task
from seqbench.tasks.synthetic.base import SyntheticTask
from tests.helpers import TINY_TASK

CPU = torch.device("cpu")
SYNTHETIC = [e.name for e in TASKS if issubclass(e.cls, SyntheticTask)]


def make(name: str, seed: int = 0, **fields):
    ovs = [f"task={name}"] + [f"task.{k}={v}" for k, v in {**TINY_TASK.get(name, {}), **fields}.items()]
    if TASKS.get(name).config_cls.facts.output_kind is OutputKind.SEQ2SEQ:
        from tests.bench.test_config import _seq2seq_model

        ovs.append(f"model={_seq2seq_model()}")
    return build_task(build_config({}, ovs + [f"seed={seed}"]))


def first(task, split="train", length=None, bs=8):
    key = next(iter(task.loader(split, bs, length=length, n_batches=1)))
    return task.materialize(key, CPU)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_batches_are_deterministic_and_splits_differ(name):
    a, b = first(make(name)), first(make(name))
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not torch.equal(first(make(name), "val").x, a.x)
    assert not torch.equal(first(make(name, seed=1)).x, a.x)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_length_is_a_sampling_argument(name):
    task = make(name)
    drawn = task.cfg.train_lengths()
    if drawn is None:  # one training length: every training batch has seq_len positions
        L = task.cfg.seq_len()
        assert first(task).x.shape[1] == L
    else:  # a range: each training batch has the positions of one problem length in it
        L = drawn[1]
        widths = {b[3] for b in task.loader("train", 2, n_batches=50)}
        assert widths <= set(range(drawn[0], drawn[1] + 1)) and len(widths) > 1
        assert first(task).x.shape[1] in {task.cfg.positions(n) for n in range(drawn[0], drawn[1] + 1)}
    assert first(task, "test", length=L + 6).x.shape[1] == task.cfg.positions(L + 6)


def test_copy_worked_example_layout():
    task = make("copy", n_symbols=3, alphabet=4, delay=4)
    b = first(task, bs=2)
    x, y = b.x[0], b.y[0]
    assert x.shape[0] == 10  # delay + 2 * n_symbols
    assert torch.all((1 <= x[:3]) & (x[:3] <= 4))
    assert x[6] == 5 and torch.all(x[3:6] == 0) and torch.all(x[7:] == 0)  # delimiter after delay-1 blanks
    assert torch.equal(y[-3:], x[:3]) and torch.all(y[:-3] == 0)
    assert b.score_mask[0].sum() == 3


def test_copy_memoryless_baseline_matches_formula():
    task = make("copy", n_symbols=10, alphabet=8, delay=50)
    b = first(task, bs=16)
    # best memoryless predictor: blank with certainty, uniform over symbols at recall steps
    logits = torch.full((*b.y.shape, 9), -1e9)
    logits[..., 0] = 0.0
    logits[:, -10:, :] = -1e9
    logits[:, -10:, 1:] = 0.0
    loss = F.cross_entropy(logits.flatten(0, 1), b.y.flatten())
    assert task.baseline()["loss"] == pytest.approx(10 * math.log(8) / 70)
    assert loss.item() == pytest.approx(task.baseline()["loss"], rel=1e-5)


def test_adding_baseline_is_one_sixth():
    task = make("adding", length=50)
    key = next(iter(task.loader("val", 20000, n_batches=1)))
    b = task.materialize(key, CPU)
    assert b.x.shape == (20000, 50, 2) and torch.all(b.x[..., 1].sum(1) == 2)
    mse = ((b.y - 1.0) ** 2).mean().item()
    assert task.baseline()["mse"] == pytest.approx(1 / 6)
    assert mse == pytest.approx(1 / 6, abs=0.006)  # not 0.1767


def test_selective_copy_targets_are_the_scattered_symbols_in_order():
    task = make("selective_copy", length=12, n_symbols=3, alphabet=5)
    b = first(task, bs=4)
    for x, y in zip(b.x, b.y):
        symbols = x[:12][x[:12] > 0]
        assert len(symbols) == 3
        assert torch.equal(y[-3:], symbols) and torch.all(y[:-3] == IGNORE)
        assert torch.all(x[12:] == 6)


def test_assoc_recall_queries_ask_for_stored_values():
    task = make("assoc_recall", vocab=20, n_pairs=3, length=12)
    b = first(task, bs=4)
    for x, y in zip(b.x, b.y):
        pairs = {int(x[i]): int(x[i + 1]) for i in range(0, 6, 2)}
        assert len(pairs) == 3 and all(1 <= k < 10 for k in pairs) and all(10 <= v < 20 for v in pairs.values())
        q = (y != IGNORE).nonzero().flatten()
        assert len(q) == 3
        for pos in q:
            assert int(y[pos]) == pairs[int(x[pos])]


def test_induction_answer_is_the_token_after_the_first_trigger():
    task = make("induction", vocab=5, length=9)
    b = first(task, bs=64)
    trigger = 5
    for x, y in zip(b.x, b.y):
        (where,) = (x[:-1] == trigger).nonzero().flatten().tolist()  # exactly one earlier trigger
        assert int(x[-1]) == trigger and where <= len(x) - 3
        scored = (y != IGNORE).nonzero().flatten().tolist()
        assert scored == [len(x) - 1] and int(y[-1]) == int(x[where + 1]) < trigger
    longer = first(task, "test", length=40, bs=4)
    assert longer.x.shape[1] == 40 and (longer.y != IGNORE).sum() == 4


@pytest.mark.parametrize("name", TASKS.names())
def test_metric_objects_are_the_declared_metrics(name):
    """A task's facts are its one declaration: the metric objects it builds carry exactly its declared
    names (no setup needed: metric objects depend on the config only)."""
    e = TASKS.get(name)
    facts = e.config_cls.facts
    assert set(e.cls(e.config_cls()).metrics()) == set(facts.names) - {"loss"}
    assert facts.goal("val/loss") is Goal.MIN and facts.goal(f"test@999/{facts.primary}") is facts.primary_goal


@pytest.mark.parametrize("name", SYNTHETIC)
def test_spec_and_baseline_follow_the_facts(name):
    task = make(name)
    facts = task.cfg.facts
    assert (task.spec.output_kind, task.spec.causal) == (facts.output_kind, facts.causal)
    assert set(task.baseline()) <= set(facts.names) and facts.primary in task.baseline()


@pytest.mark.parametrize("name", SYNTHETIC)
def test_baseline_and_solved_are_reported(name):
    task = make(name)
    base = task.baseline()
    assert "loss" in base and base["loss"] > 0
    facts = task.cfg.facts
    primary = f"val/{facts.primary}"
    good = 1.0 if facts.primary_goal is Goal.MAX else 0.0
    assert task.solved({primary: good}) and not task.solved({primary: base[facts.primary]})
