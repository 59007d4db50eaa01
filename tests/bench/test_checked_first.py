"""Everything checkable is checked before the work: an ``eval.lengths`` entry the task cannot build (or a
model's learned positions cannot hold) is one line before training, for ``run``, ``eval`` and sweeps;
every task's declared shortest length really is the shortest it builds."""

from __future__ import annotations

import pytest
import torch

from seqbench.bench.cli import main
from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TaskConfig
from tests.bench.commands.test_eval import BASE
from tests.helpers import TINY_TASK, tiny_overrides


def one_line(err: str, *needles: str) -> None:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("note: ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert all(n in lines[0] for n in needles), err


def test_run_with_an_eval_length_the_task_cannot_build_trains_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", *tiny_overrides("copy", "lstm", out), "task.n_symbols=10", "eval.lengths=[40, 5]"])
    assert code == 2
    one_line(
        capsys.readouterr().err,
        "eval.lengths: 5 is shorter than task 'copy' can build",
        "shortest sequence is 21",
        "task.n_symbols",
    )
    assert not (out / "runs").exists()  # refused before any run folder, let alone training


def test_eval_of_a_trained_run_at_a_length_too_short_is_one_line(tmp_path, capsys):
    assert main(["run", *BASE, "train.max_steps=2", f"out_dir={tmp_path}"]) == 0
    run = next((tmp_path / "runs").iterdir())
    capsys.readouterr()
    assert main(["eval", str(run), "eval.lengths=[4]"]) == 2
    one_line(capsys.readouterr().err, "eval.lengths: 4 is shorter", "shortest sequence is 5")
    assert not (run / "evals").exists()


def test_a_sweep_with_a_bad_eval_length_is_refused_before_its_study(tmp_path, capsys):
    from tests.sweeps.test_sweep_runner import TINY_BASE, write_spec

    p = write_spec(
        tmp_path,
        base={**TINY_BASE, "eval": {"test_batches": 1, "lengths": [3]}},
        parameters={"model.name": {"values": ["rnn", "gru"]}},
    )
    assert main(["sweep", str(p), "--out-dir", str(tmp_path / "out")]) == 2
    assert "eval.lengths: 3 is shorter" in capsys.readouterr().err
    assert not (tmp_path / "out" / "optuna.journal").exists()


def test_learned_positions_shorter_than_a_sequence_are_refused_at_construction():
    with pytest.raises(UserError, match="model.max_len: the training sequence has 70 positions"):
        build_config(["model=transformer", "model.pos_encoding=learned", "model.max_len=64"])
    with pytest.raises(UserError, match="model.max_len: eval.lengths entry 300 has 300"):
        build_config(["model=transformer", "model.pos_encoding=learned", "model.max_len=256", "eval.lengths=[300]"])
    build_config(["model=transformer", "eval.lengths=[5000]"])  # sinusoidal: any length


@pytest.mark.parametrize("name", [e.name for e in TASKS if e.config_cls.min_length is not TaskConfig.min_length])
def test_a_task_builds_its_shortest_length_and_refuses_one_less(name):
    cfg = build_config([f"task={name}", *(f"task.{k}={v}" for k, v in TINY_TASK.get(name, {}).items())])
    shortest, why = cfg.task.min_length()
    assert why
    task = TASKS.get(name).cls(cfg.task, seed=0)
    task.setup()

    def build(length: int):
        return task.materialize(next(iter(task.loader("test", 2, length=length, n_batches=1))), torch.device("cpu"))

    assert build(shortest).x.shape[1] == cfg.task.positions(shortest)
    with pytest.raises(Exception):  # noqa: B017  one step less: the task cannot build it (whatever it raises) ...
        build(shortest - 1)
    with pytest.raises(UserError, match=f"eval.lengths: {shortest - 1} is shorter"):  # ... and the config says so
        build_config(
            [
                f"task={name}",
                *(f"task.{k}={v}" for k, v in TINY_TASK.get(name, {}).items()),
                f"eval.lengths=[{shortest - 1}]",
            ]
        )
