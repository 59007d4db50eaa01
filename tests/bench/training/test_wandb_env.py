"""W&B's own variables (WANDB_MODE, WANDB_PROJECT) lose only to what the user typed, whatever path the
config took (``--out-dir`` rebuilds it; a sweep composes it per trial); and a W&B server that cannot
be reached costs one short wait per process, then the runs go on offline."""

from __future__ import annotations

import time

import pytest

from seqbench.bench.cli import main
from seqbench.bench.config import build_config, override
from seqbench.bench.training import tracking
from seqbench.bench.training.tracking import wandb_target
from tests.bench.training.test_tracking import finished_records, offline_run, the_run_record
from tests.helpers import tiny_overrides


@pytest.fixture
def env(monkeypatch):
    for v in ("WANDB_MODE", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_DIR"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setattr(tracking, "_warned", set())
    monkeypatch.setattr(tracking, "_unreachable", [])
    return monkeypatch


def overrides(out_dir=None, **extra) -> list[str]:
    """A tiny run with tracking.wandb left unset (and out_dir only where given)."""
    ovs = tiny_overrides("copy", "gru", "x", **{"train.max_steps": 4, **extra})
    return [o for o in ovs if o != "tracking.wandb=off" and not o.startswith("out_dir=")]


def test_wandb_mode_disabled_holds_with_out_dir(tmp_path, env, capsys):
    env.setenv("WANDB_MODE", "disabled")
    d = tmp_path / "D"
    assert main(["run", *overrides(), "--out-dir", str(d)]) == 0
    assert (d / "runs").is_dir() and not (d / "wandb").exists()


def test_wandb_project_holds_with_out_dir_and_a_typed_project_wins(tmp_path, env):
    env.setenv("WANDB_PROJECT", "from-env")
    d = tmp_path / "D"
    assert main(["run", *overrides(), "--out-dir", str(d)]) == 0
    (run,) = (d / "runs").iterdir()
    assert the_run_record(finished_records(d, run.name)).project == "from-env"
    assert main(["run", *overrides(seed=1), "tracking.project=typed", "--out-dir", str(d)]) == 0
    run = next(r for r in (d / "runs").iterdir() if "-s1-" in r.name)
    assert the_run_record(finished_records(d, run.name)).project == "typed"


def test_what_was_typed_survives_a_rebuild_and_the_rest_does_not_count_as_typed(tmp_path, env):
    cfg = build_config(overrides(**{"tracking.project": "typed"}))
    moved = override(cfg, out_dir=str(tmp_path))  # a dump and a validation: every field is "set" to pydantic
    assert "tracking.wandb" not in moved.typed and "tracking.project" in moved.typed and "out_dir" in moved.typed
    env.setenv("WANDB_MODE", "disabled")
    env.setenv("WANDB_PROJECT", "from-env")
    target = wandb_target(moved)
    assert (target.mode, target.project) == ("off", "typed")


def test_wandb_mode_disabled_holds_in_a_sweep(tmp_path, env):
    from tests.sweeps.test_sweep_runner import TINY_BASE, write_spec

    env.setenv("WANDB_MODE", "disabled")
    base = {k: v for k, v in TINY_BASE.items() if k != "tracking"}
    p = write_spec(tmp_path, base=base, parameters={"model.name": {"values": ["rnn", "gru"]}})
    out = tmp_path / "out"
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    assert len(list((out / "runs").iterdir())) == 2 and not (out / "wandb").exists()


def test_an_unreachable_wandb_server_costs_one_short_wait_then_runs_go_offline(tmp_path, env, capsys):
    env.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens: connection refused
    env.setenv("WANDB_API_KEY", "a" * 40)
    d = tmp_path / "D"
    typed = ["tracking.wandb=online", "tracking.init_timeout=2", "--out-dir", str(d)]
    t0 = time.monotonic()
    assert main(["run", *overrides(), *typed]) == 0
    first = time.monotonic() - t0
    assert main(["run", *overrides(seed=1), *typed]) == 0
    second = time.monotonic() - first - t0
    err = capsys.readouterr().err
    assert err.count("W&B could not start online") == 1 and "wandb sync" in err, err
    assert first < 60 and second < first, (first, second)  # the second run did not wait for the server again
    for run in (d / "runs").iterdir():  # both runs were logged, offline, and their files are complete
        assert offline_run(d, run.name) and (run / "results.json").is_file()
