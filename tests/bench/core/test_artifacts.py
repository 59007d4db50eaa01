"""Run artifacts (bench/core/artifacts.py): one typed definition per file, one reader and one atomic writer,
and a report path that never loads torch, models or tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import (
    Results,
    atomic_write,
    read_metrics,
    read_results,
    write_metrics,
    write_results,
)
from tests.helpers import tiny_overrides
from tests.report_support import demo_study, journal_storage


def test_atomic_write_leaves_no_temp_file_and_honours_the_umask(tmp_path):
    p = tmp_path / "x.json"
    atomic_write(p, "{}")
    atomic_write(p, '{"a": 1}')
    assert json.loads(p.read_text()) == {"a": 1} and [q.name for q in tmp_path.iterdir()] == ["x.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert p.stat().st_mode & 0o777 == 0o666 & ~umask


def test_results_roundtrip_and_undeclared_keys_are_refused(tmp_path):
    r: Results = {"run_id": "a", "status": "completed", "final": {"val/acc": 0.5}, "extras": {"p": Path("x")}}
    write_results(tmp_path, r)
    assert read_results(tmp_path) == {**r, "extras": {"p": "x"}}
    with pytest.raises(ValueError, match=r"Results: undeclared keys \['finall'\]"):
        write_results(tmp_path, {"finall": {}})  # type: ignore[typeddict-unknown-key]
    assert read_results(tmp_path / "missing") is None
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / artifacts.RESULTS).write_text('{"run_id": ')
    assert read_results(tmp_path / "half") is None


def test_metrics_rows_roundtrip_and_reader_skips_what_is_not_a_number(tmp_path):
    rows = [{"step": 10, "wall_s": 1.5, "train/loss": 2.0}, {"step": 20, "val/acc": 0.25}]
    write_metrics(tmp_path, rows)
    assert read_metrics(tmp_path) == rows and isinstance(read_metrics(tmp_path)[0]["step"], int)
    (tmp_path / artifacts.METRICS).write_text("step,val/acc,note\n5,0.5,hello\n,0.7,\n6,nan,\n")
    got = read_metrics(tmp_path)
    assert [r["step"] for r in got] == [5, 6] and got[0] == {"step": 5, "val/acc": 0.5}
    assert got[1]["val/acc"] != got[1]["val/acc"]  # NaN kept: a diverged validation is a fact
    assert read_metrics(tmp_path / "missing") == []


def test_trial_and_study_attrs_are_checked():
    assert artifacts.check_trial_attrs({"run_ids": ["a"], "wall_s": 1.0}) == {"run_ids": ["a"], "wall_s": 1.0}
    with pytest.raises(ValueError, match=r"TrialAttrs: undeclared keys \['runids'\]"):
        artifacts.check_trial_attrs({"runids": []})
    with pytest.raises(ValueError, match=r"StudyAttrs: undeclared keys \['sha'\]"):
        artifacts.check_study_attrs({"sha": "x"})


def test_a_real_run_writes_only_declared_keys(tmp_path):
    from seqbench.bench.config import build_config
    from seqbench.bench.training.train import train_run

    cfg = build_config(
        {}, tiny_overrides("copy", "lstm", tmp_path) + ["train.max_steps=4", "train.val_every=2", "tracking.wandb=off"]
    )
    r = train_run(cfg, progress=False)
    run_dir = tmp_path / "runs" / r.run_id
    assert read_results(run_dir) == json.loads(json.dumps(r.results)) and set(r.results) <= set(Results.__annotations__)
    assert [row["step"] for row in read_metrics(run_dir)] == [2, 4]


def test_report_entry_path_imports_no_torch_models_or_tasks(tmp_path):
    out_dir = tmp_path / "outputs"
    out_dir.mkdir()
    demo_study(journal_storage(out_dir / "optuna.journal"), out_dir)
    code = (
        "import os, sys\n"
        "from seqbench.bench.cli import main\n"
        f"code = main(['report', 'ld_demo', '--out-dir', {str(out_dir)!r}])\n"
        "heavy = [m for m in ('torch', 'pytorch_lightning', 'seqbench.models', 'seqbench.tasks',\n"
        "                     'seqbench.bench.config', 'datasets') if m in sys.modules]\n"
        "print('RESULT', code, heavy, os.environ.get('HF_HUB_OFFLINE'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines()[-1] == "RESULT 0 [] None", p.stdout[-2000:]
    assert (out_dir / "reports" / "ld_demo" / "index.html").is_file()
