"""Adding a model is one file: a toy model written into a temporary package, registered by importing
it, shows up in ``seqbench list``, trains with ``run``, is measured by ``cost``, is counted by FLOP
accounting and works in ``compare``, with nothing in seqbench edited.

The registries are filled at import time (``RunConfig``'s model union is built from them), so the
toy module is imported first, in a fresh interpreter that then calls the CLI entry for each command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

TOY_MODEL = '''
"""toy: a per-position two-layer perceptron (it sees one step at a time)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.configs.base import ModelConfig, head_macs, input_width


@MODELS.config("toy")
class ToyConfig(ModelConfig):
    """Per-position perceptron, the one-file model of tests/models/test_one_file_model.py."""

    name: Literal["toy"] = "toy"
    complexity = ("O(T·d·h)", 1)

    hidden: int = Field(24, ge=1, description="hidden width of the per-position perceptron")

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        d_in = input_width(self, spec.vocab_size, spec.input_dim)
        body = T * (d_in * self.hidden + self.hidden * self.d_model)
        return body + head_macs(spec, self.d_model, T)


# the module (a plug-in may keep its config and module in one file, as here)
from torch import nn

from seqbench.models.base import Backbone


@MODELS.module("toy")
class Toy(Backbone):
    def __init__(self, cfg: ToyConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        self.net = nn.Sequential(nn.Linear(d_in, cfg.hidden), nn.Tanh(), nn.Linear(cfg.hidden, cfg.d_model))
        self.d_out = cfg.d_model

    def forward(self, x, lengths=None, state=None):
        return self.net(x), state  # (B, T, d_model)
'''

# copy with n_symbols=2, alphabet=3, delay=4: T = 4 + 2 * 2 = 8 positions, 3 + 1 = 4 classes
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
from pathlib import Path

import toys.toy  # the one import line a shipped model has in models/__init__.py
from seqbench.bench.cli import main

out, commands = Path(sys.argv[1]), json.loads(sys.argv[2])
report = {}
for name, argv in commands.items():
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    report[name] = {"code": code, "stdout": buf.getvalue(), "stderr": err.getvalue()}
from seqbench.bench.training.cost_config import CostConfig
report["cost_default_models"] = CostConfig().models
print("REPORT " + json.dumps(report))
"""


def test_a_model_in_one_file_works_in_list_run_cost_flops_and_compare(tmp_path: Path):
    pkg = tmp_path / "pkg" / "toys"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(TOY_MODEL)
    out = tmp_path / "out"
    commands = {
        "list": ["list"],
        "run": ["run", *COPY, "model=toy", "model.d_model=8", *SHORT, f"out_dir={out / 'run'}"],
        "refused": ["run", *COPY, "model=toy", "model.n_layers=2", f"out_dir={out / 'run'}"],
        "cost": [
            "cost",
            "models=toy",
            "lengths=8,16",
            "d_model=8",
            "batch_size=2",
            "repeats=1",
            "warmup=0",
            "device=cpu",
            "isolate=false",
            f"out_dir={out / 'cost'}",
        ],
        "compare": [
            "compare",
            *COPY,
            "model=toy",
            "model.hidden=8,16",
            "model.d_model=8",
            "seeds=1",
            *SHORT,
            "--out-dir",
            str(out / "compare"),
        ],
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "pkg"), os.environ.get("PYTHONPATH", "")]),
        "WANDB_MODE": "disabled",
    }
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DRIVER), str(out), json.dumps(commands)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(p.stdout.split("REPORT ", 1)[1])

    assert report["list"]["code"] == 0
    assert "  toy " in report["list"]["stdout"] and "Per-position perceptron" in report["list"]["stdout"]

    assert report["run"]["code"] == 0, report["run"]
    (results_path,) = (out / "run" / "runs").glob("*/results.json")
    results = json.loads(results_path.read_text())
    assert results["model"] == "toy" and results["status"] == "completed" and results["steps"] == 2
    # the toy's own count: T * (d_in * h + h * d) + head T * d * C, with d_in = d = 8 (learned embedding),
    # h = 24, C = 4, T = 8; times 3 (fwd + bwd) * 2 FLOPs per MAC, per token
    macs = 8 * (8 * 24 + 24 * 8) + 8 * 8 * 4
    assert results["model_flops_per_token"] == 3 * 2 * macs / 8

    # a field the toy does not have is not forced on it: refused, naming the toy's own fields
    assert report["refused"]["code"] == 2
    refused = report["refused"]["stderr"].strip()
    assert refused.startswith("error: model.n_layers: unknown field for model toy") and "\n" not in refused
    assert refused.endswith("allowed: name, d_model, embedding, hidden")

    assert report["cost"]["code"] == 0, report["cost"]
    cost = json.loads((out / "cost" / "cost.json").read_text())
    assert [(r["model"], r["length"], r["status"]) for r in cost["rows"]] == [("toy", 8, "ok"), ("toy", 16, "ok")]
    assert (cost["summary"]["toy"]["complexity"], cost["summary"]["toy"]["expected_time_exponent"]) == ("O(T·d·h)", 1)
    assert "toy" in report["cost_default_models"]  # it declares a complexity class

    assert report["compare"]["code"] == 0, report["compare"]
    compared = [json.loads(p.read_text()) for p in (out / "compare" / "runs").glob("*/results.json")]
    assert sorted(r["config"]["model"]["hidden"] for r in compared) == [8, 16]
    assert all(r["model"] == "toy" and r["status"] == "completed" for r in compared)
    assert "ranked by val/acc" in report["compare"]["stdout"]
