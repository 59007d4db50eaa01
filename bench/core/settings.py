"""``key=value`` settings and YAML files: the one reader behind ``run``, ``sweep`` and ``cost``.

A setting is ``dotted.key=value`` with the value read as YAML (``true``, ``3``, ``1e-3``,
``[64, 128]``, ``{metric: val/mse, threshold: 0.01}``, ``null``). Settings form a set, not a
sequence: :func:`leaves` turns them into one ``{dotted key: value}`` mapping (a key given twice
keeps its last value) and refuses a key set inside a value another setting gives whole, so
callers can apply the result in any order.

This module imports only yaml and the error type: reading settings needs no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from seqbench.bench.core.errors import UserError


class _Loader(yaml.SafeLoader):
    """Safe YAML with YAML 1.2 scalars: booleans are only true/false (``wandb: off`` stays a
    string), ``1e-3`` is a number, and ``1:30`` (YAML 1.1: 90) and ``010`` (YAML 1.1: 8) are not
    read as something other than what was typed."""


_OLD = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag not in _OLD] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Loader.add_implicit_resolver(  # after int: 10 is an int, 010 the float 10.0 (an int field takes it as 10)
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def safe_load(text: str) -> Any:
    """The only YAML reader seqbench uses (safe: no arbitrary Python objects)."""
    return yaml.load(text, Loader=_Loader)  # _Loader derives from SafeLoader


def parse_value(text: str) -> Any:
    """``key=value`` right-hand side: YAML scalars/lists (true, 3, 1e-3, [64, 128], null); text
    that is not valid YAML (``[1, 2``) stays text, for the validator to refuse by name."""
    try:
        return safe_load(text)
    except yaml.YAMLError:
        return text


def check_key(key: str, example: str) -> str:
    """A dotted key with no empty part (``model.d_model``), stripped; Hydra's spellings (``+key``,
    ``~key``, ``hydra.*``) get a line saying what seqbench does instead."""
    key = key.strip()
    habit = hydra_key(key)
    if habit:
        raise UserError(habit)
    if not key or not all(key.split(".")):
        raise UserError(f"{key or '(empty)'}: malformed key; use dotted names like {example}")
    return key


def parse_pairs(items: Iterable[str], *, example: str = "model.d_model=64") -> list[tuple[str, Any]]:
    """``["a.b=1", ...]`` -> ``[("a.b", 1), ...]``; UserError on an item that is not key=value."""
    pairs = []
    for item in items:
        habit = hydra_key(item.partition("=")[0].strip())
        if habit:
            raise UserError(habit)
        if "=" not in item:
            raise UserError(f"{item}: settings look like key=value, e.g. {example}")
        key, _, text = item.partition("=")
        pairs.append((check_key(key, example), parse_value(text.strip())))
    return pairs


def comma_lists(items: Iterable[str]) -> list[str]:
    """The ``key=a,b`` words among ``items``: Hydra's sweep syntax, which ``seqbench compare`` takes
    (a value that is a list is written ``[a, b]``)."""
    out = []
    for item in items:
        key, sep, text = item.partition("=")
        text = text.strip()
        if sep and "," in text and not text.startswith(("[", "{", "'", '"')) and isinstance(parse_value(text), str):
            out.append(item)
    return out


HYDRA_FLAGS = {"-m": "multirun", "--multirun": "multirun", "--cfg": "cfg", "-c": "cfg"}


def hydra_habit(command: str, words: Iterable[str]) -> str | None:
    """One line for Hydra's flags where seqbench has its own spelling (``run -m``, ``--cfg job``),
    else None: the caller reports the words as unrecognized."""
    for word in words:
        kind = HYDRA_FLAGS.get(word.split("=", 1)[0])
        if kind == "multirun":
            return (
                f"{word}: Hydra's multirun; `seqbench {command}` takes one value per key; to compare "
                "settings use `seqbench compare model=lstm,gru task.delay=20,40` (comma lists)"
            )
        if kind == "cfg":
            return f"{word}: Hydra's config printer; seqbench spells it `seqbench {command} ... --print-config`"
    return None


def hydra_key(key: str) -> str | None:
    """The one line for a Hydra override habit in ``key``, or None."""
    bare = key.lstrip("+~")
    if key.startswith("~"):
        return (
            f"{key}: Hydra's delete syntax; seqbench deletes nothing: a field left out keeps its default "
            f"(`seqbench list -v`), so drop the setting or give {bare}=<value>"
        )
    if key.startswith("+"):
        return (
            f"{key}: Hydra's add syntax; seqbench sets any field as {bare}=<value> (no +), and a field the "
            "config does not have is refused by name"
        )
    if bare.split(".")[0] == "hydra":
        return (
            f"{key}: seqbench is not Hydra; runs go under --out-dir DIR (or out_dir=DIR), sweeps are "
            "`seqbench sweep SPEC` and comma lists `seqbench compare`"
        )
    return None


def leaves(pairs: Iterable[tuple[str, Any]], repeated: list[str] | None = None) -> dict[str, Any]:
    """Settings as ``{dotted leaf key: value}``; only a repeated key makes their order matter.

    A mapping value sets each of its leaves (``train={max_steps: 5}`` is ``train.max_steps=5``);
    an empty mapping stays a value. A key given twice keeps its last value, as on any command line
    (its name goes into ``repeated``, for the caller to say so). Refused: a key inside another
    setting's value (``train.early_stop=null`` with ``train.early_stop.threshold=1``), which no
    order resolves.
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        for k, v in _flatten(key, value):
            if k in out and out[k] != v and repeated is not None:
                repeated.append(k)
            out.pop(k, None)
            out[k] = v
    keys = sorted(out)
    for a, b in zip(keys, keys[1:]):  # a prefix sorts right before the keys under it
        if b.startswith(a + "."):
            raise UserError(f"{b}: also set by {a}={show(out[a])}; keep one")
    return out


def show(value: Any) -> str:
    """A value the way it is typed on the command line (null, true, [1, 2], text)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text[:-4].strip() if text.endswith("\n...") or text.endswith(" ...") else text


def _flatten(key: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [kv for k, v in value.items() for kv in _flatten(f"{key}.{check_key(str(k), key + '.<field>')}", v)]
    return [(key, value)]


def set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b.c`` in a nested dict, making the sections on the way."""
    parts = key.split(".")
    node = d
    for i, p in enumerate(parts[:-1]):
        nxt = node.get(p)
        if nxt is None:
            nxt = node[p] = {}
        elif not isinstance(nxt, dict):
            raise UserError(f"{'.'.join(parts[: i + 1])}: is a value, not a section; cannot set {key}")
        node = nxt
    node[parts[-1]] = value


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML file whose top level is a mapping; UserError naming the file (and line) otherwise."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UserError(f"{p}: cannot read config ({e.strerror})") from None
    try:
        data = safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"{p}: not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{p}: top level must be a mapping of config sections, got {type(data).__name__}")
    return data


def same_value(a: Any, b: Any) -> bool:
    """Whether a run's recorded setting ``a`` is the swept value ``b``: numbers equal up to float rounding (a
    value read back from a study or a table), a swept null matching None or NaN (a table's missing value);
    a bool is not the number 1. Shared by the judge, the sweep ladders and the card's frontiers."""
    if b is None:
        return a is None or (isinstance(a, float) and math.isnan(a))
    if _is_bool(a) or _is_bool(b):
        return _is_bool(a) and _is_bool(b) and bool(a) == bool(b)
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num):
        return math.isclose(float(a), float(b))
    return bool(a == b)


def _is_bool(x: Any) -> bool:
    """A Python bool or numpy's (a table's bool column), without importing numpy here."""
    return type(x).__name__ in ("bool", "bool_")  # numpy 2 names its bool `bool`, numpy 1 `bool_`
