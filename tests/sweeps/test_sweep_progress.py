"""What a sweep prints: trial starts, [done/total, ETA] on finished trials, one best table, and a
report hint that finds the study again (its --out-dir and --storage, password redacted)."""

from __future__ import annotations

import os
import re
import time

import yaml

from seqbench.bench.cli import main
from seqbench.bench.commands.sweep import report_hint
from seqbench.bench.core.text import duration
from seqbench.sweeps.progress import Progress
from tests.sweeps.test_sweep_runner import write_spec


def test_progress_tag_counts_and_estimates():
    p = Progress(total=4, done_at_start=1, started=time.monotonic() - 20)
    assert p.tag(1) == "[1/4, ETA unknown]"  # nothing finished since this process started
    tag = p.tag(3)  # 2 trials in 20 s, 1 left: about 10 s
    assert re.fullmatch(r"\[3/4, ETA 1[01]s\]", tag), tag
    assert p.tag(4) == "[4/4]"
    assert (duration(59), duration(61), duration(7322)) == ("59s", "1m01s", "2h02m")


def test_report_hint_repeats_out_dir_and_redacted_storage():
    assert report_hint("s", "outputs", None) == "seqbench report s"
    assert report_hint("s", "/tmp/x y", None) == "seqbench report s --out-dir '/tmp/x y'"
    assert (
        report_hint("s", "outputs", "postgresql://bob:s3cret@db/optuna")
        == "seqbench report s --storage 'postgresql://bob:***@db/optuna'"
    )


def test_sweep_prints_starts_progress_one_table_and_a_hint_that_finds_it(tmp_path, capsys):
    out, journal = tmp_path / "out", tmp_path / "j.journal"
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}})
    assert main(["sweep", str(p), "--out-dir", str(out), "--storage", str(journal)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    for n in (0, 1):
        start = lines.index(next(line for line in lines if re.match(rf"trial +{n}  RUNNING +model\.name=", line)))
        end = next(i for i, line in enumerate(lines) if re.match(rf"trial +{n}  COMPLETE", line))
        assert start < end
    assert re.search(r"trial +0  COMPLETE .*\[1/2, ETA \d+(\.\d)?s\]", text), text
    assert re.search(r"trial +1  COMPLETE .*\[2/2\]", text), text
    assert text.count("best configurations:") == 1
    assert lines[-1].endswith(f"seqbench report tiny --out-dir {out} --storage {journal}")
    assert main(["report", "tiny", "--out-dir", str(out), "--storage", str(journal)]) == 0  # the hint works


def test_sweep_print_config_shows_the_resolved_spec_and_runs_nothing(tmp_path, capsys):
    p = write_spec(tmp_path, parameters={"model.name": {"values": ["rnn", "gru"]}})
    out = tmp_path / "out"
    assert main(["sweep", str(p), "--out-dir", str(out), "--print-config", "model.d_model=8", "--trials", "1"]) == 0
    spec = yaml.safe_load(capsys.readouterr().out)
    assert spec["base"]["model"] == {"d_model": 8} and spec["trials"] == 1
    assert spec["parameters"]["model.name"]["values"] == ["rnn", "gru"]
    assert not os.path.exists(out)
