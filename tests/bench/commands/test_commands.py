"""The commands as functions and as one command line: typed entries (the notebook API), the same flags
on every command (--out-dir, --print-config, --version), and light commands that import no torch."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

import seqbench
from seqbench.bench.cli import main, parse_args
from seqbench.bench.commands.cost import PointProgress
from seqbench.bench.core.cost_format import CostPoint
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.training.cost import Progress
from tests.helpers import REPO, tiny_overrides

HEAVY = ("torch", "pytorch_lightning", "lightning", "torchmetrics", "wandb", "tokenizers", "sacrebleu", "datasets")


def modules_after(args: list[str], cwd: Path) -> list[str]:
    """The heavy modules imported by ``main(args)`` in a fresh interpreter."""
    code = (
        "import sys\nfrom seqbench.bench.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "WANDB_MODE": "disabled"},
    )
    return json.loads(p.stderr.strip().splitlines()[-1].replace("'", '"'))


LIGHT = [
    ["--help"],
    ["list"],
    ["list", "-v"],
    ["list", "-v", "lm"],
    ["run", "--print-config"],
    ["run", "model=transformer", "task=sentiment", "--print-config"],
    ["run", "--help"],
    ["sweep", "demo", "--print-config"],
    ["compare", "model=lstm,gru", "task=adding", "--print-config"],
    ["cost", "models=tcn,transformer", "--print-config"],
    ["sweep", "--help"],
    ["compare", "--help"],
    ["verify", "--help"],
    ["probe", "model=lstm", "model=stack", "model.mixer=attention,mamba", "--print-config"],
    ["probe", "--help"],
]


def test_light_commands_import_no_torch(tmp_path):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("task: {name: copy}\nmodel: {name: lstm}\nseed: 0\n")
    for args in [*LIGHT, ["runs", "--out-dir", str(tmp_path)]]:
        assert modules_after(args, tmp_path) == [], args
    # the check sees torch where it is imported: eval loads trained modules
    assert "torch" in modules_after(["eval", "no-such-run", "--out-dir", str(tmp_path)], tmp_path)


def test_light_commands_print_what_a_full_import_prints(tmp_path, capsys):
    """Configs-only imports change when torch loads, not what a command says: each light command's
    output in a fresh interpreter equals its output here, where every model and task is imported whole."""
    for args in [a for a in LIGHT if "--help" not in a]:  # help text wraps to the terminal width
        fresh = subprocess.run(
            [sys.executable, "-m", "seqbench", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        assert main(args) == 0 and fresh.returncode == 0, (args, fresh.stderr)
        assert fresh.stdout == capsys.readouterr().out, args


def test_version_everywhere(capsys):
    want = f"seqbench {metadata.version('seqbench')}"
    assert seqbench.__version__ == metadata.version("seqbench")
    for args in (
        ["--version"],
        *(
            [cmd, "--version"]
            for cmd in ("list", "run", "sweep", "compare", "verify", "report", "runs", "cost", "probe")
        ),
    ):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 0 and capsys.readouterr().out.strip() == want, args


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["sweep", "demo"],
        ["compare", "model=lstm,gru"],
        ["verify"],
        ["report", "demo"],
        ["runs"],
        ["cost"],
        ["probe", "model=lstm"],
    ],
)
def test_every_command_with_an_output_folder_takes_out_dir(args):
    assert parse_args([*args, "--out-dir", "elsewhere"]).out_dir == "elsewhere"


def test_run_out_dir_flag_and_setting(tmp_path, capsys):
    assert main(["run", "--print-config", "--out-dir", str(tmp_path / "a")]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["out_dir"] == str(tmp_path / "a")
    assert main(["run", "--print-config", f"out_dir={tmp_path / 'b'}"]) == 0  # the old spelling
    assert yaml.safe_load(capsys.readouterr().out)["out_dir"] == str(tmp_path / "b")
    assert main(["run", "--print-config", "--out-dir", "a", "out_dir=b"]) == 2
    assert capsys.readouterr().err.strip() == "error: --out-dir: a disagrees with out_dir=b; give one of them"


def test_cost_out_dir_and_print_config(tmp_path, capsys):
    assert main(["cost", "models=lstm", "lengths=8,16", "--out-dir", str(tmp_path), "--print-config"]) == 0
    c = yaml.safe_load(capsys.readouterr().out)
    assert c["out_dir"] == str(tmp_path) and c["models"] == ["lstm"] and c["lengths"] == [8, 16]
    assert main(["cost", f"out_dir={tmp_path}", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["out_dir"] == str(tmp_path)
    assert main(["cost", "out_dir=a", "--out-dir", "b"]) == 2
    assert "disagrees with out_dir=a" in capsys.readouterr().err


def test_compare_print_config_is_print_spec(capsys):
    settings = ["model=lstm,gru", "task=copy", "seeds=2"]
    assert main(["compare", *settings, "--print-spec"]) == 0
    spec = capsys.readouterr().out
    assert main(["compare", *settings, "--print-config"]) == 0
    assert capsys.readouterr().out == spec and "seqbench sweep THIS.yaml --study compare-" in spec


def test_runs_out_dir_setting_names_the_folder(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    assert main(["runs", f"out_dir={tmp_path}"]) == 0
    assert f"0 of 0 runs under {tmp_path / 'runs'}" in capsys.readouterr().out
    assert main(["runs", f"out_dir={tmp_path}", "--out-dir", "other"]) == 2
    assert "list one folder at a time" in capsys.readouterr().err


def test_cost_progress_counts_points_and_says_eta(capsys):
    progress = PointProgress(models=2, lengths=[8, 16])
    rows = [
        CostPoint("lstm", 8, "ok", time_ms=1.0),
        CostPoint("lstm", 16, "ok", time_ms=2.0),
        CostPoint("gru", 8, "timeout"),
        CostPoint("gru", 16, "skipped"),
    ]
    for i, row in enumerate(rows):
        progress(Progress(row, i + 1, 4))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("] ")[0] + "]" for line in lines][3] == "[4/4]"
    for line in lines[:3]:
        assert line.split(", ETA ")[0] in ("[1/4", "[2/4", "[3/4") and "s] [cost] " in line, line
    assert "T=8" in lines[0] and "1.00 ms" in lines[0] and lines[3].endswith("skipped")


def test_the_notebook_api_is_the_commands(tmp_path):
    assert seqbench.list_tasks() == TASKS.names() and seqbench.list_models() == MODELS.names()
    for name in seqbench.__all__:
        assert getattr(seqbench, name) is not None, name
    r = seqbench.run(seqbench.build_config(tiny_overrides("copy", "gru", tmp_path)), progress=False)
    assert isinstance(r, seqbench.RunResult) and r.ok and r.run_dir == tmp_path / "runs" / r.run_id
    assert json.loads((r.run_dir / "results.json").read_text())["final"] == r.final == r["final"]
    listed = seqbench.runs(tmp_path, ["model=gru"])
    assert listed.total == 1 and list(listed.shown["run_id"]) == [r.run_id]


def test_run_records_the_users_command_line(tmp_path, capsys):
    args = ["run", *tiny_overrides("copy", "lstm", tmp_path)]
    assert main(args) == 0
    res = json.loads(next((tmp_path / "runs").glob("*/results.json")).read_text())
    assert res["argv"] == ["seqbench", *args]  # the arguments given to main, not the test runner's
