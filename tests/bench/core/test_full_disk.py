"""A full disk, wherever it strikes (the study journal, a run's files, a report), ends in one line that
names the path, the space free and about how much was needed, with a non-zero exit; what was written
before stays readable and the same command continues once space is freed.

The writers are made to raise OSError(ENOSPC) (monkeypatch); the last test fills a real tmpfs of a
few hundred KB when the test runs as root (skipped elsewhere).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

import seqbench.bench.core.artifacts
import seqbench.bench.training.train
import seqbench.reports.html
from seqbench.bench.cli import main
from seqbench.sweeps.storage import open_storage
from tests.helpers import tiny_overrides
from tests.sweeps.test_sweep_runner import TINY_BASE, write_spec


def enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def one_error_line(err: str, *needles: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith(("warning: ", "note: "))]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], err
    return lines[0]


def trials(out: Path, name: str = "tiny") -> list:
    return optuna.load_study(study_name=name, storage=open_storage(None, out)).get_trials()


def spec3(tmp_path: Path) -> Path:
    return write_spec(tmp_path, parameters={"task.delay": {"values": [2, 3, 4]}})


def test_a_journal_append_on_a_full_disk_is_one_line_and_the_study_continues(tmp_path, monkeypatch, capsys):
    real = JournalFileBackend.append_logs
    real_run = seqbench.bench.training.train.train_run
    full = []

    def fills_up(self, logs):  # once the disk is full, a journal write is cut mid-record
        if full:
            with open(self._file_path, "ab") as f:
                f.write(json.dumps(logs[0]).encode()[:20])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, logs)

    def run_then_fill(cfg, **kw):
        r = real_run(cfg, **kw)
        if cfg.task.delay == 3:  # the disk fills during the second trial's run
            full.append(True)
        return r

    monkeypatch.setattr(JournalFileBackend, "append_logs", fills_up)
    monkeypatch.setattr(seqbench.bench.training.train, "train_run", run_then_fill)
    out, p = tmp_path / "out", spec3(tmp_path)
    assert main(["sweep", str(p), "--out-dir", str(out), "--heartbeat", "0.2"]) == 2
    line = one_error_line(
        capsys.readouterr().err,
        "--storage: cannot write",
        str(out / "optuna.journal"),
        "No space left on device",
        "free, about",
        "needed",
    )
    assert "run the same command again" in line

    monkeypatch.setattr(JournalFileBackend, "append_logs", real)  # space freed
    monkeypatch.setattr(seqbench.bench.training.train, "train_run", real_run)
    assert main(["report", "tiny", "--out-dir", str(out)]) == 0  # readable: the torn record is cut
    assert "torn record" in capsys.readouterr().err
    assert main(["sweep", str(p), "--out-dir", str(out), "--heartbeat", "0.2"]) == 0
    done = [t for t in trials(out) if t.state == TrialState.COMPLETE]
    assert sorted(t.params["task.delay"] for t in done) == [2, 3, 4]


def test_report_onto_a_full_disk_is_one_line_and_the_page_already_there_stays(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(spec3(tmp_path)), "--out-dir", str(out)]) == 0
    assert main(["report", "tiny", "--out-dir", str(out)]) == 0
    page = out / "reports" / "tiny" / "index.html"
    before = page.read_text()
    capsys.readouterr()
    monkeypatch.setattr(seqbench.reports.html, "atomic_write", enospc)
    assert main(["report", "tiny", "--out-dir", str(out), "--out", str(page.parent)]) == 2
    one_error_line(capsys.readouterr().err, f"--out: cannot write {page.parent}", "needed", "another --out")
    assert page.read_text() == before


def test_a_run_that_meets_a_full_disk_at_its_end_keeps_its_training(tmp_path, monkeypatch, capsys):
    real = seqbench.bench.core.artifacts.atomic_write

    def results_full(path, text):
        if Path(path).name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(seqbench.bench.core.artifacts, "atomic_write", results_full)
    out = tmp_path / "out"
    args = ["run", *tiny_overrides("copy", "lstm", out, **{"train.max_steps": 6})]
    assert main(args) == 2
    line = one_error_line(capsys.readouterr().err, "out_dir: cannot write", "results.json", "needed")
    assert "resume=true run_id=" in line  # continues from the checkpoint of the last step
    run = next((out / "runs").iterdir())
    assert (run / "checkpoints" / "last.ckpt").is_file() and not (run / "results.json").exists()

    monkeypatch.setattr(seqbench.bench.core.artifacts, "atomic_write", real)  # space freed
    assert main([*args, "resume=true", f"run_id={run.name}"]) == 0
    res = json.loads((run / "results.json").read_text())
    assert res["status"] == "completed" and res["steps"] == 6


@pytest.fixture
def small_disk(tmp_path):
    """A 600 KB tmpfs (root only: mounting needs it)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("mounting a tmpfs needs root (the monkeypatched tests above cover the same paths)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_real_disk_that_fills_mid_sweep_ends_in_one_line_and_the_rerun_finishes(tmp_path, small_disk, capsys):
    filler = small_disk / "filler"
    real_run = seqbench.bench.training.train.train_run

    def fill_after_first(cfg, **kw):
        r = real_run(cfg, **kw)
        if not filler.exists():  # another program takes all the space after the first run
            with open(filler, "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 4096)
                except OSError:
                    pass
        return r

    out = small_disk / "out"
    base = {**TINY_BASE, "train": {**TINY_BASE["train"], "checkpoint_every": 2}}
    p = write_spec(tmp_path, base=base, parameters={"task.delay": {"values": [2, 3, 4, 5]}})
    mp = pytest.MonkeyPatch()
    mp.setattr(seqbench.bench.training.train, "train_run", fill_after_first)
    try:
        code = main(["sweep", str(p), "--out-dir", str(out), "--heartbeat", "0.2"])
    finally:
        mp.undo()
    text = capsys.readouterr()
    assert code != 0 and "Traceback" not in text.err + text.out
    errors = [ln for ln in text.err.splitlines() if ln.startswith("error: ")]
    failed = [ln for ln in text.out.splitlines() if " FAIL " in ln and "No space left on device" in ln]
    assert errors or failed, text
    for ln in errors:  # the journal (or the run folder) named, with the space free and needed
        assert "cannot write" in ln and "No space left on device" in ln and "needed" in ln
    assert main(["report", "tiny", "--out-dir", str(out), "--out", str(tmp_path / "rep")]) == 0

    filler.unlink()  # space freed: the same command (and --retry-failed) finishes the study
    assert main(["sweep", str(p), "--out-dir", str(out), "--heartbeat", "0.2", "--retry-failed"]) == 0
    done = [t for t in trials(out) if t.state == TrialState.COMPLETE]
    assert sorted(t.params["task.delay"] for t in done) == [2, 3, 4, 5]
