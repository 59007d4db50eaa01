"""State tracking tasks (modular_arithmetic, cycle_navigation, permutation, even_pairs): targets against
plain-Python automata, memoryless baselines by Monte Carlo, batches rebuilt from their address, one-line
errors, and one learning run."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.module import build_task
from seqbench.bench.training.train import train_run
from tests.helpers import run_cli

CPU = torch.device("cpu")
NAMES = ["modular_arithmetic", "cycle_navigation", "permutation", "even_pairs"]


def make(name: str, seed: int = 0, **fields):
    ovs = [f"task={name}", f"seed={seed}"] + [f"task.{k}={v}" for k, v in fields.items()]
    return build_task(build_config({}, ovs))


def batch(task, split="val", length=None, bs=64, start=0):
    key = next(iter(task.loader(split, bs, length=length, n_batches=1, start=start)))
    return task.materialize(key, CPU)


# -- plain-Python automata: the running state after each token ------------------------------------


def running_sum(xs, m):
    return list(itertools.accumulate(xs, lambda s, x: (s + x) % m))


def walk(moves, n):
    return list(itertools.accumulate(moves, lambda pos, move: (pos + move - 1) % n, initial=0))[1:]


def group_elements(group):
    """The permutations in token order, the even ones found by counting cycles (not inversions, as the task does)."""
    k = int(group[1:])

    def even(p):
        seen, cycles = set(), 0
        for i in range(k):
            if i not in seen:
                cycles += 1
                while i not in seen:
                    seen.add(i)
                    i = p[i]
        return (k - cycles) % 2 == 0

    perms = list(itertools.permutations(range(k)))
    return [p for p in perms if even(p)] if group.startswith("A") else perms


def running_product(tokens, group):
    perms = group_elements(group)
    out, state = [], tuple(range(len(perms[0])))
    for t in tokens:
        state = tuple(state[perms[t][i]] for i in range(len(state)))  # state o x: x acts first
        out.append(perms.index(state))
    return out


def even_pairs(symbols):
    s = "".join("ab"[c] for c in symbols)
    return [sum(s[i : i + 2] in ("ab", "ba") for i in range(t - 1)) % 2 for t in range(1, len(s) + 1)]


def reference(name, cfg, xs):
    if name == "modular_arithmetic":
        return running_sum(xs, cfg.modulus)
    if name == "cycle_navigation":
        return walk(xs, cfg.n_states)
    if name == "permutation":
        return running_product(xs, cfg.group)
    return even_pairs(xs)


def test_the_automata_reproduce_the_worked_examples():
    assert running_sum([3, 4, 0, 2, 1, 4], 5) == [3, 2, 2, 4, 0, 4]
    assert walk([2, 0, 1, 0, 0], 5) == [1, 0, 0, 4, 3]  # Delétang: 1 -1 0 -1 -1 -> class 3
    assert running_product([1, 2, 3, 5], "S3") == [1, 4, 0, 5]
    assert running_product([2, 1], "S3")[-1] == 3 and running_product([1, 2], "S3")[-1] == 4
    assert even_pairs([0, 1, 1, 0, 0, 1]) == [0, 1, 1, 0, 0, 1]
    assert len(group_elements("A5")) == 60 and len(group_elements("S5")) == 120 and len(group_elements("Z2")) == 2


def test_the_cayley_table_composes_as_documented():
    from seqbench.tasks.synthetic.permutation import cayley_table, elements

    for group in ("S3", "A4", "A5"):
        assert list(elements(group)) == group_elements(group)
    table = cayley_table("S3")
    assert (table[1][2], table[4][3], table[0][5], table[2][1]) == (4, 0, 5, 3)
    a5 = cayley_table("A5")
    assert all(sorted(row) == list(range(60)) for row in a5)  # a Latin square: every row a permutation


CASES = [
    ("modular_arithmetic", {}),
    ("modular_arithmetic", {"modulus": 7}),
    ("cycle_navigation", {}),
    ("cycle_navigation", {"n_states": 2}),
    ("permutation", {"group": "S3"}),
    ("permutation", {"group": "A5"}),
    ("permutation", {}),
    ("even_pairs", {}),
]


@pytest.mark.parametrize("name, fields", CASES)
@pytest.mark.parametrize("scored", ["every", "last"])
def test_targets_match_the_reference_automaton(name, fields, scored):
    task = make(name, scored=scored, length=12, **fields)
    b = batch(task, length=12, bs=32)
    for x, y, mask in zip(b.x.tolist(), b.y.tolist(), b.score_mask.tolist()):
        ref = reference(name, task.cfg, x)
        if scored == "every":
            assert y == ref and all(mask)
        else:
            assert y[-1] == ref[-1] and mask == [False] * 11 + [True]


@pytest.mark.parametrize(
    "name, field, alt",
    [
        ("modular_arithmetic", "modulus", 7),
        ("modular_arithmetic", "scored", "every"),
        ("cycle_navigation", "n_states", 3),
        ("cycle_navigation", "scored", "every"),
        ("permutation", "group", "A5"),
        ("permutation", "scored", "last"),
        ("even_pairs", "scored", "every"),
    ],
)
def test_every_knob_reaches_the_data(name, field, alt):
    """(The registry-wide knob test perturbs numbers only; these knobs are also names.)"""
    a, b = make(name), make(name, **{field: alt})
    ba, bb = batch(a, length=12), batch(b, length=12)
    same = torch.equal(ba.x, bb.x) and torch.equal(ba.y, bb.y)
    assert a.spec != b.spec or not same, f"task.{field}={alt} changed nothing"


# -- the memoryless baseline, by Monte Carlo ----------------------------------------------------------


def memoryless_estimate(name, n_fit=20000, n_eval=4000, **fields):
    """The best predictor from the current token and its position, fitted on one sample (its table of
    p(answer | position, token)) and scored on fresh batches of every training length through the
    task's own loss and metric: each length's batch loss, averaged over lengths, and accuracy counted
    over all scored positions, as validation does."""
    task = make(name, **fields)
    lo, hi = task.cfg.length_min, task.cfg.length
    every = make(name, **{**fields, "scored": "every"})  # the running state at every position to fit on
    fit = batch(every, "train", length=hi, bs=n_fit)
    C, V = task.spec.n_classes, task.spec.vocab_size
    cells = (fit.x * C + fit.y).T  # (T, B): (token, answer) cell per position
    counts = torch.zeros(hi, V * C).scatter_add_(1, cells, torch.ones(cells.shape)).view(hi, V, C) + 0.5
    logp = (counts / counts.sum(-1, keepdim=True)).log()  # (T, V, C)
    acc, losses = task.metrics()["acc"], []
    for n in range(lo, hi + 1):
        b = batch(task, "val", length=n, bs=n_eval)
        out = logp[torch.arange(n), b.x]  # (B, n, C): the fitted p(answer | position, token)
        losses.append(task.loss(out, b).item())
        task.update_metrics({"acc": acc}, out, b)
    return {"loss": sum(losses) / len(losses), "acc": acc.compute().item()}, task.baseline()


BASELINE_CASES = [
    ("modular_arithmetic", {}),
    ("modular_arithmetic", {"modulus": 3, "length_min": 5, "length": 12}),
    ("cycle_navigation", {}),
    ("cycle_navigation", {"n_states": 2, "length_min": 3, "length": 10}),
    ("permutation", {"group": "S3"}),
    ("permutation", {"group": "A4", "length": 16}),
    ("even_pairs", {}),
]


@pytest.mark.parametrize("name, fields", BASELINE_CASES)
@pytest.mark.parametrize("scored", ["every", "last"])
def test_memoryless_baseline_matches_monte_carlo(name, fields, scored):
    measured, declared = memoryless_estimate(name, scored=scored, **fields)
    assert measured["acc"] == pytest.approx(declared["acc"], abs=0.01)
    assert measured["loss"] == pytest.approx(declared["loss"], abs=0.015)


def test_baselines_at_the_defaults():
    """The numbers the config docstrings quote (S5's 14,400 cells a position are too many to fit by Monte
    Carlo; its derivation is S3's with |G| = 120)."""
    h40 = sum(1 / k for k in range(1, 41))
    expected = {
        "modular_arithmetic": {"acc": 0.22, "loss": 39 * math.log(5) / 40},
        "cycle_navigation": {"acc": 0.23, "loss": 1.5533866},
        "permutation": {"acc": 46.5 / 820, "loss": math.log(120) * (1 - h40 / 40)},
        "even_pairs": {"acc": 0.5125, "loss": 39 * math.log(2) / 40},
    }
    for name, values in expected.items():
        assert make(name).baseline() == pytest.approx(values, rel=1e-6), name


# -- batches rebuilt from their address; lengths drawn per batch ---------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_batch_is_rebuilt_from_its_address_and_lengths_vary(name):
    task = make(name, length_min=3, length=17)
    keys = list(task.loader("train", 4, n_batches=200))
    lengths = [key[3] for key in keys]
    assert min(lengths) >= 3 and max(lengths) <= 17 and len(set(lengths)) == 15
    again = make(name, length_min=3, length=17)  # a fresh task with the same seed: a resumed run
    for i in (0, 7, 199):
        a, b = task.materialize(keys[i], CPU), batch(again, "train", bs=4, start=i)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and a.x.shape[1] == lengths[i]
    assert not torch.equal(batch(task, "train", length=17).x, batch(make(name, seed=1), "train", length=17).x)


# -- bad input: one line, naming the fix --------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_length_range_is_refused_in_one_line(name):
    with pytest.raises(UserError, match=r"^task.length_min: 50 exceeds task.length=10") as e:
        build_config({}, [f"task={name}", "task.length=10", "task.length_min=50"])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "override, field",
    [("task.group=S7", "task.group"), ("task.modulus=1", "task.modulus"), ("task.n_states=1", "task.n_states")],
)
def test_bad_knobs_are_refused_in_one_line(override, field):
    name = {"task.group": "permutation", "task.modulus": "modular_arithmetic", "task.n_states": "cycle_navigation"}
    with pytest.raises(UserError, match=rf"^{field}: ") as e:
        build_config({}, [f"task={name[field]}", override])
    assert "\n" not in str(e.value)


def test_an_unknown_group_names_the_groups_on_the_command_line():
    r = run_cli("run", "task=permutation", "task.group=S7", timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "task.group" in lines[0] and "'S5'" in lines[0] and "'A5'" in lines[0], r.stderr


# -- learning -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_lstm_learns_cycle_navigation(out_dir):
    """A 32-wide LSTM tracks the position on the 5-cycle at every step of lengths 1-20 (measured: val/acc
    0.999 after 200 steps, under a second on one CPU thread; the memoryless baseline is 0.310)."""
    cfg = build_config(
        {},
        [
            "task=cycle_navigation",
            "task.scored=every",
            "task.length=20",
            "model=lstm",
            "model.d_model=32",
            "optim.lr=0.01",
            "train.batch_size=64",
            "train.max_steps=1000",
            "train.val_every=100",
            "train.val_batches=8",
            "train.early_stop={metric: val/acc, threshold: 0.99}",
            "eval.test=false",
            "tracking.wandb=off",
            f"out_dir={out_dir}",
        ],
    )
    r = train_run(cfg, progress=False)
    assert r["final"]["val/acc"] >= 0.95 and r["solved"], r["final"]
    assert r["baseline"]["val/acc"] < 0.35 and r["final"]["val/loss"] < r["baseline"]["val/loss"] / 10
