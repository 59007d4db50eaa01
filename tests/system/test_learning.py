"""Learning is tested by learning: tiny models must beat the memoryless baseline where the
textbooks say they should, and fail where they say they fail.

Settings were measured on a 2-core CPU (see the issue notes): copy with 3 symbols from an
alphabet of 4, d_model 64, Adam lr 1e-2, batch 64. Runs stop early at val/acc 0.99.
"""

from __future__ import annotations

import pytest

from seqbench.bench.config import build_config
from seqbench.bench.training.train import train_run

COPY = [
    "task=copy",
    "task.n_symbols=3",
    "task.alphabet=4",
    "model.d_model=64",
    "optim.lr=0.01",
    "train.batch_size=64",
    "train.val_every=100",
    "train.val_batches=6",
    "eval.test=false",
    "tracking.wandb=off",
    "train.early_stop={metric: val/acc, threshold: 0.99}",
]


def copy_run(out_dir, model: str, delay: int, steps: int, seed: int = 0) -> dict:
    cfg = build_config(
        {},
        COPY
        + [f"model={model}", f"task.delay={delay}", f"train.max_steps={steps}", f"seed={seed}", f"out_dir={out_dir}"],
    )
    return train_run(cfg, progress=False)


@pytest.mark.slow
def test_lstm_solves_copy_at_a_short_delay(out_dir):
    r = copy_run(out_dir, "lstm", delay=12, steps=1000)
    assert r["final"]["val/acc"] >= 0.95, r["final"]
    assert r["solved"] and r["final"]["val/loss"] < r["baseline"]["val/loss"] / 5


@pytest.mark.slow
def test_vanilla_rnn_stays_at_the_baseline_where_the_lstm_succeeds(out_dir):
    budget = 1200  # same step budget for both
    lstm = copy_run(out_dir, "lstm", delay=25, steps=budget)
    rnn = copy_run(out_dir, "rnn", delay=25, steps=budget)
    chance = rnn["baseline"]["val/acc"]  # 1/alphabet
    assert lstm["final"]["val/acc"] >= 0.95, lstm["final"]
    assert rnn["steps"] == budget  # it never reached the early-stop threshold
    assert rnn["final"]["val/acc"] < chance + 0.1, rnn["final"]
