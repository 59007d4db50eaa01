"""Plug-ins without editing seqbench (``bench/plugins.py``): a toy package made in a temporary folder,
announced by a ``*.dist-info/entry_points.txt`` on ``PYTHONPATH``, is seen by ``list``, trains through
``run``, ``sweep``, ``compare``, ``cost`` and ``verify``, is logged to W&B and appears in a report; the
same classes by import path; each bad plug-in is refused with one line and exit 2, never a traceback.

Entry points are read at start-up, so one fresh interpreter runs every command through the CLI entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.bench.plugin_support import install_package

LAYERS = '''
"""Toy mixers of a user's package."""
import torch
from torch import nn


class ShiftMixer(nn.Module):
    """Token shift: mixes each position with the one `shift` steps back (a user's own layer)."""

    complexity = ("O(T·d²)", 1)

    def __init__(self, d_model: int, shift: int = 1):
        super().__init__()
        self.shift = shift
        self.mix = nn.Linear(2 * d_model, d_model)

    @staticmethod
    def forward_macs(d_model, T, shift):
        return T * 2 * d_model * d_model

    def forward(self, x):
        past = torch.nn.functional.pad(x, (0, 0, self.shift, 0))[:, : x.shape[1]]  # (B, T, d), causal
        return self.mix(torch.cat([x, past], -1))


class LeakyMixer(nn.Module):
    """Reads the future."""

    def __init__(self, d_model):
        super().__init__()
        self.lin = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.lin(x.flip(1))


class WrongShape(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.lin = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        return self.lin(x)


class NoWidth(nn.Module):
    def __init__(self):
        super().__init__()


def not_a_class(d_model):
    return None
'''

MODELS = '''
"""A toy backbone with its own config."""
from typing import Literal

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

TASKS = '''
"""A task of the user's package: copy memory under another name, with its own config class."""
from seqbench.tasks.synthetic.configs.copy import CopyConfig
from seqbench.tasks.synthetic.copy import CopyTask


class MyCopy(CopyTask):
    """Copy memory, brought by a plug-in."""

    Config = CopyConfig
'''

ENTRY_POINTS = """
[seqbench.mixers]
shift = myseq.layers:ShiftMixer
broken = myseq.nothere:Mixer

[seqbench.models]
bag = myseq.models:Bag

[seqbench.tasks]
mycopy = myseq.tasks:MyCopy
"""

SPEC = """
question: Does the plug-in's token shift carry copy symbols as far as attention?
base:
  task: {name: copy, n_symbols: 2, alphabet: 3, delay: 4}
  model: {name: stack, d_model: 8, n_layers: 1}
  train: {max_steps: 2, val_every: 2, val_batches: 1, batch_size: 4}
  eval: {test_batches: 1}
  tracking: {wandb: "off"}
method: grid
parameters:
  model.mixer: {values: [shift, "myseq.layers:ShiftMixer"]}
seeds: 1
"""

CLAIM = """
question: Does a plug-in mixer go through verify like a shipped one?
source:
  cite: Test 2026 Tab. 1
  paper: A. Test 2026
  where: Table 1
  metric: cross-entropy
  published: [{what: "shift", value: 1.0, unit: nats}]
base:
  task: {name: copy, n_symbols: 2, alphabet: 3, delay: 4}
  model: {name: stack, d_model: 8, n_layers: 1}
  train: {max_steps: 2, val_every: 2, val_batches: 1, batch_size: 4}
  eval: {test: false}
  tracking: {wandb: "off"}
method: grid
metric: {name: val/loss, goal: minimize}
parameters:
  model.mixer: {values: ["myseq.layers:ShiftMixer", attention]}
seeds: 2
profiles: {quick: {}, paper: {}}
figure: factors
expect:
  - {name: the plug-in's loss is finite, where: {model.mixer: "myseq.layers:ShiftMixer"}, metric: val/loss, below: 100}
"""

COPY = ["task=copy", "task.n_symbols=2", "task.alphabet=3", "task.delay=4"]
SHORT = [
    "train.max_steps=2",
    "train.val_every=2",
    "train.val_batches=1",
    "train.batch_size=4",
    "eval.test_batches=1",
    "tracking.wandb=off",
]

DRIVER = """
import contextlib, io, json, sys
from seqbench.bench.cli import main

report = {}
for name, argv in json.loads(sys.argv[1]).items():
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    report[name] = {"code": code, "stdout": buf.getvalue(), "stderr": err.getvalue()}
print("REPORT " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("plugin")
    install_package(root / "site", "myseq", {"layers": LAYERS, "models": MODELS, "tasks": TASKS}, ENTRY_POINTS)
    (root / "spec.yaml").write_text(SPEC)
    (root / "plugin_claim.yaml").write_text(CLAIM)
    out = root / "out"
    run = [*COPY, *SHORT]
    commands = {
        "list": ["list"],
        "list_mixer": ["list", "shift"],
        "run": [
            "run",
            *run,
            "model=stack",
            "model.mixer=shift",
            "model.mixer_args.shift=2",
            "model.d_model=8",
            "model.n_layers=1",
            f"out_dir={out / 'run'}",
        ],
        "run_path": [
            "run",
            *run,
            "model=stack",
            "model.mixer=myseq.layers:ShiftMixer",
            "model.d_model=8",
            f"out_dir={out / 'run_path'}",
        ],
        "run_model": ["run", *run, "model=bag", "model.hidden=6", "model.d_model=8", f"out_dir={out / 'run_model'}"],
        "run_model_path": ["run", *run, "model=myseq.models:Bag", "model.d_model=8", f"out_dir={out / 'run_mp'}"],
        "run_task": [
            "run",
            "task=mycopy",
            "task.n_symbols=2",
            "task.alphabet=3",
            "task.delay=4",
            *SHORT,
            "model=lstm",
            "model.d_model=8",
            f"out_dir={out / 'run_task'}",
        ],
        "sweep": ["sweep", str(root / "spec.yaml"), "--out-dir", str(out / "sweep"), "--study", "plug"],
        "report": ["report", "plug", "--out-dir", str(out / "sweep")],
        "compare": [
            "compare",
            *run,
            "model=stack",
            "model.mixer=shift,attention",
            "model.d_model=8",
            "model.n_layers=1",
            "seeds=1",
            "--out-dir",
            str(out / "compare"),
        ],
        "cost": [
            "cost",
            "models=shift,lstm",
            "lengths=8,16",
            "d_model=8",
            "batch_size=2",
            "repeats=1",
            "warmup=0",
            "device=cpu",
            "isolate=false",
            f"out_dir={out / 'cost'}",
        ],
        "verify": ["verify", str(root / "plugin_claim.yaml"), "--out-dir", str(out / "verify")],
        "run_wandb": [
            "run",
            *[a for a in run if a != "tracking.wandb=off"],
            "tracking.wandb=offline",
            "model=stack",
            "model.mixer=myseq.layers:ShiftMixer",
            "model.d_model=8",
            f"out_dir={out / 'wandb'}",
        ],
        "bad_broken": ["run", *run, "model=stack", "model.mixer=broken"],
        "bad_leak": [
            "run",
            *run,
            "model=stack",
            "model.mixer=myseq.layers:LeakyMixer",
            "model.d_model=8",
            f"out_dir={out / 'bad'}",
        ],
        "bad_shape": [
            "run",
            *run,
            "model=stack",
            "model.mixer=myseq.layers:WrongShape",
            "model.d_model=8",
            f"out_dir={out / 'bad'}",
        ],
        "bad_signature": ["run", *run, "model=stack", "model.mixer=myseq.layers:NoWidth"],
        "bad_function": ["run", *run, "model=stack", "model.mixer=myseq.layers:not_a_class"],
        "bad_import": ["run", *run, "model=stack", "model.mixer=myseq.nope:Mixer"],
        "bad_arg": ["run", *run, "model=stack", "model.mixer=shift", "model.mixer_args.shfit=2"],
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
    return out, json.loads(p.stdout.split("REPORT ", 1)[1])


def _results(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("runs/*/results.json"))]


def test_list_shows_plugins_and_the_broken_one(plugin):
    _, report = plugin
    out = report["list"]["stdout"]
    assert report["list"]["code"] == 0
    assert "  shift " in out and "Token shift" in out and "[plug-in: entry point shift = myseq.layers:ShiftMixer" in out
    assert "  bag " in out and "  mycopy " in out
    assert "broken" in out and "[broken plug-in]" in out and "No module named 'myseq.nothere'" in out
    mixer = report["list_mixer"]["stdout"]
    assert mixer.startswith("mixer shift:") and "model.mixer_args.shift = 1" in mixer


def test_a_plugin_mixer_trains_and_is_counted(plugin):
    out, report = plugin
    assert report["run"]["code"] == 0, report["run"]["stderr"]
    (r,) = _results(out / "run")
    assert r["status"] == "completed" and r["config"]["model"]["mixer"] == "shift"
    assert r["config"]["model"]["mixer_args"] == {"shift": 2}
    # its own count: T * 2 d^2 per layer, plus the stack's MLP 2 T d (4d) and the head T d C; T = 8, d = 8, C = 4
    T, d, C = 8, 8, 4
    macs = T * 2 * d * d + 2 * T * d * 4 * d + T * d * C
    assert r["model_flops_per_token"] == 3 * 2 * macs / T
    assert report["run_path"]["code"] == 0, report["run_path"]["stderr"]
    (p,) = _results(out / "run_path")
    assert p["config"]["model"]["mixer"] == "myseq.layers:ShiftMixer" and p["config"]["model"]["mixer_args"] == {
        "shift": 1
    }


def test_a_plugin_model_and_task_train(plugin):
    out, report = plugin
    for name, folder in (("run_model", "run_model"), ("run_model_path", "run_mp"), ("run_task", "run_task")):
        assert report[name]["code"] == 0, report[name]["stderr"]
        (r,) = _results(out / folder)
        assert r["status"] == "completed"
    assert _results(out / "run_model")[0]["config"]["model"] == {
        "name": "bag",
        "d_model": 8,
        "embedding": "learned",
        "hidden": 6,
    }
    assert _results(out / "run_task")[0]["config"]["task"]["name"] == "mycopy"


def test_a_plugin_goes_through_sweep_report_compare_and_cost(plugin):
    out, report = plugin
    assert report["sweep"]["code"] == 0, report["sweep"]["stderr"]
    assert sorted(r["config"]["model"]["mixer"] for r in _results(out / "sweep")) == [
        "myseq.layers:ShiftMixer",
        "shift",
    ]
    assert report["report"]["code"] == 0, report["report"]["stderr"]
    page = next((out / "sweep" / "reports").glob("*/index.html")).read_text()
    assert "myseq.layers:ShiftMixer" in page
    assert report["compare"]["code"] == 0, report["compare"]["stderr"]
    assert sorted(r["config"]["model"]["mixer"] for r in _results(out / "compare")) == ["attention", "shift"]
    assert report["cost"]["code"] == 0, report["cost"]["stderr"]
    cost = json.loads((out / "cost" / "cost.json").read_text())
    assert {(r["model"], r["length"], r["status"]) for r in cost["rows"]} >= {("shift", 8, "ok"), ("shift", 16, "ok")}
    assert cost["summary"]["shift"]["complexity"] == "O(T·d²)"


def test_a_plugin_is_judged_by_verify_and_logged_to_wandb(plugin):
    out, report = plugin
    assert report["verify"]["code"] == 0, report["verify"]["stderr"]
    assert sorted(r["config"]["model"]["mixer"] for r in _results(out / "verify")) == [
        "attention",
        "attention",
        "myseq.layers:ShiftMixer",
        "myseq.layers:ShiftMixer",
    ]
    assert "| plugin_claim |" in (out / "verify" / "verify" / "verify.md").read_text()
    assert "myseq.layers:ShiftMixer" in (out / "verify" / "verify" / "index.html").read_text()
    assert report["run_wandb"]["code"] == 0, report["run_wandb"]["stderr"]
    (run,) = _results(out / "wandb")
    logs = [p.read_bytes() for p in (out / "wandb").glob("wandb/*/*.wandb")]
    assert logs, "W&B offline wrote no run file"
    assert any(b"myseq.layers:ShiftMixer" in b and run["run_id"].encode() in b for b in logs)


@pytest.mark.parametrize(
    "case, words",
    [
        (
            "bad_broken",
            "error: model.mixer: mixer 'broken': the plug-in could not be loaded (entry point broken = "
            "myseq.nothere:Mixer of myseq: ModuleNotFoundError",
        ),
        ("bad_leak", "reads the future: its output at position 3 changes when only later inputs change"),
        ("bad_shape", "forward maps (2, 8, 8) to (2, 8, 16); a mixer returns (B, T, d_model)"),
        ("bad_signature", "NoWidth.__init__ takes no arguments; the mixer contract is Cls(d_model, **mixer_args)"),
        ("bad_function", "import path myseq.layers:not_a_class is a function, not a class"),
        ("bad_import", "cannot import myseq.nope: ModuleNotFoundError: No module named 'myseq.nope'"),
        ("bad_arg", "model.mixer_args.shfit: unknown field; allowed: shift; did you mean model.mixer_args.shift?"),
    ],
)
def test_a_bad_plugin_gets_one_line(plugin, case, words):
    _, report = plugin
    r = report[case]
    err = r["stderr"].strip()
    assert r["code"] == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith("error: ") and words in err, err
