"""Two worker processes share one study on a real PostgreSQL server on loopback (as on two machines)."""

from __future__ import annotations

import json
import time

import optuna
import pytest
from optuna.trial import TrialState

from seqbench.bench.cli import main
from seqbench.sweeps.storage import open_storage
from tests.pg_server import postgres_or_skip
from tests.sweeps.test_sweep_runner import TINY_BASE, grid_points, sweep_cli, write_spec

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg_url():
    with postgres_or_skip() as url:
        yield url


def test_two_workers_on_postgres_finish_the_grid_once(tmp_path, pg_url, capsys):
    out = tmp_path / "out"
    points = [(m, d) for m in ("rnn", "gru") for d in (2, 3, 4)]
    p = write_spec(
        tmp_path,
        parameters={"model.name": {"values": ["rnn", "gru"]}, "task.delay": {"values": [2, 3, 4]}},
        base={**TINY_BASE, "train": {**TINY_BASE["train"], "max_steps": 600, "val_every": 300}},
    )
    # trials of ~1-2 s: on a quiet machine 60-step trials (0.3 s) were all done before the joiner started
    args = (str(p), "--out-dir", str(out), "--storage", pg_url, "--study", "pg")
    other = sweep_cli(*args)  # "another machine"; this test process is the second one, joining
    deadline = time.time() + 300  # once the other is at work, so that both take trials
    storage = open_storage(pg_url)
    while time.time() < deadline and other.poll() is None:
        try:
            study = optuna.load_study(study_name="pg", storage=storage)
            if study.get_trials(states=(TrialState.RUNNING,)):
                break
        except KeyError:  # not created yet
            pass
        time.sleep(0.2)
    assert main(list(("sweep",) + args)) == 0
    text, _ = other.communicate(timeout=600)
    assert other.returncode == 0, text
    study = optuna.load_study(study_name="pg", storage=open_storage(pg_url))
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 6, text
    assert grid_points(study) == sorted(
        json.dumps({"model.name": m, "task.delay": d}, sort_keys=True) for m, d in points
    )
    assert study.user_attrs["spec"]["parameters"]["task.delay"]["values"] == [2, 3, 4]
    assert len({t.system_attrs["worker"] for t in trials}) == 2, text  # both processes took trials
    assert all((out / "runs" / t.user_attrs["run_ids"][0] / "results.json").exists() for t in trials)
    assert "postgresql://seqbench@127.0.0.1" in capsys.readouterr().out
