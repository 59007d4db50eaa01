"""The sweep runner: the study contract, resume, parallel workers, SIGKILL recovery, divergence,
exceptions and pruning. Tiny configs, a few steps per trial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from seqbench.bench.cli import main
from seqbench.bench.core.artifacts import wandb_group
from seqbench.bench.core.text import redact
from seqbench.sweeps.liveness import reap_stale
from seqbench.sweeps.optuna_adapter import set_trial_flag
from seqbench.sweeps.storage import open_storage
from tests.helpers import REPO, TINY_TASK

TINY_BASE = {
    "task": {"name": "copy", **TINY_TASK["copy"]},
    "model": {"d_model": 16},
    "train": {"max_steps": 4, "val_every": 2, "val_batches": 1, "batch_size": 4, "threads": 1},
    "eval": {"test_batches": 1},
    "tracking": {"wandb": "off"},
}


def write_spec(tmp_path: Path, name: str = "tiny", **kw) -> Path:
    body = {
        "question": "does the runner work?",
        "base": TINY_BASE,
        "metric": {"name": "val/acc", "goal": "maximize"},
        **kw,
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body, sort_keys=False))
    return p


def load(out: Path, name: str, storage: str | None = None) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(storage, out))


def grid_points(study: optuna.Study) -> list[str]:
    """Params of the trials that count (not the ones a dead worker left and that were retried)."""
    return sorted(
        json.dumps(t.params, sort_keys=True)
        for t in study.get_trials()
        if t.state != TrialState.FAIL or not t.user_attrs.get("retried")
    )


def sweep_cli(*args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    return subprocess.Popen(
        [sys.executable, "-m", "seqbench", "sweep", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def test_grid_study_keeps_the_report_contract_and_resume_reruns_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        parameters={"model.name": {"values": ["rnn", "lstm"]}, "task.delay": {"values": [3, 5]}},
        per_model={"lstm": {"model.forget_bias": 2.0}},
        seeds=[0, 1],
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("COMPLETE") >= 4 and "best configurations:" in text and "model.name=lstm task.delay=5" in text

    study = load(out, "tiny")
    a = study.user_attrs
    assert a["question"] == "does the runner work?" and a["spec_path"] == str(p) and a["out_dir"] == str(out)
    assert a["metrics"] == [{"name": "val/acc", "goal": "maximize"}] and a["spec"]["seeds"] == [0, 1]
    assert {"seqbench_version", "git_sha"} <= set(a) and a["spec"]["parameters"]["model.name"]["values"] == [
        "rnn",
        "lstm",
    ]
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    assert grid_points(study) == sorted(
        json.dumps({"model.name": m, "task.delay": d}, sort_keys=True) for m in ("rnn", "lstm") for d in (3, 5)
    )
    for t in trials:
        u = t.user_attrs
        assert u["seeds"] == [0, 1] and len(u["run_ids"]) == 2 and len(u["per_seed"]) == 2 and u["n_diverged"] == 0
        assert u["mean"] == pytest.approx(sum(u["per_seed"]) / 2) and u["std"] >= 0 and u["wall_s"] > 0
        assert t.value == pytest.approx(u["mean"])
        for seed, run_id in zip(u["seeds"], u["run_ids"]):
            res = json.loads((out / "runs" / run_id / "results.json").read_text())
            cfg = res["config"]
            assert res["seed"] == seed and res["final"]["val/acc"] == pytest.approx(u["per_seed"][seed])
            assert cfg["model"]["name"] == t.params["model.name"] and cfg["task"]["delay"] == t.params["task.delay"]
            assert cfg["tracking"]["group"] == wandb_group("tiny", str(out / "optuna.journal"))
            assert f"trial-{t.number}" in cfg["tracking"]["tags"]
            assert cfg["model"].get("forget_bias", 2.0) == 2.0  # the per_model block reached the lstm
            if seed == 0:
                assert res["config_hash"] == u["config_hash"]

    runs_before = sorted(os.listdir(out / "runs"))
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0  # the budget is met: nothing re-runs
    assert "4 done" in capsys.readouterr().out
    assert sorted(os.listdir(out / "runs")) == runs_before and len(load(out, "tiny").get_trials()) == 4

    p.write_text(p.read_text().replace("delay: 4", "delay: 6"))  # another base: refuse to mix it in
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 2
    assert "--study" in capsys.readouterr().err


def lr_by_width_spec(tmp_path, max_steps: int):
    """A 2x2 grid on adding with an SGD IRNN and no clipping: lr 1e4 diverges (a result), and d_model 12 is
    the configuration a test makes fail for a reason outside the experiment."""
    base = {
        **TINY_BASE,
        "task": {"name": "adding", "length": 8},
        "model": {"name": "irnn", "d_model": 16},
        "optim": {"optimizer": "sgd", "grad_clip": None},
        "train": {**TINY_BASE["train"], "max_steps": max_steps, "val_every": 10, "diverge_loss": 5},
    }
    return write_spec(
        tmp_path,
        base=base,
        metric={"name": "val/mse", "goal": "minimize"},
        parameters={"optim.lr": {"values": [1e4, 1e-3]}, "model.d_model": {"values": [16, 12]}},
    )


def test_divergence_and_exceptions_fail_their_trial_and_the_study_goes_on(tmp_path, monkeypatch, capsys):
    import seqbench.bench.training.train

    real_run = seqbench.bench.training.train.train_run

    def flaky_run(cfg, **kw):
        if cfg.model.d_model == 12:
            raise RuntimeError("boom in the model")
        return real_run(cfg, **kw)

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", flaky_run)
    out = tmp_path / "out"
    p = lr_by_width_spec(tmp_path, max_steps=50)
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    trials = {(t.params["optim.lr"], t.params["model.d_model"]): t for t in load(out, "tiny").get_trials()}
    diverged = trials[(1e4, 16)]
    assert diverged.state == TrialState.FAIL and diverged.user_attrs["n_diverged"] == 1
    assert "1/1 seeds diverged" in diverged.user_attrs["fail_reason"]
    res = json.loads((out / "runs" / diverged.user_attrs["run_ids"][0] / "results.json").read_text())
    assert res["status"] == "diverged" and res["steps"] < 50  # the loss reaches the host every val_every=10 steps
    for lr in (1e4, 1e-3):
        assert trials[(lr, 12)].state == TrialState.FAIL
        assert trials[(lr, 12)].user_attrs["fail_reason"] == "RuntimeError: boom in the model"
    assert trials[(1e-3, 16)].state == TrialState.COMPLETE
    assert "FAIL" in capsys.readouterr().out


def test_pruning_stops_a_hopeless_trial_and_its_run_says_pruned(tmp_path):
    out = tmp_path / "out"
    base = {
        **TINY_BASE,
        "model": {"name": "lstm", "d_model": 16},
        "train": {**TINY_BASE["train"], "max_steps": 40, "val_every": 5},
    }
    p = write_spec(
        tmp_path,
        base=base,
        metric={"name": "val/loss", "goal": "minimize"},
        parameters={"optim.lr": {"values": [0.05, 1e-7]}},
        pruner={"name": "median", "startup_trials": 1, "warmup_steps": 0},
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    good, hopeless = load(out, "tiny").get_trials()
    assert good.state == TrialState.COMPLETE and hopeless.state == TrialState.PRUNED
    assert "pruned at step" in hopeless.user_attrs["prune_reason"]
    res = json.loads((out / "runs" / hopeless.user_attrs["run_ids"][0] / "results.json").read_text())
    assert res["status"] == "pruned" and res["steps"] < 40 and "test/loss" not in res["final"]
    assert len(good.intermediate_values) == 8 and len(hopeless.intermediate_values) < 8


@pytest.mark.slow  # three process start-ups
def test_two_workers_share_a_grid_without_duplicates_or_gaps(tmp_path):
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        parameters={"model.name": {"values": ["rnn", "gru"]}, "train.max_steps": {"values": [30, 60, 90]}},
        base={**TINY_BASE, "train": {**TINY_BASE["train"], "val_every": 30}},
    )
    proc = sweep_cli(str(p), "--out-dir", str(out), "--workers", "2", "--study", "pair")
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    study = load(out, "pair")
    assert [t.state for t in study.get_trials()] == [TrialState.COMPLETE] * 6, text
    assert grid_points(study) == sorted(
        json.dumps({"model.name": m, "train.max_steps": n}, sort_keys=True)
        for m in ("rnn", "gru")
        for n in (30, 60, 90)
    )
    # two workers take the longest trainings first (the queue's order is the trials' numbers)
    assert [(t.params["model.name"], t.params["train.max_steps"]) for t in study.get_trials()] == [
        ("rnn", 90),
        ("gru", 90),
        ("rnn", 60),
        ("gru", 60),
        ("rnn", 30),
        ("gru", 30),
    ]
    workers = {t.system_attrs["worker"] for t in study.get_trials()}
    assert len(workers) == 2  # both worked, and one was the command's own process (the other a copy of it)
    assert any(w.endswith(f":{proc.pid}") for w in workers), (workers, proc.pid)
    assert text.count("COMPLETE") >= 6


@pytest.mark.slow  # process start-up dominates: ~30 s on an idle 2-core machine
def test_sigkill_mid_study_then_rerun_retries_the_stuck_trial_and_meets_the_budget(tmp_path, capsys):
    out = tmp_path / "out"
    # the middle grid point trains long enough to be caught running, and still be running a second later, on
    # a fast quiet machine too (1000 steps of batch 4 once finished inside that second)
    steps = 6000
    p = write_spec(
        tmp_path,
        parameters={"train.max_steps": {"values": [4, steps, 6]}},
        base={**TINY_BASE, "train": {**TINY_BASE["train"], "val_every": 50, "batch_size": 32}},
    )
    args = (str(p), "--out-dir", str(out), "--heartbeat", "0.5")
    proc = sweep_cli(*args, start_new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            time.sleep(0.3)
            if not (out / "optuna.journal").exists():
                continue
            states = [t.state for t in load(out, "tiny").get_trials()]
            if states[:2] == [TrialState.COMPLETE, TrialState.RUNNING]:
                break
        else:
            pytest.fail("trial 1 never ran")
        time.sleep(1.0)  # let it stamp a heartbeat or two
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    before = load(out, "tiny").get_trials()
    assert [t.state for t in before] == [TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING]

    assert main(["sweep", *args]) == 0  # the re-run (in this process)
    text = capsys.readouterr().out
    after = load(out, "tiny").get_trials()
    assert after[0].datetime_complete == before[0].datetime_complete  # completed trial untouched
    assert after[0].user_attrs == before[0].user_attrs
    assert after[1].state == TrialState.FAIL and after[1].user_attrs["retried"]
    assert "on this machine has exited" in after[1].user_attrs["fail_reason"]  # known at once: no grace waited
    retry = [t for t in after if t.user_attrs.get("retry_of") == 1]
    assert len(retry) == 1 and retry[0].state == TrialState.COMPLETE and retry[0].params == {"train.max_steps": steps}
    run_id = after[1].user_attrs["run_ids"][0]  # the retry continued the killed run's folder
    assert retry[0].user_attrs["run_ids"] == [run_id]
    res = json.loads((out / "runs" / run_id / "results.json").read_text())
    assert res["status"] == "completed" and res["steps"] == steps
    assert grid_points(load(out, "tiny")) == sorted(json.dumps({"train.max_steps": n}) for n in (4, steps, 6))
    assert "worker lost" in text


def test_stale_trial_is_failed_and_requeued_once_by_racing_reapers(tmp_path):
    journal = str(tmp_path / "j.journal")
    first = optuna.create_study(study_name="s", storage=open_storage(journal))
    trial = first.ask({"x": optuna.distributions.IntDistribution(0, 9)})
    set_trial_flag(first, trial, "heartbeat", time.time() - 100)
    second = optuna.load_study(study_name="s", storage=open_storage(journal))  # another worker
    reaped = reap_stale(first, grace=10) + reap_stale(second, grace=10)
    assert len(reaped) == 1
    trials = second.get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.WAITING]
    assert trials[1].system_attrs["fixed_params"] == trial.params and trials[1].user_attrs["retry_of"] == 0
    fresh = first.ask({"x": optuna.distributions.IntDistribution(0, 9)})  # pops the retry
    assert fresh.number == 1 and reap_stale(first, grace=10) == []


def test_storage_urls_and_redaction(tmp_path, capsys):
    from optuna.storages import JournalStorage

    from seqbench.bench.core.errors import UserError

    assert isinstance(open_storage(None, tmp_path), JournalStorage) and (tmp_path / "optuna.journal").exists()
    assert isinstance(open_storage(f"journal://{tmp_path}/x.journal"), JournalStorage)
    assert (tmp_path / "x.journal").exists()
    assert redact("postgresql://bob:s3cret@db.example:5432/optuna") == "postgresql://bob:***@db.example:5432/optuna"
    assert redact("postgresql://bob@host/db") == "postgresql://bob@host/db"
    with pytest.raises(UserError, match="unknown scheme 'redis'"):
        open_storage("redis://localhost")
    with pytest.raises(UserError) as e:
        open_storage("postgresql://bob:s3cret@127.0.0.1:1/none")
    assert "s3cret" not in str(e.value) and "bob:***@" in str(e.value)


def judge_runs(monkeypatch, solves: set[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """Every run of the sweep trains as usual, and meets the task's ``solved`` criterion exactly when its
    (seed, task.delay, optim.lr) is in ``solves``. Returns the list the runs append their triple to."""
    import seqbench.bench.training.train

    real_run = seqbench.bench.training.train.train_run
    trained: list[tuple[int, int, float]] = []

    def judged_run(cfg, **kw):
        trained.append((cfg.seed, cfg.task.delay, cfg.optim.lr))
        r = real_run(cfg, **kw)
        r.results["solved"] = (cfg.seed, cfg.task.delay, cfg.optim.lr) in solves
        return r

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", judged_run)
    return trained


def test_a_ladder_skips_the_harder_rungs_of_a_seed_that_failed_one_at_every_rate(tmp_path, monkeypatch):
    """``ladder:`` (sweeps/ladder.py): seed 0 fails the first rung, seed 1 solves it at one rate only and
    fails the second; neither trains on the third, whose trials are PRUNED, and the table says skipped."""
    from seqbench.sweeps.table import build_table, runs_root

    trained = judge_runs(monkeypatch, {(1, 2, 1e-2)})
    out = tmp_path / "out"
    p = write_spec(
        tmp_path,
        parameters={"task.delay": {"values": [2, 3, 4]}, "optim.lr": {"values": [1e-3, 1e-2]}},
        seeds=[0, 1],
        ladder={"param": "task.delay", "best_of": ["optim.lr"]},
    )
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    assert sorted(trained) == sorted([(s, 2, lr) for s in (0, 1) for lr in (1e-3, 1e-2)] + [(1, 3, 1e-3), (1, 3, 1e-2)])
    st = load(out, "tiny")
    by = {(t.params["task.delay"], t.params["optim.lr"]): t for t in st.get_trials()}
    assert by[(3, 1e-3)].state == TrialState.COMPLETE and by[(3, 1e-3)].user_attrs["skipped"] == [0]
    assert by[(3, 1e-3)].user_attrs["run_ids"][0] == "" and by[(3, 1e-3)].user_attrs["unsolved_seeds"] == [1]
    assert {by[(4, lr)].state for lr in (1e-3, 1e-2)} == {TrialState.PRUNED}
    assert "seed 0 skipped: it failed task.delay=2" in by[(4, 1e-2)].user_attrs["prune_reason"]
    assert "seed 1 skipped: it failed task.delay=3" in by[(4, 1e-2)].user_attrs["prune_reason"]
    table = build_table(st, runs_root(st, out))
    rows = table[table["param.task.delay"] == 4]
    assert sorted(rows["seed"]) == [0, 0, 1, 1] and set(rows["status"]) == {"skipped"}
    with pytest.raises(Exception, match="ladder.param: optim.lr must be the first key"):
        from seqbench.sweeps.spec import load_spec

        load_spec(
            write_spec(
                tmp_path,
                "bad",
                parameters={"task.delay": {"values": [2, 3]}, "optim.lr": {"values": [1e-3]}},
                ladder={"param": "optim.lr"},
            )
        )
