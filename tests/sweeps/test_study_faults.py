"""A fault leaves the study resumable: a torn journal is repaired when opened, and trials that
failed for a reason outside the experiment run again with ``--retry-failed`` (diverged ones stay)."""

from __future__ import annotations

import errno
import json

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from seqbench.bench.cli import main
from seqbench.sweeps.storage import open_storage, repaired
from seqbench.sweeps.study import failed_outside
from tests.sweeps.test_sweep_runner import lr_by_width_spec, write_spec

TORN = b'{"op_code":5,"worker_id":"w","trial_id":1,"param_na'  # a write cut short (crash, full disk)


def load(out, name="tiny") -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(None, out))


def test_repaired_cuts_a_torn_tail_and_keeps_a_record_glued_onto_one():
    a, b = b'{"op_code":0,"x":1}', b'{"op_code":2,"user_attr":{"k":{"op_code":1}}}'
    assert repaired(a + b"\n" + b + b"\n") is None  # a nested "op_code" key is not a torn record
    assert repaired(a + b"\n" + TORN) == a + b"\n"
    assert repaired(a + b"\n" + TORN + b + b"\n" + a + b"\n") == a + b"\n" + b + b"\n" + a + b"\n"
    assert repaired(a + b"\n" + b) == a + b"\n" + b + b"\n"  # whole, only its newline missing


@pytest.mark.parametrize(
    "reason, attrs, outside",
    [
        ("OSError: [Errno 28] No space left on device: '/out/runs/x'", {}, True),
        ("OSError: [Errno 27] File too large", {}, True),
        ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", {}, True),
        ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory", {}, True),
        ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", {}, True),
        (
            "1/2 seeds diverged; seed 0 diverged: loss 1e9 > 5; OSError: [Errno 28] No space left",
            {"n_diverged": 1},
            False,
        ),
        ("RuntimeError: boom in the model", {}, False),
        ("UserError: metric.name: val/acc is missing from the run's results", {}, False),
    ],
)
def test_failures_outside_the_experiment_are_told_from_results(reason, attrs, outside):
    t = optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={"fail_reason": reason, **attrs})
    assert failed_outside(t) is outside


def test_a_journal_torn_mid_write_opens_with_one_warning_and_loses_no_completed_trial(tmp_path, capsys):
    out = tmp_path / "out"
    p = write_spec(tmp_path, parameters={"optim.lr": {"values": [0.01, 0.02, 0.03]}}, trials=2)
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 0
    journal = out / "optuna.journal"
    before = [(t.number, t.state, t.value, t.user_attrs) for t in load(out).get_trials()]
    assert [s for _, s, _, _ in before] == [TrialState.COMPLETE] * 2
    original = journal.read_bytes() + TORN
    journal.write_bytes(original)
    # what happened before the repair: the next append glues onto the torn line and every later read dies
    glued = JournalStorage(JournalFileBackend(str(journal)))
    study = optuna.load_study(study_name="tiny", storage=glued)
    study.set_user_attr("note", "written after the tear")
    capsys.readouterr()

    assert main(["sweep", str(p), "--out-dir", str(out), "--trials", "3"]) == 0  # continue: one more trial
    text = capsys.readouterr()
    warnings = [line for line in text.err.splitlines() if "torn" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: journal ") and "JSONDecodeError" not in text.err
    backups = list(out.glob("optuna.journal.torn-*"))
    assert len(backups) == 1 and backups[0].read_bytes().startswith(original)  # the original, kept beside it
    after = load(out).get_trials()
    assert [(t.number, t.state, t.value, t.user_attrs) for t in after[:2]] == before
    assert after[2].state == TrialState.COMPLETE and load(out).user_attrs["note"] == "written after the tear"
    assert TORN not in journal.read_bytes() and journal.read_bytes().endswith(b"\n")


def test_retry_failed_reruns_a_trial_failed_by_a_full_disk_and_not_a_diverged_one(tmp_path, monkeypatch, capsys):
    import seqbench.bench.training.train

    real_run = seqbench.bench.training.train.train_run

    def disk_full(cfg, **kw):  # the first attempt of the lr=1e-3 d=12 configuration meets a full disk
        if cfg.model.d_model == 12:
            raise OSError(errno.ENOSPC, "No space left on device", str(cfg.out_dir))
        return real_run(cfg, **kw)

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", disk_full)
    out = tmp_path / "out"
    p = lr_by_width_spec(tmp_path, max_steps=30)
    assert main(["sweep", str(p), "--out-dir", str(out)]) == 1  # done, but two trials stand failed by the disk
    assert "2 failed outside the experiment" in capsys.readouterr().out
    first = {(t.params["optim.lr"], t.params["model.d_model"]): t for t in load(out).get_trials()}
    assert first[(1e4, 16)].user_attrs["n_diverged"] == 1 and first[(1e4, 16)].state == TrialState.FAIL
    full = [first[(lr, 12)] for lr in (1e4, 1e-3)]
    assert all(t.state == TrialState.FAIL and "No space left" in t.user_attrs["fail_reason"] for t in full)
    monkeypatch.setattr(seqbench.bench.training.train, "train_run", real_run)  # space freed

    assert main(["sweep", str(p), "--out-dir", str(out)]) == 1  # without the flag: nothing runs again
    text = capsys.readouterr().out
    assert (
        "4 done, 3 of them failed: 2 outside the experiment (no space, memory, a kill), which --retry-failed runs again"
        in text
        and len(load(out).get_trials()) == 4
    )
    failed = text[text.index("best configurations and failed ones:") :].splitlines()
    assert sum(" FAIL " in line for line in failed) == 3  # listed as failed, never left out
    assert "run the same command with --retry-failed" in text
    assert main(["sweep", str(p), "--out-dir", str(out), "--retry-failed"]) == 0
    text = capsys.readouterr().out
    assert "--retry-failed: 2 trial(s)" in text
    trials = load(out).get_trials()
    retries = {t.user_attrs["retry_of"]: t for t in trials if "retry_of" in t.user_attrs}
    assert sorted(retries) == sorted(t.number for t in full)  # the diverged trial was not retried
    assert all(t.params["model.d_model"] == 12 for t in retries.values())
    assert retries[full[1].number].state == TrialState.COMPLETE
    assert retries[full[0].number].user_attrs["n_diverged"] == 1  # it ran, and lr=1e4 diverges: a result
    assert trials[first[(1e4, 16)].number].user_attrs == first[(1e4, 16)].user_attrs
    assert "2 complete, 2 fail, 2 retried" in text  # the summary counts the replaced trials as retried
    run_id = retries[full[1].number].user_attrs["run_ids"][0]
    assert json.loads((out / "runs" / run_id / "results.json").read_text())["steps"] == 30
    assert main(["sweep", str(p), "--out-dir", str(out), "--retry-failed"]) == 0  # nothing left to retry
    assert "--retry-failed: 0 trial(s)" in capsys.readouterr().out and len(load(out).get_trials()) == 6
