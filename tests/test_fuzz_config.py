"""Property: any invalid run config or override, however mangled, gets exit code 2, at most
three lines on stderr naming the offending field, no traceback, and nothing written."""
from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import seqbench.bench.train
from seqbench.bench.cli import main
from seqbench.bench.config import build_config, safe_load
from seqbench.bench.errors import UserError

# every health check but filter_too_much: if assume() threw nearly every case away, fail loudly
QUIET_CHECKS = [h for h in HealthCheck if h is not HealthCheck.filter_too_much]

BASES = [
    build_config({}, ["task=copy", "model=lstm"]).to_dict(),
    build_config({}, ["task=adding", "model=irnn"]).to_dict(),
    build_config({}, ["task=assoc_recall", "model=transformer"]).to_dict(),
]


def leaf_paths(d: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for k, v in d.items():
        if k in ("out_dir",):
            continue
        if isinstance(v, dict):
            out += leaf_paths(v, prefix + (k,))
        elif k != "name":
            out.append(prefix + (k,))
    return out


BAD_VALUES = st.one_of(
    st.just("not-a-number"), st.just(""), st.lists(st.integers(), min_size=1, max_size=3),
    st.dictionaries(st.text(string.ascii_lowercase, min_size=1, max_size=5), st.integers(), min_size=1, max_size=2),
    st.just(-10**9), st.just(10**40), st.just(float("nan")), st.just(-1.5), st.text(min_size=2000, max_size=3000),
)


@st.composite
def mutated(draw):
    base = draw(st.sampled_from(BASES))
    d = yaml.safe_load(yaml.safe_dump(base))
    kind = draw(st.sampled_from(["value", "unknown_key", "unknown_override", "bad_override", "bad_name"]))
    overrides: list[str] = []
    if kind == "value":
        path = draw(st.sampled_from(leaf_paths(d)))
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = draw(BAD_VALUES)
        field = ".".join(path)
    elif kind == "unknown_key":
        section = draw(st.sampled_from(["", "task", "model", "optim", "train", "eval", "tracking"]))
        key = "zz_" + draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
        (d[section] if section else d)[key] = 1
        field = f"{section}.{key}" if section else key
    elif kind == "unknown_override":
        section = draw(st.sampled_from(["task", "model", "optim", "train", "eval", "tracking", "nosuch"]))
        key = "zz_" + draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
        overrides.append(f"{section}.{key}=1")
        field = section if section == "nosuch" else f"{section}.{key}"
    elif kind == "bad_override":
        path = draw(st.sampled_from(leaf_paths(d)))
        overrides.append(".".join(path) + "=" + draw(st.sampled_from(["[1, 2", "abc", "-999999", "{x: 1}", "1e999"])))
        field = ".".join(path)
    else:
        section = draw(st.sampled_from(["task", "model"]))
        d[section]["name"] = draw(st.text(string.ascii_lowercase, min_size=1, max_size=12))
        field = f"{section}.name"
    return d, overrides, field


def _invalid(d: dict, overrides: list[str]) -> bool:
    try:
        build_config(d, overrides)
    except UserError:
        return True
    return False


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    def refuse(*a, **k):  # a mutation that slipped through must not start a run
        raise AssertionError("a config that should be invalid reached training")
    monkeypatch.setattr(seqbench.bench.train, "run", refuse)


@settings(max_examples=150, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(case=mutated())
def test_invalid_configs_fail_cleanly(case, tmp_path_factory, capsys):
    d, overrides, field = case
    assume(_invalid(d, overrides))
    tmp = tmp_path_factory.mktemp("fuzz")
    d["out_dir"] = str(tmp / "out")
    cfg = tmp / "run.yaml"
    cfg.write_text(yaml.safe_dump(d, allow_unicode=True))
    code = main(["run", "--config", str(cfg), *overrides])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (case, out, err)
    assert 1 <= len(lines) <= 3 and "Traceback" not in err + out, err
    top = field.split(".")[0]
    assert top in lines[0], (field, err)
    assert not (tmp / "out").exists()


def _valid_yaml_config(text: str) -> bool:
    try:
        data = safe_load(text)
        return data is None or (isinstance(data, dict) and build_config(data) is not None)
    except Exception:  # noqa: BLE001 - anything else is what the CLI must refuse cleanly
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=QUIET_CHECKS)
@given(text=st.one_of(st.text(min_size=1, max_size=200),
                      st.sampled_from(["task: [unclosed", "- a\n- b", "model: {name: lstm", "\tseed: 1",
                                       "seed: 1\nseed: 2", "optim: 3", "!!binary AAAA", "? [a]\n: b"])))
def test_malformed_yaml_files_fail_cleanly(text, tmp_path_factory, capsys):
    assume(not _valid_yaml_config(text))
    p = Path(tmp_path_factory.mktemp("yaml")) / "run.yaml"
    p.write_text(text)
    code = main(["run", "--config", str(p)])
    out, err = capsys.readouterr()
    assert code == 2 and 1 <= len(err.strip().splitlines()) <= 3 and "Traceback" not in err + out, err
