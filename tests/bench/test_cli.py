"""The CLI as a user runs it: bad input gets one line, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from seqbench.bench.cli import main
from seqbench.bench.config import build_config, load_config
from seqbench.bench.core.registry import MODELS, TASKS
from tests.helpers import REPO, run_cli, tiny_overrides


def test_list_shows_every_registered_name_with_fields(capsys):
    assert main(["list", "-v"]) == 0
    out = capsys.readouterr().out
    for name in TASKS.names() + MODELS.names():
        assert f"  {name} " in out
    assert "task.delay = 50" in out and "model.forget_bias = 1.0" in out
    for line in (
        "train.max_steps = 1000 - optimizer steps",
        "optim.lr = 0.001",
        "eval.test = true",
        "tracking.wandb = offline",
        "diagnostics.every = 100",
        "train.early_stop.threshold = (required)",
        "seed = 0",
    ):
        assert line in out, line


def test_list_one_section(capsys):
    assert main(["list", "-v", "train"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "train:" and all(line.startswith("  train.") for line in lines[1:])
    assert any(line.startswith("  train.max_steps = 1000") for line in lines)
    assert main(["list", "gru"]) == 0  # a model name is a section too; a section implies -v
    out = capsys.readouterr().out
    assert out.startswith("model gru:") and "model.bidirectional = false" in out and "forget_bias" not in out
    assert main(["list", "-v", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: list: unknown section 'nope'; choose from task, model, mixer, optim, train")


def test_list_into_a_closed_pipe_exits_quietly():
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    p = subprocess.Popen(
        [sys.executable, "-m", "seqbench", "list", "-v"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    p.stdout.close()  # the reader is gone before the first write (`seqbench list -v | head -0`)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == "", err


def test_list_piped_to_head_prints_no_traceback():
    p = subprocess.run(
        f"{sys.executable} -m seqbench list -v | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert p.stdout == "tasks:\n" and p.stderr == "", p.stderr


def test_print_config_round_trips_and_trains_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ovs = ["model.d_model=32", "model=gru", "task=adding", "task.length=12", "optim.lr=3e-3"]
    assert main(["run", "--print-config", *ovs]) == 0
    text = capsys.readouterr().out
    (tmp_path / "run.yaml").write_text(text)
    assert load_config(tmp_path / "run.yaml").config_hash() == build_config({}, ovs).config_hash()
    assert main(["run", "--config", str(tmp_path / "run.yaml"), "--print-config"]) == 0
    assert capsys.readouterr().out == text
    assert "d_model: 32" in text and "name: gru" in text
    assert sorted(os.listdir(tmp_path)) == ["run.yaml"]  # no outputs/: nothing ran


def test_overrides_may_follow_options(capsys):
    assert main(["run", "model=gru", "--print-config", "model.d_model=8"]) == 0
    assert "d_model: 8" in capsys.readouterr().out


def test_a_config_file_field_the_new_model_lacks_is_left_out_with_a_note(tmp_path, capsys):
    f = tmp_path / "lstm.yaml"
    f.write_text("model: {name: lstm, d_model: 24, forget_bias: 2.0}\n")
    assert main(["run", "--config", str(f), "model=gru", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert "d_model: 24" in out and "forget_bias" not in out
    assert err == f"note: {f} sets model.forget_bias, which the chosen model has not; left out\n"


def test_run_prints_summary_and_writes_results(tmp_path):
    p = run_cli("run", *tiny_overrides("copy", "gru", tmp_path / "o", **{"train.max_steps": 4}))
    assert p.returncode == 0, p.stderr
    assert "val/acc" in p.stdout and "memoryless baseline" in p.stdout
    res = next((tmp_path / "o" / "runs").glob("*/results.json"))
    assert json.loads(res.read_text())["argv"][:2] == ["seqbench", "run"]


def test_run_with_config_file_and_overrides(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "task: {name: adding, length: 8}\nmodel: {name: rnn, d_model: 8}\n"
        f"train: {{max_steps: 2, val_every: 2, val_batches: 1, batch_size: 4}}\n"
        f"tracking: {{wandb: off}}\nout_dir: {tmp_path / 'o'}\n"
    )
    p = run_cli("run", "--config", str(cfg), "model.n_layers=2", "eval.test=false")
    assert p.returncode == 0, p.stderr
    res = json.loads(next((tmp_path / "o" / "runs").glob("*/results.json")).read_text())
    assert res["config"]["model"]["n_layers"] == 2 and res["task"] == "adding"


@pytest.mark.parametrize(
    "args, expect",
    [
        (["run", "task=nope"], "task.name: unknown name 'nope'; choose from"),
        (["run", "model.d_model=0"], "model.d_model"),
        (["run", "model.colour=red"], "model.colour: unknown field; allowed:"),
        (["run", "model=rnn", "model.bidirectional=true"], "model.bidirectional"),
        (["run", "model.forget_bias=2", "model=gru"], "model.forget_bias: unknown field"),
        (["run", "task.delay=5", "task=adding"], "task.delay: unknown field"),
        (["run", "train.early_stop=null", "train.early_stop.threshold=1"], "also set by train.early_stop=null"),
        (["run", "optim.warmup_steps=10", "train.max_steps=10"], "optim.warmup_steps"),
        (["run", "--config", "/no/such/file.yaml"], "cannot read config"),
        (["run", "justaword"], "key=value"),
        (["frobnicate"], "invalid choice"),
    ],
)
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
    from seqbench.bench.training.train import train_run

    r = train_run(build_config({}, tiny_overrides("copy", "gru", tmp_path)), progress=False)
    for name in ("config.yaml", "results.json", "metrics.csv"):
        mode = (tmp_path / "runs" / r["run_id"] / name).stat().st_mode
        assert mode & stat.S_IRGRP and mode & stat.S_IROTH, name
