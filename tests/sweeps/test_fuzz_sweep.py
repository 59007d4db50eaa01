"""Property: any invalid sweep spec, command-line override or flag, however mangled, gets exit
code 2, stderr lines that are each an ``error:`` (one per problem, the first naming the offending
field) or a ``note:``, no traceback, and nothing
written (no runs, no journal, no study). A mutation that is still valid is discarded (``assume``),
and reaching a worker or a training run fails the test."""

from __future__ import annotations

import copy
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import seqbench.bench.training.train
import seqbench.sweeps.processes
import seqbench.sweeps.worker
from seqbench.bench.cli import main
from seqbench.sweeps.spec import load_spec
from tests.helpers import TINY_TASK

# every health check but filter_too_much: if assume() threw nearly every case away, fail loudly
QUIET_CHECKS = [h for h in HealthCheck if h is not HealthCheck.filter_too_much]

TINY = {
    "task": {"name": "copy", **TINY_TASK["copy"]},
    "model": {"d_model": 16},
    "train": {"max_steps": 4, "val_every": 2, "val_batches": 1, "batch_size": 4},
    "tracking": {"wandb": "off"},
}
SPECS = [
    {
        "question": "grid",
        "base": TINY,
        "method": "grid",
        "metric": {"name": "val/acc", "goal": "maximize"},
        "parameters": {"model.name": {"values": ["rnn", "lstm"]}, "task.delay": {"values": [3, 5]}},
        "per_model": {"lstm": {"model.forget_bias": 1.0}},
        "seeds": [0, 1],
    },
    {
        "base": TINY,
        "method": "tpe",
        "trials": 4,
        "metric": {"name": "val/loss", "goal": "minimize"},
        "parameters": {
            "optim.lr": {"distribution": "log_uniform", "min": 1e-4, "max": 1e-2},
            "model.d_model": {"distribution": "int_uniform", "min": 8, "max": 16},
        },
        "pruner": {"name": "median", "warmup_steps": 2},
        "seeds": 2,
    },
    {
        "base": {**TINY, "task": "adding"},
        "method": "random",
        "trials": 3,
        "parameters": {"model.name": {"values": ["gru", "transformer"]}},
        "per_model": {"transformer": {"model.n_heads": 2}},
        "per_task": {"adding": {"task.length": 8}},
    },
]
TOP = [
    "question",
    "base",
    "method",
    "metric",
    "parameters",
    "per_model",
    "per_task",
    "seeds",
    "pruner",
    "trials",
    "timeout",
]
HUGE = 10**40
BAD_VALUES = st.one_of(
    st.just("not-a-number"),
    st.just(""),
    st.just([]),
    st.just({}),
    st.lists(st.integers(), min_size=1, max_size=3),
    st.dictionaries(st.text(string.ascii_lowercase, min_size=1, max_size=5), st.integers(), min_size=1, max_size=2),
    st.just(-(10**9)),
    st.just(HUGE),
    st.just(float("nan")),
    st.just(-1.5),
    st.just(0),
    st.just(None),
    st.text(min_size=2000, max_size=3000),
)
ZZ = st.text(string.ascii_lowercase, min_size=1, max_size=8).map(lambda s: "zz_" + s)


def leaf_paths(d: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out += leaf_paths(v, prefix + (k,))
        else:
            out.append(prefix + (k,))
    return out


Token = str | tuple[str, ...]  # what the first error line must contain (one of a tuple)


def set_path(d: dict, path: tuple, value) -> None:
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def _value(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """A bad value at any leaf, including base's run-config leaves and dotted keys of per_model."""
    path = draw(st.sampled_from(leaf_paths(spec)))
    set_path(spec, path, draw(BAD_VALUES))
    return {"base": path[1:2], "parameters": path[1:2], "per_model": path[-1:], "per_task": path[-1:]}.get(
        path[0], path[:1]
    )[0]


def _top_value(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """A whole section replaced by a wrong type or an empty/huge value."""
    key = draw(st.sampled_from(TOP))
    spec[key] = draw(BAD_VALUES)
    token = key
    if key == "base":  # dropping base's task can orphan a per_task block or the metric: those are named
        token = (
            next(iter(spec[key])) if isinstance(spec[key], dict) and spec[key] else "base",
            "per_task",
            "per_model",
            "metric",
        )
    elif key == "parameters":  # emptying parameters can orphan a per_model block: that is named instead
        token = ("parameters", "per_model", "per_task")
    return token


def _unknown_top(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """An unknown top-level key."""
    token = draw(ZZ)
    spec[token] = 1
    return token


def _unknown_nested(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """An unknown key inside the pruner, the metric, a parameter or base."""
    where = draw(st.sampled_from(["pruner", "metric", "param", "base", "base.train", "base.model"]))
    token = draw(ZZ)
    if where == "pruner":
        spec.setdefault("pruner", {"name": "none"})
        spec["pruner"] = {**spec["pruner"], token: 1} if isinstance(spec["pruner"], dict) else {token: 1}
    elif where == "metric":
        spec["metric"] = {"name": "val/acc", "goal": "maximize", token: 1}
    elif where == "param":
        spec["parameters"][next(iter(spec["parameters"]))][token] = 1
    elif where == "base":
        spec["base"] = {**spec["base"], token: 1}
    else:
        section = where.split(".")[1]
        node = spec["base"][section]
        spec["base"] = {**spec["base"], section: {**(node if isinstance(node, dict) else {"name": node}), token: 1}}
    return token


def _unknown_param_path(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """Unknown dotted paths in parameters / per_model / per_task."""
    section = draw(st.sampled_from(["model", "task", "optim", "train", "eval", "nosuch"]))
    token = draw(ZZ)
    key = f"{section}.{token}"
    token = section if section == "nosuch" else token  # an unknown section is named, not its key
    where = draw(st.sampled_from(["parameters", "per_model", "per_task"]))
    if where == "parameters":
        spec["parameters"][key] = {"values": [draw(st.sampled_from([1, 0.5, "x", True]))]}
    elif where == "per_model" and spec.get("per_model"):
        spec["per_model"][next(iter(spec["per_model"]))][key] = 1
    elif spec.get("per_task"):
        spec["per_task"][next(iter(spec["per_task"]))][key] = 1
    else:
        spec["parameters"][key] = {"values": [1]}
    return token


def _bad_param(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """Out-of-range or malformed search spaces."""
    key = draw(st.sampled_from(["model.d_model", "train.batch_size", "optim.lr", "task.delay", "model.name"]))
    spec["parameters"] = {k: v for k, v in spec["parameters"].items() if k != key}
    spec.setdefault("per_model", {})
    for blk in spec["per_model"].values():
        blk.pop(key, None)
    choice = draw(st.sampled_from(["empty", "negative", "huge", "string", "range", "log0", "mixed"]))
    spec["parameters"][key] = {
        "empty": {"values": []},
        "negative": {"values": [-3]},
        "huge": {"values": [HUGE]},
        "string": {"values": ["x" * 3000]},
        "range": {"distribution": "uniform", "min": 5, "max": 1},
        "log0": {"distribution": "log_uniform", "min": 0, "max": 1},
        "mixed": {"values": [1], "min": 0},
    }[choice]
    return key.split(".")[-1] if choice not in ("range", "log0", "mixed", "empty") else "parameters"


def _per_block(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """A per_model/per_task block for a name never chosen, or one that switches the model."""
    which = draw(st.sampled_from(["unknown_model", "unknown_task", "switch"]))
    name = draw(st.text(string.ascii_lowercase, min_size=1, max_size=10))
    if which == "unknown_model":
        spec["per_model"] = {**spec.get("per_model", {}), name: {"model.d_model": 8}}
        return "per_model"
    if which == "unknown_task":
        spec["per_task"] = {**spec.get("per_task", {}), name: {"task.length": 8}}
        return "per_task"
    spec["per_model"] = {"rnn" if "rnn" in str(spec["parameters"]) else "gru": {"model.name": "lstm"}}
    return "per_model"


def _override(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """A command-line key=value on the spec's base."""
    path = draw(st.sampled_from(["task.delay", "model.d_model", "train.max_steps", "optim.lr", "seed"]))
    bad = draw(st.sampled_from(["[1, 2", "abc", "-999999", "{x: 1}", "1e999", ""]))
    unknown = draw(st.booleans())
    if unknown:
        path = draw(st.sampled_from(["task", "model", "train", "nosuch"])) + "." + draw(ZZ)
        bad = "1"
    argv.append(f"{path}={bad}")
    return path.split(".")[0] if path.startswith("nosuch") or path == "seed" else path.split(".")[-1]


def _flag(draw: Any, spec: dict[str, Any], argv: list[str]) -> Token:
    """A bad command-line flag."""
    flag, value = draw(
        st.sampled_from(
            [
                ("--trials", "0"),
                ("--trials", "-5"),
                ("--trials", "many"),
                ("--workers", "0"),
                ("--workers", "x"),
                ("--heartbeat", "0"),
                ("--heartbeat", "-1"),
                ("--storage", "redis://localhost/0"),
            ]
        )
    )
    argv += [flag, value]
    return flag


MUTATIONS = {  # kind -> how it breaks the spec (or the command line), returning the token to expect
    "value": _value,
    "top_value": _top_value,
    "unknown_top": _unknown_top,
    "unknown_nested": _unknown_nested,
    "unknown_param_path": _unknown_param_path,
    "bad_param": _bad_param,
    "per_block": _per_block,
    "override": _override,
    "flag": _flag,
}


@st.composite
def mutated(draw):
    """(spec dict, extra argv, a token the first error line must contain)."""
    spec = copy.deepcopy(draw(st.sampled_from(SPECS)))
    argv: list[str] = []
    kind = draw(st.sampled_from(list(MUTATIONS)))
    token = MUTATIONS[kind](draw, spec, argv)
    return spec, argv, token


def _invalid(path: Path, argv: list[str]) -> bool:
    """True when the CLI must refuse this case (what cmd_sweep checks before opening a study)."""
    overrides = [a for a in argv if "=" in a and not a.startswith("--")]
    flags = dict(zip(argv[::2], argv[1::2])) if argv and argv[0].startswith("--") else {}
    try:
        if flags:
            return True  # every flag value drawn above is invalid
        load_spec(path, overrides)
    except Exception:  # noqa: BLE001 - anything else: the CLI must still refuse it cleanly
        return True
    return False


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("an invalid sweep reached a worker or a training run")

    for mod, name in (
        (seqbench.sweeps.worker, "worker"),
        (seqbench.sweeps.processes, "run_workers"),
        (seqbench.sweeps.worker, "run_trial"),
        (seqbench.bench.training.train, "train_run"),
    ):
        monkeypatch.setattr(mod, name, refuse)


def problems(code: int, out: str, err: str, token: str | tuple | None, tmp: Path) -> list[str]:
    """What is wrong with how the CLI refused an invalid sweep (empty when it refused it cleanly)."""
    lines = err.strip().splitlines()
    found = []
    if code != 2:
        found.append(f"exit code {code}, not 2")
    if not lines:
        found.append("0 stderr lines")
    elif not all(line.startswith(("error: ", "note: ")) for line in lines):
        found.append("a stderr line that is neither an error: nor a note:")
    if "Traceback" in err + out:
        found.append("a traceback")
    if lines and not lines[0].startswith("error: "):
        found.append("first line does not start with 'error: '")
    alternatives = () if token is None else token if isinstance(token, tuple) else (token,)
    # every problem is listed, one per line (two mistakes, two lines): the injected one must be among them
    errors = [line for line in lines if line.startswith("error: ")]
    if errors and alternatives and not any(t in line for t in alternatives for line in errors):
        found.append(f"no error line names any of {alternatives}")
    written = {str(p.relative_to(tmp)) for d in ("out", "outputs") for p in (tmp / d).rglob("*")}
    written |= {str(p.relative_to(tmp)) for p in tmp.rglob("*.journal")}
    if (tmp / "out").exists() or (tmp / "outputs").exists() or written:
        found.append(f"files written: {sorted(written)}")
    return found


def test_the_refusal_check_can_fail(tmp_path):
    assert problems(2, "", "error: parameters: bad\n", "parameters", tmp_path) == []
    assert problems(0, "", "", None, tmp_path) == ["exit code 0, not 2", "0 stderr lines"]
    assert "a traceback" in problems(2, "", "error: x\nTraceback (most recent call last):\n", None, tmp_path)
    assert problems(2, "", "error: seeds: bad\n", "parameters", tmp_path) == [
        "no error line names any of ('parameters',)"
    ]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "optuna.journal").write_text("")
    assert problems(2, "", "error: x: y\n", None, tmp_path) == ["files written: ['out/optuna.journal']"]


@settings(max_examples=200, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=mutated())
def test_invalid_sweep_specs_fail_cleanly(case, tmp_path_factory, capsys, monkeypatch):
    spec, argv, token = case
    tmp = tmp_path_factory.mktemp("fuzzsweep")
    monkeypatch.chdir(tmp)  # a default out_dir ("outputs") would land here
    if isinstance(spec.get("base"), dict):
        spec["base"] = {**spec["base"], "out_dir": str(tmp / "out")}
    p = tmp / "spec.yaml"
    p.write_text(yaml.safe_dump(spec, allow_unicode=True))
    assume(_invalid(p, argv))
    code = main(["sweep", str(p), "--out-dir", str(tmp / "out"), *argv])
    out, err = capsys.readouterr()
    assert problems(code, out, err, token, tmp) == [], (spec, argv, err)


def _valid_spec_text(text: str, tmp: Path) -> bool:
    try:
        p = tmp / "probe.yaml"
        p.write_text(text)
        load_spec(p)
        return True
    except Exception:  # noqa: BLE001
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(
    text=st.one_of(
        st.text(min_size=1, max_size=200),
        st.sampled_from(
            [
                "parameters: [unclosed",
                "- a\n- b",
                "base: {task: copy",
                "\tmethod: grid",
                "method: grid\nmethod: tpe",
                "parameters: 3",
                "!!python/object:os.system x",
                "? [a]\n: b",
                "base: &a [*a]",
                "seeds: !!binary AAAA",
                "\x00\x01",
                "parameters:\n  model.d_model: {values: [8,,]}",
            ]
        ),
    )
)
def test_malformed_sweep_yaml_fails_cleanly(text, tmp_path_factory, capsys, monkeypatch):
    tmp = tmp_path_factory.mktemp("yaml")
    monkeypatch.chdir(tmp)
    assume(not _valid_spec_text(text, tmp))
    p = tmp / "spec.yaml"
    p.write_text(text)
    code = main(["sweep", str(p), "--out-dir", str(tmp / "out")])
    out, err = capsys.readouterr()
    assert problems(code, out, err, None, tmp) == [], (text, err)
