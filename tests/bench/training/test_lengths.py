"""Length generalisation as an axis: training lengths drawn from a range, the per-length curve in
results.json, the run's closing line, and compare's accuracy-against-length table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.lengths import length_curve, length_phrase
from seqbench.bench.core.registry import TASKS
from seqbench.bench.training.flops import flops_per_token
from seqbench.bench.training.train import build_task, train_run
from tests.helpers import run_cli


def solved_at_95(m, split):
    return m[f"{split}/acc"] >= 0.95


# -- the curve ----------------------------------------------------------------------------------


def test_the_curve_stops_at_the_first_unsolved_length_even_when_a_longer_one_is_solved_again():
    final = {"test/acc": 0.99, "test@60/acc": 0.97, "test@80/acc": 0.5, "test@120/acc": 0.96}
    c = length_curve(final, "acc", (1, 40), [120, 60, 80], solved_at_95)
    assert [p["length"] for p in c["per_length"]] == [None, 60, 80, 120]
    assert [p["solved"] for p in c["per_length"]] == [True, True, False, True]
    assert c["generalises_up_to"] == 60
    assert length_phrase(c).startswith("generalises up to length 60 (trained on 1-40)")


def test_a_run_that_fails_its_training_lengths_generalises_nowhere():
    c = length_curve({"test/acc": 0.6, "test@80/acc": 0.99}, "acc", (40, 40), [80], solved_at_95)
    assert c["generalises_up_to"] is None
    assert length_phrase(c) == "not solved at its training lengths (40): acc 0.60 at 40, 0.99 @80"


def test_solved_everywhere_and_solved_only_where_trained_read_differently():
    every = length_curve({"test/acc": 1.0, "test@80/acc": 1.0}, "acc", (1, 40), [80], solved_at_95)
    only = length_curve({"test/acc": 1.0, "test@80/acc": 0.5}, "acc", (1, 40), [80], solved_at_95)
    assert every["generalises_up_to"] == 80 and "the longest evaluated" in length_phrase(every)
    assert only["generalises_up_to"] == 40 and "its training length 40 only" in length_phrase(only)
    assert length_curve({"val/acc": 1.0}, "acc", (1, 40), [80], solved_at_95) is None  # never tested


# -- training lengths from a range --------------------------------------------------------------


def test_training_batches_draw_lengths_over_the_whole_range_and_rebuild_the_same():
    cfg = build_config(["task=parity", "task.length=12", "task.length_min=3"])
    task = build_task(cfg)
    keys = list(task.loader("train", 8, n_batches=400))
    lengths = [k[3] for k in keys]
    assert set(lengths) == set(range(3, 13))  # every length of the range is drawn, no other
    again = list(task.loader("train", 8, n_batches=400))
    assert again == keys
    import torch

    a, b = task.materialize(keys[7], torch.device("cpu")), task.materialize(again[7], torch.device("cpu"))
    assert a.x.shape == (8, lengths[7]) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    fixed = list(task.loader("test", 8, length=30, n_batches=5))
    assert {k[3] for k in fixed} == {30}  # an eval.lengths entry is one fixed length


def test_a_range_costs_tokens_at_its_mean_length_and_leaves_flops_uncounted():
    cfg = build_config(["task=parity", "task.length=40", "task.length_min=1", "model=transformer"])
    assert cfg.task.mean_train_positions() == pytest.approx(20.5)
    assert flops_per_token(cfg, build_task(cfg).spec) is None  # the work per token varies by batch
    one = build_config(["task=parity", "task.length=40", "task.length_min=40", "model=transformer"])
    assert flops_per_token(one, build_task(one).spec) is not None


@pytest.mark.parametrize(
    "overrides, field",
    [
        (["task.length=10", "task.length_min=20"], "task.length_min: 20 exceeds task.length=10"),
        (["task.length_min=0"], "task.length_min"),
        (["eval.lengths=[0]"], "eval.lengths"),
    ],
)
def test_an_empty_or_impossible_range_is_refused_in_one_line(overrides, field):
    with pytest.raises(UserError) as e:
        build_config(["task=parity", *overrides])
    assert field in str(e.value) and "\n" not in str(e.value).strip()


def test_every_range_task_refuses_a_minimum_below_what_it_can_build():
    for entry in TASKS:
        cfg_cls = entry.config_cls
        if "length_min" not in cfg_cls.model_fields:
            continue
        shortest, _ = cfg_cls().min_length()
        if shortest > 1:
            with pytest.raises(UserError, match="task.length_min"):
                build_config([f"task={entry.name}", f"task.length_min={shortest - 1}"])


# -- a run: learning, the curve in results.json, the closing line ---------------------------------


def test_an_lstm_learns_parity_and_its_results_carry_the_curve(out_dir):
    """Learning tested by learning: a small LSTM trained on parity at lengths 1-20 solves it and still
    solves it at 60 (the recurrence computes parity at any length), far above the memoryless 0.5."""
    cfg = build_config(
        [
            "task=parity",
            "task.length=20",
            "model=lstm",
            "model.d_model=32",
            "optim.lr=0.01",
            "train.batch_size=32",
            "train.max_steps=1500",
            "train.val_every=50",
            "train.early_stop={metric: val/acc, threshold: 0.99}",
            "eval.lengths=[60]",
            "tracking.wandb=off",
            "seed=3",
            f"out_dir={out_dir}",
        ]
    )
    r = train_run(cfg, progress=False)
    curve = r.results["length_generalisation"]
    assert curve["trained"] == [1, 20] and curve["metric"] == "acc"
    assert [p["length"] for p in curve["per_length"]] == [None, 60]
    assert curve["per_length"][1]["value"] == r.final["test@60/acc"] > 0.95
    assert curve["generalises_up_to"] == 60
    on_disk = json.loads((r.run_dir / "results.json").read_text())
    assert on_disk["length_generalisation"] == curve


def test_the_run_command_closes_with_how_far_it_generalises(tmp_path):
    p = run_cli(
        "run",
        "task=parity",
        "task.length=8",
        "model=lstm",
        "model.d_model=8",
        "train.max_steps=2",
        "train.val_every=2",
        "eval.lengths=[16]",
        "eval.test_batches=1",
        "tracking.wandb=off",
        f"out_dir={tmp_path}",
    )
    assert p.returncode == 0, p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if "@16" in ln]
    # two steps learn nothing: the line says so, with the training range and the evaluated length
    assert line.strip().startswith("not solved at its training lengths (1-8): acc ")


def test_a_bad_range_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    p = run_cli("run", "task=parity", "task.length=5", "task.length_min=9", f"out_dir={tmp_path}")
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "task.length_min" in p.stderr
    assert not (tmp_path / "runs").exists()


# -- compare: accuracy against length ------------------------------------------------------------


def test_compare_prints_the_metric_against_length_for_each_configuration():
    from seqbench.reports.headline import length_text

    rows = []
    for trial, model, acc in [(0, "lstm", 1.0), (1, "transformer", 0.5)]:
        for seed in (0, 1):
            rows.append(
                {
                    "trial": trial,
                    "seed": seed,
                    "state": "COMPLETE",
                    "param.model.name": model,
                    "final.test/acc": 1.0,
                    "final.test@100/acc": acc,
                    "final.test@200/acc": acc - 0.01 * seed,
                }
            )
    lines = length_text(pd.DataFrame(rows), "acc")
    assert lines[0].startswith("test acc against length")
    table = lines[1].splitlines()
    assert table[0].split() == ["model.name", "trained", "100", "200"]
    assert table[1].split() == ["lstm", "1.000", "1.000", "0.995"]
    assert table[2].split() == ["transformer", "1.000", "0.500", "0.495"]
    assert length_text(pd.DataFrame(rows), "loss") == []  # not tested on that metric: nothing to say
