"""A study that met an interruption still reports: a Ctrl-C, a full disk or a retry leaves a failed
attempt that shares its run ids with its retry, and `report` and `compare` build over that history
(the failed attempt marked ``superseded``, each configuration ranked once, each run drawn once)."""

from __future__ import annotations

import contextlib
import errno
import io
import signal

import optuna
import pytest
import pytorch_lightning as pl

import seqbench.bench.training.train
from seqbench.bench.cli import main
from seqbench.bench.commands.compare import build_spec, study_name
from seqbench.reports.table import load_curves, run_rows, state_counts
from seqbench.sweeps.storage import open_storage
from seqbench.sweeps.table import build_table, outcomes, runs_root
from tests.bench.commands.test_compare import TINY
from tests.sweeps.test_sweep_runner import TINY_BASE, write_spec


class CtrlCAt(pl.Callback):
    """Ctrl-C arriving after ``step`` (the real signal: the run checkpoints its step and stops)."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            signal.raise_signal(signal.SIGINT)


def cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(args))
    return code, buf.getvalue()


def table_of(out, name: str):
    study = optuna.load_study(study_name=name, storage=open_storage(None, out))
    return build_table(study, runs_root(study, out))


def test_an_interrupted_study_reports_before_and_after_its_retry(tmp_path, monkeypatch):
    real = seqbench.bench.training.train.train_run
    hit = []

    def ctrl_c_once(cfg, callbacks=(), **kw):  # the gru's second seed is interrupted at step 3, once
        if cfg.model.name == "gru" and cfg.seed == 1 and not hit:
            hit.append(cfg.seed)
            callbacks = [*callbacks, CtrlCAt(3)]
        return real(cfg, callbacks=callbacks, **kw)

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", ctrl_c_once)
    base = {**TINY_BASE, "train": {**TINY_BASE["train"], "max_steps": 6, "checkpoint_every": 2}}
    p = write_spec(tmp_path, base=base, parameters={"model.name": {"values": ["rnn", "gru"]}}, seeds=[0, 1])
    out = tmp_path / "out"
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 130
    code, text = cli("report", "tiny", "--out-dir", str(out))  # the retry is still waiting
    assert code == 0 and "3 trials, 4 runs" in text, text

    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0  # the re-run continues the gru's runs
    code, text = cli("report", "tiny", "--out-dir", str(out))
    assert code == 0 and "3 trials, 4 runs" in text, text
    df = table_of(out, "tiny")
    failed = df[df["superseded"]]
    assert set(failed["state"]) == {"FAIL"} and set(failed["param.model.name"]) == {"gru"}
    kept = outcomes(df)
    assert sorted(zip(kept["param.model.name"], kept["seed"])) == [("gru", 0), ("gru", 1), ("rnn", 0), ("rnn", 1)]
    assert kept["objective:val/acc"].notna().all() and set(
        kept.loc[kept["param.model.name"] == "gru", "retry_of"]
    ) == set(failed["trial"])
    assert len(run_rows(df)) == 4 and state_counts(df)["RETRIED"] == 1 and state_counts(df)["FAIL"] == 0
    curves = load_curves(df)
    assert not curves.duplicated(["run_id", "step", "metric"]).any()  # a run's curve is drawn once


def test_compare_ranks_a_configuration_once_after_a_full_disk_and_its_retry(tmp_path, monkeypatch):
    real = seqbench.bench.training.train.train_run

    def full_disk(cfg, **kw):
        if cfg.model.name == "gru":
            raise OSError(errno.ENOSPC, "No space left on device", str(cfg.out_dir))
        return real(cfg, **kw)

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", full_disk)
    settings = ["model=rnn,gru", "task=copy", "task.delay=3", "seeds=2", *TINY]
    out = tmp_path / "outputs"
    code, text = cli("compare", *settings, "--out-dir", str(out))
    assert code == 1 and "ranked by val/acc" in text, text  # a setting stands failed by the disk
    assert "1 setting(s) failed outside the experiment" in text and "--retry-failed" in text
    ranked = text[text.index("ranked by") :].splitlines()
    assert any("gru" in line and "FAIL" in line for line in ranked), text  # listed as failed, not left out
    assert "Failed, no result (1): model.name=gru" in text
    page = (out / "reports" / study_name(build_spec(settings)[0]) / "index.html").read_text()
    assert "Failed configurations (no scored seed)" in page and "No space left on device" in page

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", real)  # space freed
    code, text = cli("compare", *settings, "--out-dir", str(out), "--retry-failed")
    assert code == 0, text
    ranked = text[text.index("ranked by") : text.index("paired comparisons")].splitlines()[2:]
    assert sorted(line.split()[3] for line in ranked) == ["gru", "rnn"], text  # each once, both scored
    assert not any("FAIL" in line for line in ranked), text
    df = table_of(out, study_name(build_spec(settings)[0]))
    assert df["superseded"].sum() == 1 and len(outcomes(df)) == 4  # the failed attempt stopped at its first seed


@pytest.mark.parametrize("retried_first", [True, False])
def test_learning_curves_take_a_run_shared_by_two_attempts(retried_first):
    import pandas as pd

    from seqbench.reports.figures import fig_learning_curves

    rows = [
        {"trial": 0, "run_id": "r1", "param.model.name": "gru", "superseded": True},
        {"trial": 1, "run_id": "r1", "param.model.name": "gru", "superseded": False},
        {"trial": 2, "run_id": "r2", "param.model.name": "rnn", "superseded": False},
    ]
    df = pd.DataFrame(rows if retried_first else rows[::-1])
    curves = pd.DataFrame(
        {"run_id": ["r1", "r1", "r2"], "step": [1, 2, 1], "metric": "val/acc", "value": [0.1, 0.2, 0.3]}
    )
    fig = fig_learning_curves(curves, df, "val/acc", "param.model.name")
    assert sorted(t.name for t in fig.data) == ["model.name=gru", "model.name=rnn"]
