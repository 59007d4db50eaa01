"""Delétang et al.'s DCF and CS tasks (duplicate_string, binary_addition, stack_manipulation): targets
against plain-Python references, the layout ``positions(n)``, the exact memoryless baselines against
enumeration and Monte Carlo, rebuilt batches, refused lengths, and one learning check."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from seqbench.bench.cli import main
from seqbench.bench.config import build_config
from seqbench.bench.core.contract import IGNORE
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.train import build_task, train_run
from seqbench.tasks.synthetic.base import BatchKey
from seqbench.tasks.synthetic.binary_addition import little_endian_sum, slot_distribution
from seqbench.tasks.synthetic.stack_manipulation import final_stack, height_distribution

CPU = torch.device("cpu")
TASKS3 = ["duplicate_string", "binary_addition", "stack_manipulation"]
END = 2  # binary_addition's and stack_manipulation's end class


def make(name: str, *overrides: str, seed: int = 0):
    return build_task(build_config({}, [f"task={name}", *overrides, f"seed={seed}"]))


def batch_at(task, n: int, bs: int = 8, split: str = "test", index: int = 0):
    return task.materialize(BatchKey((split, index, 0, n, bs)), CPU)


def answer(x: list[int], y: list[int], n: int) -> list[int]:
    """The scored targets of one row (the input side must carry none)."""
    assert all(t == IGNORE for t in y[: n + 1])
    return [t for t in y[n + 1 :] if t != IGNORE]


# -- references ------------------------------------------------------------------------------


def add_reference(tokens: list[int]) -> list[int]:
    plus = tokens.index(2)
    a = int("".join(map(str, reversed(tokens[:plus]))), 2)
    b = int("".join(map(str, reversed(tokens[plus + 1 :]))), 2)
    assert a > 0 and b > 0
    return [int(c) for c in reversed(f"{a + b:b}")] + [END]


def stack_reference(tokens: list[int]) -> list[int]:
    stack: list[int] = []
    for t in tokens:
        if t == 2:  # POP; ignored on an empty stack
            if stack:
                stack.pop()
        else:  # a stack bit (0, 1) or PUSH 0 / PUSH 1 (3, 4)
            stack.append(t - 3 if t >= 3 else t)
    return stack[::-1] + [END]


# -- (a) targets --------------------------------------------------------------------------


def test_duplicate_string_worked_example_and_random_batches():
    task = make("duplicate_string", "task.alphabet=3")
    b = batch_at(task, 3, bs=64)
    assert b.x.shape == (64, 10)
    for x, y in zip(b.x.tolist(), b.y.tolist()):
        w = x[:3]
        assert all(0 <= s < 3 for s in w) and x[3] == 3 and x[4:] == [4] * 6  # separator, then blanks
        assert answer(x, y, 3) == w + w and all(t != IGNORE for t in y[4:])
    assert torch.equal(b.score_mask, b.y != IGNORE)


def test_little_endian_sum_on_hand_examples():
    def bits(v: int, w: int) -> list[int]:
        return [(v >> i) & 1 for i in range(w)]

    a = torch.tensor([bits(4, 6), bits(9, 6), bits(63, 7)[:6], bits(1, 6)])
    b = torch.tensor([bits(22, 6), bits(32, 6), bits(1, 6), bits(1, 6)])
    s = little_endian_sum(a, b)
    assert s.tolist() == [bits(26, 6), bits(41, 6), bits(64, 6), bits(2, 6)]  # 63 + 1 overflows 6 bits


def test_binary_addition_worked_example_and_random_batches():
    task = make("binary_addition")
    assert add_reference([0, 0, 1, 2, 0, 1, 1, 0, 1]) == [0, 1, 0, 1, 1, END]  # 4 + 22 = 26 (the docstring)
    for n in (3, 4, 9, 33):
        b = batch_at(task, n, bs=256)
        for x, y in zip(b.x.tolist(), b.y.tolist()):
            assert x[:n].count(2) == 1 and x[n] == 3 and x[n + 1 :] == [4] * n
            assert answer(x, y, n) == add_reference(x[:n])
            assert y[n + 1 : n + 1 + len(add_reference(x[:n]))] == add_reference(x[:n])  # from the first slot on


def test_stack_manipulation_worked_examples_and_random_batches():
    worked = torch.tensor([[0, 1, 1, 0, 4, 2, 2], [1, 1, 0, 2, 2, 2, 2]])  # Delétang's examples (+ a POP on empty)
    assert final_stack(worked).tolist() == [[1, 1, 0, END] + [IGNORE] * 4, [END] + [IGNORE] * 7]
    task = make("stack_manipulation")
    for n in (1, 2, 3, 7, 30):
        b = batch_at(task, n, bs=256)
        for x, y in zip(b.x.tolist(), b.y.tolist()):
            assert x[0] in (0, 1) and x[n] == 5 and x[n + 1 :] == [6] * (n + 1)
            assert answer(x, y, n) == stack_reference(x[:n])
            assert y[n + 1 : n + 1 + len(stack_reference(x[:n]))] == stack_reference(x[:n])


# -- (b) layout -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", TASKS3)
def test_positions_is_the_generated_width(name):
    task = make(name)
    shortest, _ = task.cfg.min_length()
    for n in (shortest, shortest + 1, 5, 17, 64):
        key = next(iter(task.loader("test", 4, length=n, n_batches=1)))
        b = task.materialize(key, CPU)
        assert b.x.shape == b.y.shape == b.score_mask.shape == (4, task.cfg.positions(n))
        assert int(b.x.max()) < task.spec.vocab_size and int(b.y[b.score_mask].max()) < task.spec.n_classes
    assert task.cfg.seq_len() == task.cfg.positions(task.cfg.length)
    train = [task.materialize(k, CPU) for k in task.loader("train", 2, n_batches=20)]
    lo, hi = task.cfg.train_lengths()
    assert {b.x.shape[1] for b in train} <= {task.cfg.positions(n) for n in range(lo, hi + 1)}


# -- (c) memoryless baselines -------------------------------------------------------------------


def test_binary_addition_slot_distribution_is_exact():
    for n in range(3, 10):  # every (a, b) the generator can draw, weighted as it draws them
        want = [[0.0] * 3 for _ in range(n)]
        for la in range(1, n - 1):
            lb = n - 1 - la
            w = 1 / ((n - 2) * (2**la - 1) * (2**lb - 1))
            for a, b in itertools.product(range(1, 2**la), range(1, 2**lb)):
                target = [int(c) for c in reversed(f"{a + b:b}")]
                for j, v in enumerate(target):
                    want[j][v] += w
                want[len(target)][END] += w
        got = slot_distribution(n)
        assert all(g == pytest.approx(x, abs=1e-12) for gs, xs in zip(got, want) for g, x in zip(gs, xs)), n


def test_stack_height_distribution_is_exact():
    for n in range(1, 8):
        want = [0.0] * (n + 1)
        starts = [1] if n == 1 else range(1, n)
        for s in starts:
            for acts in itertools.product((2, 3, 4), repeat=n - s):
                h = s
                for a in acts:
                    h = max(h - 1, 0) if a == 2 else h + 1
                want[h] += 1 / (len(starts) * 3 ** (n - s))
        assert height_distribution(n) == pytest.approx(want, abs=1e-12), n


@pytest.mark.parametrize("name, lo, hi", [("binary_addition", 3, 9), ("stack_manipulation", 1, 8)])
def test_baseline_matches_monte_carlo(name, lo, hi):
    """The best per-slot guess (knowing n and the slot, not the input) on generated batches: accuracy
    micro-averaged over the lengths, the loss the mean over lengths of each length's per-token mean."""
    task = make(name, f"task.length_min={lo}", f"task.length={hi}")
    correct = scored = loss = 0.0
    for n in range(lo, hi + 1):
        y = batch_at(task, n, bs=20000, split="val").y[:, n + 1 :]  # (B, answer slots)
        counts = torch.stack([(y == c).sum(0) for c in range(3)], 1).double()  # (slots, 3)
        mass = counts.sum(1, keepdim=True)
        correct += counts.max(1).values.sum().item()
        scored += mass.sum().item()
        p = (counts / mass.clamp_min(1)).clamp_min(1e-300)
        loss += -(counts * p.log()).sum().item() / mass.sum().item()
    base = task.baseline()
    assert base["acc"] == pytest.approx(correct / scored, abs=0.006)
    assert base["loss"] == pytest.approx(loss / (hi - lo + 1), abs=0.01)


def test_baselines_at_the_defaults():
    assert make("duplicate_string").baseline() == pytest.approx({"acc": 0.5, "loss": math.log(2)})
    assert make("duplicate_string", "task.alphabet=5").baseline() == pytest.approx({"acc": 0.2, "loss": math.log(5)})
    assert make("binary_addition").baseline() == pytest.approx({"acc": 0.5084, "loss": 0.7585}, abs=5e-5)
    assert make("stack_manipulation").baseline() == pytest.approx({"acc": 0.4866, "loss": 0.7798}, abs=5e-5)


# -- (d) rebuilt batches ------------------------------------------------------------------------


@pytest.mark.parametrize("name", TASKS3)
def test_the_same_address_rebuilds_the_same_batch(name):
    a, b = make(name, seed=3), make(name, seed=3)
    for key in (("train", 5, 0, 6, 16), ("val", 0, 0, 11, 16)):
        one, two = batch_at(a, key[3], split=key[0], index=key[1]), batch_at(b, key[3], split=key[0], index=key[1])
        assert torch.equal(one.x, two.x) and torch.equal(one.y, two.y) and torch.equal(one.score_mask, two.score_mask)
    assert not torch.equal(batch_at(a, 11, index=0).x, batch_at(a, 11, index=1).x)
    keys = list(a.loader("train", 4, n_batches=6))
    assert [tuple(k) for k in keys] == [tuple(k) for k in b.loader("train", 4, n_batches=6)]
    assert all(torch.equal(a.materialize(k, CPU).x, b.materialize(k, CPU).x) for k in keys)


# -- (e) refused lengths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["task=duplicate_string", "task.length_min=9", "task.length=8"], "task.length_min: 9 exceeds task.length=8"),
        (["task=stack_manipulation", "task.length_min=0"], "task.length_min: Input should be greater"),
        (["task=binary_addition", "task.length_min=2"], "task.length_min: 2 is shorter than task 'binary_addition'"),
        (["task=binary_addition", "task.length=2"], "task.length: Input should be greater than or equal to 3"),
        (["task=binary_addition", "eval.lengths=[2]"], "eval.lengths: 2 is shorter than task 'binary_addition'"),
        (["task=duplicate_string", "eval.lengths=[0]"], "eval.lengths.0: Input should be greater"),
    ],
)
def test_bad_lengths_are_one_line_errors(overrides, message):
    with pytest.raises(UserError) as e:
        build_config(overrides)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


@pytest.mark.parametrize("name, bad", [("duplicate_string", 0), ("binary_addition", 2), ("stack_manipulation", 0)])
def test_run_with_a_bad_eval_length_exits_2_with_one_line(name, bad, tmp_path, capsys):
    code = main(["run", f"task={name}", f"eval.lengths=[{bad}]", "tracking.wandb=off", f"out_dir={tmp_path}"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("note: ")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: eval.lengths") and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name, bad", [("duplicate_string", 0), ("binary_addition", 2), ("stack_manipulation", 0)])
def test_generate_refuses_a_length_below_the_shortest(name, bad):
    with pytest.raises(ValueError, match=f"problem length {bad}"):
        batch_at(make(name), bad)


# -- (f) learning ------------------------------------------------------------------------------


@pytest.mark.slow
def test_lstm_duplicates_short_strings_far_above_the_baseline(out_dir):
    """An LSTM (d_model 64) trained 1500 steps on strings of 1-8 bits: measured val/acc 0.95-0.99 over
    seeds 0-2 (baseline 0.5), 5-10 s on one CPU thread."""
    cfg = build_config(
        {},
        [
            "task=duplicate_string",
            "task.length=8",
            "model=lstm",
            "model.d_model=64",
            "optim.lr=0.01",
            "train.batch_size=64",
            "train.max_steps=1500",
            "train.val_every=500",
            "train.val_batches=8",
            "eval.test=false",
            "tracking.wandb=off",
            "train.early_stop={metric: val/acc, threshold: 0.99}",
            "seed=0",
            f"out_dir={out_dir}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["baseline"]["val/acc"] == pytest.approx(0.5)
    assert r["final"]["val/acc"] >= 0.85, r["final"]
    assert r["final"]["val/loss"] < r["baseline"]["val/loss"] / 4, r["final"]
