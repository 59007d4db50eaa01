"""A refusal found before training refuses the whole command (issue 39): a plug-in mixer that reads the
future is refused by ``run``, ``sweep``, ``compare``, ``probe``, ``verify`` and ``cost`` alike with one line and
exit 2, before any run folder, study, spec, report, card or registration exists; and ``cost`` takes every
model and mixer ``run`` takes (plug-ins by entry point and by import path) with run's errors.

Entry points are read at start-up, so one fresh interpreter runs every command through the CLI entry, with a
toy plug-in package announced by a ``*.dist-info/entry_points.txt`` on ``PYTHONPATH`` (as tests/bench/test_plugins.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.bench.plugin_support import install_package

LAYERS = '''
import torch
from torch import nn


class ShiftMixer(nn.Module):
    """Token shift: each position mixed with the one before (a user's own layer)."""

    def __init__(self, d_model: int, shift: int = 1):
        super().__init__()
        self.shift = shift
        self.mix = nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        past = torch.nn.functional.pad(x, (0, 0, self.shift, 0))[:, : x.shape[1]]
        return self.mix(torch.cat([x, past], -1))


class LeakyMixer(nn.Module):
    """Reads the future."""

    def __init__(self, d_model):
        super().__init__()
        self.lin = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.lin(x.flip(1))
'''

MODELS = '''
from pydantic import Field
from torch import nn

from seqbench.models.base import Backbone
from seqbench.models.configs.base import ModelConfig


class BagConfig(ModelConfig):
    name: str = "bag"
    hidden: int = Field(12, ge=1, description="hidden width")


class Bag(Backbone):
    """Per-position perceptron (no memory at all)."""

    Config = BagConfig

    def __init__(self, cfg, spec, d_in):
        super().__init__(cfg, spec, d_in)
        self.net = nn.Sequential(nn.Linear(d_in, cfg.hidden), nn.Tanh(), nn.Linear(cfg.hidden, cfg.d_model))
        self.d_out = cfg.d_model

    def forward(self, x, lengths=None, state=None):
        return self.net(x), state
'''

ENTRY_POINTS = """
[seqbench.mixers]
shift = refusepkg.layers:ShiftMixer

[seqbench.models]
bag = refusepkg.models:Bag
"""

LEAKY = "refusepkg.layers:LeakyMixer"
BASE = {
    "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 4},
    "model": {"name": "stack", "d_model": 8, "n_layers": 1},
    "train": {"max_steps": 2, "val_every": 2, "val_batches": 1, "batch_size": 4},
    "eval": {"test": False},
    "tracking": {"wandb": "off"},
}
SPEC = {
    "question": "Does a leaky mixer train?",
    "base": BASE,
    "method": "grid",
    "parameters": {"model.mixer": {"values": [LEAKY, "attention"]}},
    "seeds": 1,
}
CLAIM = {
    "question": "Is a leaky mixer judged?",
    "source": {
        "cite": "Test 2026 Tab. 1",
        "paper": "A. Test 2026",
        "where": "Table 1",
        "metric": "cross-entropy",
        "published": [{"what": "leaky", "value": 1.0, "unit": "nats"}],
    },
    "base": BASE,
    "method": "grid",
    "metric": {"name": "val/loss", "goal": "minimize"},
    "parameters": {"model.mixer": {"values": [LEAKY, "attention"]}},
    "seeds": 2,
    "profiles": {"quick": {}, "paper": {}},
    "figure": "factors",
    "expect": [{"name": "finite", "where": {"model.mixer": LEAKY}, "metric": "val/loss", "below": 100}],
}
RUN = [
    "task=copy",
    "task.n_symbols=2",
    "task.alphabet=3",
    "task.delay=4",
    "train.max_steps=2",
    "train.val_every=2",
    "train.val_batches=1",
    "train.batch_size=4",
    "eval.test=false",
    "tracking.wandb=off",
]
COST = ["lengths=8,16", "d_model=8", "batch_size=2", "repeats=1", "warmup=0", "device=cpu", "isolate=false"]
READS_THE_FUTURE = "reads the future: its output at position 3 changes when only later inputs change"

DRIVER = """
import contextlib, io, json, sys, time
from seqbench.bench.cli import main

report = {}
for name, argv in json.loads(sys.argv[1]).items():
    buf, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    report[name] = {"code": code, "stdout": buf.getvalue(), "stderr": err.getvalue()}
print("REPORT " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def cli(tmp_path_factory) -> tuple[Path, dict]:
    """Every command, once, in one fresh interpreter with the toy plug-in installed: (the root, their outputs)."""
    root = tmp_path_factory.mktemp("refusals")
    install_package(root / "site", "refusepkg", {"layers": LAYERS, "models": MODELS}, ENTRY_POINTS)
    claims = root / "claims"
    claims.mkdir()
    (claims / "leaky_claim.yaml").write_text(json.dumps(CLAIM))  # YAML reads JSON
    (root / "spec.yaml").write_text(json.dumps(SPEC))
    out = root / "out"
    leaky = ["model=stack", f"model.mixer={LEAKY}", "model.d_model=8"]
    commands = {
        "run": ["run", *RUN, *leaky, "--out-dir", str(out / "run")],
        "sweep": ["sweep", str(root / "spec.yaml"), "--out-dir", str(out / "sweep"), "--study", "leaky"],
        "compare": [
            "compare",
            *RUN,
            "model=stack",
            f"model.mixer={LEAKY},attention",
            "model.d_model=8",
            "seeds=1",
            "--out-dir",
            str(out / "compare"),
        ],
        "probe": [
            "probe",
            *leaky,
            "train.max_steps=2",
            "seeds=1",
            "optim.lr=0.01",
            "--probes",
            "recall",
            "--rungs",
            "1",
            "--out-dir",
            str(out / "probe"),
        ],
        "verify": ["verify", str(claims / "leaky_claim.yaml"), "--out-dir", str(out / "verify")],
        "cost": ["cost", f"models=lstm,{LEAKY}", *COST, "--out-dir", str(out / "cost")],
        "cost_plugins": [
            "cost",
            "models=bag,refusepkg.models:Bag,refusepkg.layers:ShiftMixer,shift",
            *COST,
            "--out-dir",
            str(out / "cost_plugins"),
        ],
        "cost_typo": ["cost", "models=atention", *COST, "--out-dir", str(out / "cost_typo")],
        "run_typo": ["run", *RUN, "model=stack", "model.mixer=atention", "--out-dir", str(out / "run_typo")],
        "cost_import": ["cost", "models=refusepkg.nope:Mixer", *COST, "--out-dir", str(out / "cost_import")],
        "run_import": ["run", *RUN, "model=stack", "model.mixer=refusepkg.nope:Mixer", "--out-dir", str(out / "ri")],
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "site"), os.environ.get("PYTHONPATH", "")]),
        "WANDB_MODE": "disabled",
    }
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DRIVER), json.dumps(commands)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return root, json.loads(p.stdout.split("REPORT ", 1)[1])


def refused(r: dict, *words: str) -> str:
    """The command exited 2 with one line ``error: ...`` holding ``words``, and no traceback; that line."""
    err = r["stderr"].strip()
    lines = [ln for ln in err.splitlines() if not ln.startswith("note: ")]
    assert r["code"] == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and all(w in lines[0] for w in words), err
    return lines[0]


def nothing_under(folder: Path) -> None:
    assert not folder.exists() or not any(folder.rglob("*")), sorted(folder.rglob("*"))


@pytest.mark.parametrize("command", ["run", "sweep", "compare", "probe", "verify", "cost"])
def test_a_mixer_that_reads_the_future_refuses_the_whole_command(cli, command):
    root, report = cli
    field = "models: " if command == "cost" else "model.mixer: "
    refused(report[command], field + f"{LEAKY} {READS_THE_FUTURE}")
    assert "trial" not in report[command]["stdout"] and "[cost]" not in report[command]["stdout"]  # nothing ran
    nothing_under(root / "out" / command)  # no run folder, journal, spec, report, card or measurement
    assert not (root / "out" / command / "runs").exists()


def test_each_refusal_says_where_when_only_some_settings_are_refused(cli):
    _, report = cli
    assert refused(report["compare"]).startswith(f"error: with model.mixer={LEAKY}: model.mixer: ")
    assert refused(report["verify"]).startswith("error: with claim leaky_claim: model.mixer: ")
    assert refused(report["probe"]).startswith("error: model.mixer: ")  # its only model: every study


def test_verify_refuses_before_registering_the_claim(cli):
    root, _ = cli
    assert not (root / "claims" / "registry.yaml").exists()


def test_cost_measures_plugin_models_and_mixers_by_entry_point_and_import_path(cli):
    root, report = cli
    r = report["cost_plugins"]
    assert r["code"] == 0, r["stderr"]
    cost = json.loads((root / "out" / "cost_plugins" / "cost.json").read_text())
    names = ["bag", "refusepkg.models:Bag", "refusepkg.layers:ShiftMixer", "shift"]
    assert {(row["model"], row["length"], row["status"]) for row in cost["rows"]} == {
        (m, t, "ok") for m in names for t in (8, 16)
    }
    assert list(cost["summary"]) == names


def test_cost_refuses_a_name_as_run_does(cli):
    _, report = cli
    cost, run = refused(report["cost_typo"]), refused(report["run_typo"])
    for line in (cost, run):  # the registry's words, plug-ins listed, the import-path way out
        assert "'atention'; did you mean attention? choose from " in line
        assert ", shift, " in line and line.endswith("or name a class by import path (pkg.module:Class)")
    assert cost.startswith("error: models: unknown model 'atention'") and ", bag, " in cost
    cost, run = refused(report["cost_import"]), refused(report["run_import"])
    assert cost.removeprefix("error: models: ") == run.removeprefix("error: model.mixer: ")
    assert "cannot import refusepkg.nope: ModuleNotFoundError" in cost


class Leaky(nn.Module):
    """A mixer that reads the future (for the in-process test below, by import path)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.lin = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x.flip(1))


def test_a_run_refused_inside_the_trainer_leaves_no_run_folder(tmp_path):
    """A sweep trial makes its run's tracker before training (its study was checked before it started): a
    refusal when the run builds its model removes the folder that held only the config."""
    from seqbench.bench.config import build_config
    from seqbench.bench.core.errors import UserError
    from seqbench.bench.training.tracking import RunTracker
    from seqbench.bench.training.train import train_run

    cfg = build_config([*RUN, "model=stack", f"model.mixer={__name__}:Leaky", "model.d_model=8", f"out_dir={tmp_path}"])
    tracker = RunTracker(cfg)
    assert (tracker.dir / "config.yaml").is_file()
    with pytest.raises(UserError, match=READS_THE_FUTURE):
        train_run(cfg, progress=False, tracker=tracker)
    assert not tracker.dir.exists()
