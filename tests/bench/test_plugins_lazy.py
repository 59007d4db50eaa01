"""Plug-ins declared without torch (``seqbench.plugin``, ``bench/plugins.py``), and knobs typed by resolved hints.

A toy package made in a temporary folder and announced by a ``*.dist-info/entry_points.txt`` on ``PYTHONPATH``
(as tests/bench/test_plugins.py does) declares a mixer, a model and a task by config classes that name their classes by
import path. The light commands (``list``, ``--help``, ``--print-config``) import neither torch nor the plug-in's
layer modules, counted in ``sys.modules`` after each; ``run`` imports them when it builds and trains. A second
package points its entry point straight at a mixer class written with ``from __future__ import annotations``: its
``shift: int`` knob is an int, so ``shift=abc`` is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.plugin_support import drive, install_package

CONFIGS = '''
"""Declarations of a user's package: no torch here."""
from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from seqbench.plugin import MixerConfig, ModelConfig
from seqbench.tasks.synthetic.configs.copy import CopyConfig


class TokenShiftConfig(MixerConfig):
    """Token shift, declared without torch."""

    implementation: ClassVar[str] = "lazyseq.layers:TokenShift"
    complexity = ("O(T·d²)", 1)
    shift: int = Field(1, ge=1, description="how far back the mixed position is")

    def forward_macs(self, d_model: int, T: int) -> int:
        return T * 2 * d_model * d_model


class BagConfig(ModelConfig):
    """Per-position perceptron, declared without torch."""

    implementation: ClassVar[str] = "lazyseq.models:Bag"
    hidden: int = Field(12, ge=1, description="hidden width")


class LazyCopyConfig(CopyConfig):
    """Copy memory, declared without torch."""

    implementation: ClassVar[str] = "lazyseq.tasks:LazyCopy"


class NoImplementation(MixerConfig):
    """Forgot to say which class it configures."""


class Elsewhere(MixerConfig):
    """Names a module that is not there."""

    implementation: ClassVar[str] = "lazyseq.nothere:Mixer"


class NotAConfig(BaseModel):
    shift: int = 1
'''

LAYERS = '''
"""The mixer's module: torch."""
from __future__ import annotations

import torch
from torch import nn


class TokenShift(nn.Module):
    def __init__(self, d_model: int, shift: int = 1):
        super().__init__()
        self.shift = shift
        self.mix = nn.Linear(2 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        past = torch.nn.functional.pad(x, (0, 0, self.shift, 0))[:, : x.shape[1]]  # (B, T, d), causal
        return self.mix(torch.cat([x, past], -1))
'''

MODELS = """
from torch import nn

from seqbench.models.base import Backbone


class Bag(Backbone):
    def __init__(self, cfg, spec, d_in):
        super().__init__(cfg, spec, d_in)
        self.net = nn.Sequential(nn.Linear(d_in, cfg.hidden), nn.Tanh(), nn.Linear(cfg.hidden, cfg.d_model))
        self.d_out = cfg.d_model

    def forward(self, x, lengths=None, state=None):
        return self.net(x), state
"""

TASKS = """
from seqbench.tasks.synthetic.copy import CopyTask


class LazyCopy(CopyTask):
    pass
"""

LAZY_ENTRY_POINTS = """
[seqbench.mixers]
tshift = lazyseq.configs:TokenShiftConfig
noimpl = lazyseq.configs:NoImplementation
elsewhere = lazyseq.configs:Elsewhere
notconfig = lazyseq.configs:NotAConfig

[seqbench.models]
lbag = lazyseq.configs:BagConfig

[seqbench.tasks]
lcopy = lazyseq.configs:LazyCopyConfig
"""

# the old form (an entry point to the class) in a module written with postponed annotations
FUTURE = '''
"""A mixer whose annotations are strings (PEP 563), as seqbench's own files are written."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch
from torch import nn

if TYPE_CHECKING:
    from collections import OrderedDict


class FutureShift(nn.Module):
    """Token shift with postponed annotations."""

    def __init__(
        self,
        d_model: int,
        shift: int = 1,
        mode: Literal["cat", "add"] = "cat",
        table: OrderedDict | None = None,
        init: nn.Module | None = None,
    ):
        super().__init__()
        self.shift = shift
        self.mix = nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        past = torch.nn.functional.pad(x, (0, 0, self.shift, 0))[:, : x.shape[1]]
        return self.mix(torch.cat([x, past], -1))
'''

EAGER_ENTRY_POINTS = """
[seqbench.mixers]
fshift = eagerseq.layers:FutureShift
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
STACK = ["model=stack", "model.d_model=8", "model.n_layers=1"]
WATCHED = ("torch", "pytorch_lightning", "lazyseq.layers", "lazyseq.models", "lazyseq.tasks")

# each command in turn through the CLI entry, in one fresh interpreter: its exit code, output and which of
# WATCHED were imported by the time it returned
DRIVER = """
import contextlib, io, json, sys
from seqbench.bench.cli import main

watched = json.loads(sys.argv[2])
report = {}
for name, argv in json.loads(sys.argv[1]).items():
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # --help
            code = e.code
    loaded = [m for m in watched if m in sys.modules]
    report[name] = {"code": code, "stdout": buf.getvalue(), "stderr": err.getvalue(), "loaded": loaded}
print("REPORT " + json.dumps(report))
"""


def _drive(root: Path, sites: list[Path], commands: dict[str, list[str]]) -> dict:
    return drive(DRIVER, [commands, WATCHED], root, sites)


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("lazy")
    lazy, eager = root / "lazy", root / "eager"
    install_package(
        lazy, "lazyseq", {"configs": CONFIGS, "layers": LAYERS, "models": MODELS, "tasks": TASKS}, LAZY_ENTRY_POINTS
    )
    install_package(eager, "eagerseq", {"layers": FUTURE}, EAGER_ENTRY_POINTS)
    return root, lazy, eager


@pytest.fixture(scope="module")
def light(sites) -> dict:
    """Only the declarations installed: the light commands, each followed by what it imported."""
    root, lazy, _ = sites
    return _drive(
        root,
        [lazy],
        {
            "list": ["list"],
            "list_mixer": ["list", "tshift"],
            "list_model": ["list", "lbag"],
            "list_all": ["list", "-v"],
            "help": ["--help"],
            "run_help": ["run", "--help"],
            "print_config": ["run", *COPY, *STACK, "model.mixer=tshift", "model.mixer_args.shift=2", "--print-config"],
            "print_config_model": ["run", "task=lcopy", "model=lbag", "model.hidden=5", "--print-config"],
            "print_config_path": [
                "run",
                *COPY,
                *STACK,
                "model.mixer=lazyseq.configs:TokenShiftConfig",
                "--print-config",
            ],
            "bad_knob": ["run", *COPY, *STACK, "model.mixer=tshift", "model.mixer_args.shift=abc", "--print-config"],
        },
    )


@pytest.fixture(scope="module")
def trained(sites) -> tuple[Path, dict]:
    """Both packages installed: runs that build the declared classes, and the postponed-annotation knobs."""
    root, lazy, eager = sites
    out = root / "out"
    run = ["run", *COPY, *SHORT]
    report = _drive(
        root,
        [lazy, eager],
        {
            "run": [*run, *STACK, "model.mixer=tshift", "model.mixer_args.shift=2", f"out_dir={out / 'run'}"],
            "run_model_task": [
                "run",
                "task=lcopy",
                "task.n_symbols=2",
                "task.alphabet=3",
                "task.delay=4",
                *SHORT,
                "model=lbag",
                "model.hidden=5",
                "model.d_model=8",
                f"out_dir={out / 'run_model_task'}",
            ],
            "bad_import": [*run, *STACK, "model.mixer=elsewhere", f"out_dir={out / 'bad'}"],
            "list_future": ["list", "fshift"],
            "future_abc": [*run, *STACK, "model.mixer=fshift", "model.mixer_args.shift=abc"],
            "future_mode": [*run, *STACK, "model.mixer=fshift", "model.mixer_args.mode=sum"],
            "future_ok": [*run, *STACK, "model.mixer=fshift", "model.mixer_args.shift=3", "--print-config"],
        },
    )
    return out, report


def _one_line_refusal(r: dict, words: str) -> None:
    err = r["stderr"].strip()
    assert r["code"] == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith("error: ") and words in err, err


def _results(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("runs/*/results.json"))]


def test_light_commands_import_neither_torch_nor_the_plugins_classes(light):
    for name, r in light.items():
        if name == "bad_knob":
            continue
        assert r["code"] == 0, (name, r["stderr"])
        assert r["loaded"] == [], (name, r["loaded"])  # counted after each command, in the order run
    assert light["bad_knob"]["loaded"] == []


def test_list_shows_declared_plugins_and_refused_declarations(light):
    out = light["list"]["stdout"]
    assert "  tshift " in out and "Token shift, declared without torch." in out
    assert "[plug-in: entry point tshift = lazyseq.configs:TokenShiftConfig of lazyseq]" in out
    assert "  lbag " in out and "Per-position perceptron, declared without torch." in out
    assert "  lcopy " in out and "Copy memory, declared without torch." in out
    assert "noimpl" in out and 'no implementation: add implementation: ClassVar[str] = "pkg.module:Class"' in out
    assert "notconfig" in out and "NotAConfig is a pydantic model but not a MixerConfig" in out
    assert "  elsewhere " in out  # registered: its class is imported (and refused) only when built
    mixer = light["list_mixer"]["stdout"]
    assert mixer.startswith("mixer tshift:")
    assert "model.mixer_args.shift = 1 - how far back the mixed position is [>= 1]" in mixer
    assert "model.hidden = 12 - hidden width" in light["list_model"]["stdout"]
    assert "shift: 2" in light["print_config"]["stdout"]
    config = light["print_config_model"]["stdout"]
    assert "hidden: 5" in config and "name: lcopy" in config and "name: lbag" in config
    assert "mixer: lazyseq.configs:TokenShiftConfig" in light["print_config_path"]["stdout"]
    _one_line_refusal(light["bad_knob"], "model.mixer_args.shift: Input should be a valid integer")


def test_run_imports_the_declared_classes_and_trains(trained):
    out, report = trained
    r = report["run"]
    assert r["code"] == 0, r["stderr"]
    assert "lazyseq.layers" in r["loaded"] and "torch" in r["loaded"]
    (res,) = _results(out / "run")
    assert res["status"] == "completed" and res["config"]["model"]["mixer_args"] == {"shift": 2}
    # the declaration's forward_macs: T * 2 d^2 per layer, plus the stack's MLP 2 T d (4d) and the head T d C
    T, d, C = 8, 8, 4
    assert res["model_flops_per_token"] == 3 * 2 * (T * 2 * d * d + 2 * T * d * 4 * d + T * d * C) / T
    r = report["run_model_task"]
    assert r["code"] == 0, r["stderr"]
    assert {"lazyseq.models", "lazyseq.tasks"} <= set(r["loaded"])
    (res,) = _results(out / "run_model_task")
    assert res["status"] == "completed" and res["config"]["task"]["name"] == "lcopy"
    assert res["config"]["model"] == {"name": "lbag", "d_model": 8, "embedding": "learned", "hidden": 5}


def test_a_declared_class_that_cannot_be_imported_is_refused_when_built(trained):
    _, report = trained
    assert report["bad_import"]["code"] == 2
    _one_line_refusal(
        report["bad_import"],
        "mixer 'elsewhere': cannot import lazyseq.nothere: ModuleNotFoundError: No module named 'lazyseq.nothere'",
    )


def test_postponed_annotations_type_the_knobs(trained):
    _, report = trained
    _one_line_refusal(
        report["future_abc"],
        "model.mixer_args.shift: Input should be a valid integer, unable to parse string as an integer (got 'abc')",
    )
    _one_line_refusal(report["future_mode"], "model.mixer_args.mode: Input should be 'cat' or 'add' (got 'sum')")
    assert report["future_ok"]["code"] == 0 and "shift: 3" in report["future_ok"]["stdout"]
    listing = report["list_future"]["stdout"]
    assert "model.mixer_args.shift = 1\n" in listing and "model.mixer_args.mode = cat [cat | add]" in listing
    # a hint that cannot be resolved (a TYPE_CHECKING import) or validated (a module) leaves the knob untyped, said
    assert (
        "model.mixer_args.table = null - untyped, any value accepted: its type hint 'OrderedDict | None' cannot be "
        "resolved (NameError: name 'OrderedDict' is not defined)" in listing
    )
    assert (
        "model.mixer_args.init = null - untyped, any value accepted: its type hint 'nn.Module | None' cannot be "
        "validated (PydanticSchemaGenerationError)" in listing
    )
