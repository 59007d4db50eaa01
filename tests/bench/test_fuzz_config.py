"""Config fuzzing against an oracle that does not ask the validator.

1. Field ranges: every numeric field in ``RULES`` is declared here from its documented constraint
   (field descriptions, README); values are drawn on both sides of each bound, given as a file
   value and as a ``key=value`` override, and ``build_config`` must accept exactly the values the
   declaration allows. A bad value the validator lets through fails this test.
2. Refusals: cases invalid by construction (unknown keys, sections and names) and the oracle's
   invalid values get exit code 2, stderr lines that are each an ``error:`` (one per problem, the
   first naming the field) or a ``note:``, no traceback and nothing written; the oracle's valid values
   pass ``seqbench run --print-config``.
3. Any text as a ``--config`` file: a clean refusal, or a config that round-trips.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seqbench.bench.training.train
from seqbench.bench.cli import main
from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError

QUIET_CHECKS = [h for h in HealthCheck if h is not HealthCheck.filter_too_much]
INT_LIMIT = 2**31 - 1  # README: sizes, steps and lengths must be below 2**31
BASE = ["task=copy", "model=lstm"]  # warmup_steps 0 < max_steps 1000: no cross-field rule in play


@dataclass(frozen=True)
class Rule:
    """What a field accepts: a finite int or float in [lo, hi] (open ends when ``*_open``), or null."""

    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False

    def accepts(self, v: Any) -> bool:
        if v is None:
            return self.nullable
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False  # text, lists, mappings; a boolean is not a number
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if self.kind == "int":
            if isinstance(v, float) and not v.is_integer():
                return False
            if abs(int(v)) > INT_LIMIT:
                return False
        lo_ok = self.lo is None or (v > self.lo if self.lo_open else v >= self.lo)
        hi_ok = self.hi is None or (v < self.hi if self.hi_open else v <= self.hi)
        return lo_ok and hi_ok


RULES: dict[str, Rule] = {
    "seed": Rule("int", 0),
    "train.max_steps": Rule("int", 1),
    "train.batch_size": Rule("int", 1),
    "train.val_every": Rule("int", 1),
    "train.val_batches": Rule("int", 1),
    "train.num_nodes": Rule("int", 1),
    "train.threads": Rule("int", 1, nullable=True),
    "train.checkpoint_every": Rule("int", 1, nullable=True),
    "train.diverge_loss": Rule("float", 0, lo_open=True, nullable=True),
    "eval.test_batches": Rule("int", 1),
    "diagnostics.every": Rule("int", 1),
    "optim.lr": Rule("float", 0, lo_open=True),
    "optim.weight_decay": Rule("float", 0),
    "optim.momentum": Rule("float", 0, 1, hi_open=True),
    "optim.min_lr_ratio": Rule("float", 0, 1),
    "optim.grad_clip": Rule("float", 0, lo_open=True, nullable=True),
    "optim.warmup_steps": Rule("int", 0, 1000, hi_open=True),  # below train.max_steps (1000)
    "model.d_model": Rule("int", 1),
    "model.n_layers": Rule("int", 1),
    "model.dropout": Rule("float", 0, 1, hi_open=True),
    "model.forget_bias": Rule("float"),
    "task.n_symbols": Rule("int", 1),
    "task.alphabet": Rule("int", 2),
    "task.delay": Rule("int", 1),
}


def values_around(rule: Rule) -> st.SearchStrategy:
    """Values on both sides of each bound, at the integer limit, and of the wrong type."""
    near = [x for b in (rule.lo, rule.hi) if b is not None for x in (b - 1, b - 1e-9, b, b + 1e-9, b + 1, b + 0.5)]
    near += [float(b) for b in (rule.lo, rule.hi) if b is not None]
    return st.one_of(
        st.sampled_from(near or [0]),
        st.sampled_from([0, -1, 2.5, 3.0, INT_LIMIT, INT_LIMIT + 1, -INT_LIMIT - 1, 1e300, -1e300, 10**40]),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=False),  # training sets flush-denormal
        st.sampled_from([None, True, False, "abc", "", "1:30", [1], {"a": 1}]),
    )


@st.composite
def field_value(draw) -> tuple[str, Rule, Any]:
    key = draw(st.sampled_from(sorted(RULES)))
    return key, RULES[key], draw(values_around(RULES[key]))


def as_text(v: Any) -> str:
    """A value as typed on the command line (YAML flow style)."""
    return yaml.safe_dump(v, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def nested(key: str, v: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"task": {"name": "copy"}, "model": {"name": "lstm"}}
    node = d
    *path, last = key.split(".")
    for p in path:
        node = node.setdefault(p, {})
    node[last] = v
    return d


def reached(cfg, key: str) -> Any:
    node = cfg.to_dict()
    for p in key.split("."):
        node = node[p]
    return node


def outcome(d: dict[str, Any], overrides: list[str]) -> tuple[bool, Any]:
    try:
        return True, build_config(d, overrides)
    except UserError as e:
        return False, str(e)


@settings(max_examples=400, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=field_value())
def test_each_field_accepts_exactly_its_documented_range(case):
    key, rule, v = case
    expected = rule.accepts(v)
    for how, (d, ovs) in {"file": (nested(key, v), []), "override": ({}, [*BASE, f"{key}={as_text(v)}"])}.items():
        ok, got = outcome(d, ovs)
        assert ok == expected, f"{how} {key}={v!r}: {'accepted' if ok else 'refused'} ({got})"
        if ok:
            want = float(v) if rule.kind == "float" and v is not None else v
            assert reached(got, key) == want, (how, key, v, reached(got, key))
        else:
            assert got.startswith(key) and "\n" not in got, got


# -- refusals through the CLI --------------------------------------------------------------------


@st.composite
def refused_or_valid(draw) -> tuple[dict, list[str], str | None]:
    """(config file, overrides, field the error must name, or None when the oracle says valid)."""
    d = {"task": {"name": "copy"}, "model": {"name": "lstm"}, "tracking": {"wandb": "off"}}
    kind = draw(st.sampled_from(["value", "unknown_key", "unknown_override", "bad_name", "malformed"]))
    zz = "zz_" + draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
    if kind == "value":
        key, rule, v = draw(field_value())
        return d, [f"{key}={as_text(v)}"], None if rule.accepts(v) else key
    if kind == "unknown_key":
        section = draw(st.sampled_from(["", "task", "model", "optim", "train", "eval", "tracking", "diagnostics"]))
        (d.setdefault(section, {}) if section else d)[zz] = 1
        return d, [], f"{section}.{zz}" if section else zz
    if kind == "unknown_override":
        section = draw(st.sampled_from(["task", "model", "optim", "train", "eval", "tracking", zz]))
        return d, [f"{section}.{zz}=1"], section if section == zz else f"{section}.{zz}"
    if kind == "bad_name":
        section = draw(st.sampled_from(["task", "model"]))
        return d, [f"{section}={zz}"], f"{section}.name"
    key = draw(st.sampled_from(["model..d_model", ".seed", "train.", "justaword"]))
    return d, [key if key == "justaword" else f"{key}=1"], key.strip(".").split(".")[0] or key


def _clean(lines: list[str]) -> bool:
    """Every line is one problem (``error: ...``, the CLI's own) or a composition ``note:``."""
    return bool(lines) and all(line.startswith(("error: ", "note: ")) for line in lines)


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    def refuse(*a, **k):  # nothing here may start a run
        raise AssertionError("a fuzz case reached training")

    monkeypatch.setattr(seqbench.bench.training.train, "train_run", refuse)


@settings(max_examples=150, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=refused_or_valid())
def test_the_cli_refuses_cleanly_what_the_oracle_refuses(case, tmp_path_factory, capsys):
    d, overrides, field = case
    tmp = tmp_path_factory.mktemp("fuzz")
    d["out_dir"] = str(tmp / "out")
    cfg = tmp / "run.yaml"
    cfg.write_text(yaml.safe_dump(d, allow_unicode=True))
    code = main(["run", "--config", str(cfg), "--print-config", *overrides])
    out, err = capsys.readouterr()
    assert not (tmp / "out").exists()
    if field is None:
        assert code == 0 and "Traceback" not in err, (case, err)
        return
    lines = err.strip().splitlines()
    assert code == 2, (case, out, err)
    assert lines and _clean(lines) and "Traceback" not in err + out, err
    assert field.split(".")[0] in lines[0], (field, err)


@settings(max_examples=60, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(
    text=st.one_of(
        st.text(min_size=1, max_size=200),
        st.sampled_from(
            [
                "task: [unclosed",
                "- a\n- b",
                "model: {name: lstm",
                "\tseed: 1",
                "seed: 1\nseed: 2",
                "optim: 3",
                "!!binary AAAA",
                "? [a]\n: b",
            ]
        ),
    )
)
def test_any_text_as_a_config_file_is_refused_cleanly_or_round_trips(text, tmp_path_factory, capsys):
    p = Path(tmp_path_factory.mktemp("yaml")) / "run.yaml"
    p.write_text(text)
    code = main(["run", "--config", str(p), "--print-config"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out, err
    if code == 0:
        again = Path(p.parent) / "again.yaml"
        again.write_text(out)
        assert build_config(yaml.safe_load(out)) == build_config(yaml.safe_load(again.read_text()))
    else:
        assert code == 2 and _clean(err.strip().splitlines()), err


@pytest.mark.parametrize(
    "text",
    [
        "task: [unclosed",
        "- a\n- b",
        "model: {name: lstm",
        "\tseed: 1",
        "optim: 3",
        "!!binary AAAA",
        "? [a]\n: b",
        "seed: 1:30",
    ],
)
def test_known_bad_config_files_are_refused(text, tmp_path, capsys):
    p = tmp_path / "run.yaml"
    p.write_text(text)
    assert main(["run", "--config", str(p), "--print-config"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
