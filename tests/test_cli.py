"""The CLI as a user runs it: bad input gets one line, exit 2, no traceback."""
from __future__ import annotations

import json

import pytest

from seqbench.bench.cli import main
from seqbench.bench.registry import MODELS, TASKS
from tests.conftest import run_cli, tiny_overrides


def test_list_shows_every_registered_name_with_fields(capsys):
    assert main(["list", "-v"]) == 0
    out = capsys.readouterr().out
    for name in TASKS.names() + MODELS.names():
        assert f"  {name} " in out
    assert "task.delay = 50" in out and "model.forget_bias = 1.0" in out


def test_run_prints_summary_and_writes_results(tmp_path):
    p = run_cli("run", *tiny_overrides("copy", "gru", tmp_path / "o"), "train.max_steps=4")
    assert p.returncode == 0, p.stderr
    assert "val/acc" in p.stdout and "memoryless baseline" in p.stdout
    res = next((tmp_path / "o" / "runs").glob("*/results.json"))
    assert json.loads(res.read_text())["argv"][:2] == ["seqbench", "run"]


def test_run_with_config_file_and_overrides(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("task: {name: adding, length: 8}\nmodel: {name: rnn, d_model: 8}\n"
                   f"train: {{max_steps: 2, val_every: 2, val_batches: 1, batch_size: 4}}\n"
                   f"tracking: {{wandb: off}}\nout_dir: {tmp_path / 'o'}\n")
    p = run_cli("run", "--config", str(cfg), "model.n_layers=2", "eval.test=false")
    assert p.returncode == 0, p.stderr
    res = json.loads(next((tmp_path / "o" / "runs").glob("*/results.json")).read_text())
    assert res["config"]["model"]["n_layers"] == 2 and res["task"] == "adding"


@pytest.mark.parametrize("args, expect", [
    (["run", "task=nope"], "task.name: unknown name 'nope'; choose from"),
    (["run", "model.d_model=0"], "model.d_model"),
    (["run", "model.colour=red"], "model.colour: unknown field; allowed:"),
    (["run", "model=rnn", "model.bidirectional=true"], "model.bidirectional"),
    (["run", "optim.warmup_steps=10", "train.max_steps=10"], "optim.warmup_steps"),
    (["run", "--config", "/no/such/file.yaml"], "cannot read config"),
    (["run", "justaword"], "key=value"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2_no_traceback(args, expect, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], err
    assert "Traceback" not in err + out
    assert not (tmp_path / "outputs").exists()  # nothing written for a refused run


def test_bad_input_in_a_real_process(tmp_path):
    p = run_cli("run", "optim.optimizer=lion", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("error: optim.optimizer") and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_bad_yaml_file(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("model: {name: lstm\n")
    assert main(["run", "--config", str(f)]) == 2
    assert "not valid YAML at line 2" in capsys.readouterr().err


def test_unwritable_out_dir_fails_before_training(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", *tiny_overrides("copy", "lstm", blocker / "sub")]) == 2
    err = capsys.readouterr().err
    assert "out_dir: cannot write" in err and len(err.strip().splitlines()) == 1


def test_bad_data_file_leaves_no_run_folder(tmp_path, capsys):
    data = tmp_path / "bad.csv"
    data.write_text("foo,bar\n1,2\n")
    out = tmp_path / "o"
    assert main(["run", "task=sentiment", f"task.source={data}", "tracking.wandb=off", f"out_dir={out}"]) == 2
    err = capsys.readouterr().err
    assert str(data) in err and len(err.strip().splitlines()) == 1
    assert not list((out / "runs").glob("*"))  # the refused run left nothing half-made


def test_results_files_are_readable_by_others(tmp_path):
    import stat

    from seqbench.bench.config import build_config
    from seqbench.bench.train import run

    r = run(build_config({}, tiny_overrides("copy", "gru", tmp_path)), progress=False)
    for name in ("config.yaml", "results.json", "metrics.csv"):
        mode = (tmp_path / "runs" / r["run_id"] / name).stat().st_mode
        assert mode & stat.S_IRGRP and mode & stat.S_IROTH, name
