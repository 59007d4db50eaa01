"""Finding runs again: every run folder under ``<out_dir>/runs`` as one tidy frame, and ``seqbench runs``.

``load_runs(out_dir)`` is the notebook API (``seqbench.load_runs``): one row per run folder with the
run columns of the report's table (``sweeps.table.run_fields``: status, diverged, ``final.*``,
``best.*``, ``baseline.*``, steps, times, task, model ...), the metrics of ``seqbench eval`` as
``eval.<split>[@<length>]/<metric>`` (``eval.test@400/acc``), plus ``run_id``, ``run_dir``, ``seed``,
``config_hash``, ``started``, ``primary_metric``/``primary_goal`` and every resolved config field
as ``config.<dotted key>`` (``config.task.delay``). A folder whose run has not finished (no
results.json yet) is listed from its config.yaml with status ``incomplete``.

``seqbench runs [--out-dir D] [key=value ...] [--sort METRIC]`` (``bench/commands/runs.py``) prints them
with ``listing``: id, task, model, the settings that differ between the listed runs, seed, status,
primary metric, steps and time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from seqbench.bench.core.artifacts import BEST, CONFIG, CONFIG_KEY, EVAL, FINAL, RESULT_PARTS, read_results, runs_path
from seqbench.bench.core.errors import UserError, did_you_mean
from seqbench.bench.core.text import MISSING, duration, text_table
from seqbench.sweeps.table import run_fields

LEAD = ["run_id", "task", "model", "seed", "status", "diverged", "steps", "train_time_s", "wall_time_s"]
# config keys that never tell two runs apart in a listing: where they ran and how they were tracked
_NOT_SETTINGS = tuple(CONFIG_KEY + k for k in ("seed", "run_id", "out_dir", "resume", "tracking."))
_ALIASES = {"task": CONFIG_KEY + "task.name", "model": CONFIG_KEY + "model.name"}
MAX_SETTINGS = 6  # differing config keys shown in the listing (all are in the frame)


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config -> {dotted key: value}; lists and empty mappings as JSON text (one cell each)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = json.dumps(v) if isinstance(v, (list, dict)) else v
    return out


def _config_of(run_dir: Path, res: Mapping[str, Any] | None) -> dict[str, Any]:
    if res is not None and isinstance(res.get("config"), dict):
        return res["config"]
    try:
        cfg = yaml.safe_load((run_dir / CONFIG).read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def run_row(run_dir: Path) -> dict[str, Any]:
    """One run folder as a row of ``load_runs``."""
    res = read_results(run_dir)
    cfg = _config_of(run_dir, res)
    r = res or {}
    row: dict[str, Any] = {"run_id": run_dir.name, "run_dir": str(run_dir), **run_fields(run_dir, res)}
    row["task"] = row.get("task") or (cfg.get("task") or {}).get("name")
    row["model"] = row.get("model") or (cfg.get("model") or {}).get("name")
    row["seed"] = r.get("seed", cfg.get("seed", math.nan))
    row.update({k: r.get(k) for k in ("config_hash", "started", "primary_metric", "primary_goal")})
    row.update({CONFIG_KEY + k: v for k, v in flatten(cfg).items()})
    return row


def load_runs(out_dir: Path | str = "outputs") -> pd.DataFrame:
    """Every run under ``<out_dir>/runs`` as a tidy frame, oldest first (see the module docstring)."""
    runs = runs_path(out_dir)
    if not runs.is_dir():
        raise UserError(f"--out-dir: no runs folder at {runs}; run `seqbench run ...` or pass --out-dir DIR")
    rows = [run_row(d) for d in sorted(runs.iterdir()) if d.is_dir()]
    if not rows:
        return pd.DataFrame(columns=LEAD + ["run_dir"])
    df = pd.DataFrame(rows)
    lead = [c for c in LEAD if c in df.columns]
    metrics = sorted(c for c in df.columns if c.split(".", 1)[0] in (*RESULT_PARTS, EVAL[:-1]))
    config = [c for c in df.columns if c.startswith(CONFIG_KEY)]
    rest = [c for c in df.columns if c not in lead + metrics + config]
    return df[lead + metrics + rest + config]


# -- filters and sorting ----------------------------------------------------------------------


def column_for(df: pd.DataFrame, key: str) -> str | None:
    """The frame column a user's key names: itself, ``task``/``model``, a config key, a metric."""
    for c in (key, _ALIASES.get(key, ""), CONFIG_KEY + key, FINAL + key):
        if c and c in df.columns:
            return c
    return None


def _known_keys(df: pd.DataFrame) -> str:
    keys = ["task", "model", "status", "seed"] + settings_columns(df)
    keys = [k[len(CONFIG_KEY) :] if k.startswith(CONFIG_KEY) else k for k in keys]
    return ", ".join(dict.fromkeys(keys))


def filter_runs(df: pd.DataFrame, filters: list[str]) -> pd.DataFrame:
    """Keep rows matching every ``key=value`` (``value`` may be a comma list: any of them). A value no run
    has is refused with the values there are (a typo, ``model=lstn``, would otherwise list nothing)."""
    every = df
    for f in filters:
        if "=" not in f:
            raise UserError(f"{f}: filters look like key=value, e.g. model=lstm task.delay=40 status=completed")
        key, _, text = f.partition("=")
        col = column_for(df, key.strip())
        if col is None:
            raise UserError(
                f"{key.strip()}: no run has this field; filter on {_known_keys(df)} or any config key "
                "(`seqbench list -v`)"
            )
        wanted = {_cell(v.strip()): v.strip() for v in text.split(",")}
        _check_values(key.strip(), wanted, every[col])
        df = df[[_cell(v) in wanted for v in df[col]]]
    return df


def _check_values(key: str, wanted: dict[str, str], column: pd.Series) -> None:
    """UserError for a filter value that no run has, naming the nearest value (in any case) and the rest."""
    have = {_cell(v): str(v) for v in column if _present(v)}
    missing = [typed for cell, typed in wanted.items() if cell not in have]
    if missing and len(have) > 0:
        shown = sorted(have.values(), key=str)
        more = f" (+{len(shown) - 12} more)" if len(shown) > 12 else ""
        raise UserError(
            f"{key}: no run has {key}={missing[0]};{did_you_mean(missing[0], shown)} values here: "
            f"{', '.join(shown[:12])}{more}"
        )


def _cell(v: Any) -> str:
    """Comparable text of a cell or a typed value: 40 == 40.0, 1e-3 == 0.001, true == True, null == None.

    Text is read as YAML here rather than by ``bench.config.parse_value``, whose module imports every
    model (torch): listing runs should take no longer than reading their files.
    """
    if isinstance(v, str):
        try:
            v = yaml.safe_load(v)
        except yaml.YAMLError:
            return v
        if isinstance(v, str):
            try:
                return repr(float(v))
            except ValueError:
                return v
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (int, float)):
        return repr(float(v))
    return str(v)


def sort_runs(df: pd.DataFrame, key: str | None, goal_of: Callable[[str, list[str]], str]) -> pd.DataFrame:
    """Best first by a metric (its goal as ``goal_of(metric, tasks)`` says, ``"maximize"`` or ``"minimize"``:
    the command passes the config floor's ``metric_goal_of``, so reports never reach up to the build API),
    ascending by another column, newest first by default."""
    if key is None:
        return df.iloc[::-1]
    col = column_for(df, key) or {"time": "train_time_s"}.get(key)
    if col is None:
        metrics = sorted(c[len(FINAL) :] for c in df.columns if c.startswith(FINAL))
        raise UserError(
            f"--sort: {key!r} is not a column of these runs; sort by {', '.join(metrics)}, steps, time or a config key"
        )
    ascending = True
    if col.startswith((FINAL, BEST, EVAL)):  # a metric: best first, in its declared direction
        tasks = [t for t in df["task"].dropna().unique()]
        ascending = goal_of(col.split(".", 1)[1], tasks) == "minimize"
    return df.sort_values(col, ascending=ascending, na_position="last", kind="stable")


def settings_columns(df: pd.DataFrame) -> list[str]:
    """Config columns whose value differs between the rows (what tells these runs apart)."""
    cols = [
        c
        for c in df.columns
        if c.startswith(CONFIG_KEY) and not c.startswith(_NOT_SETTINGS) and c not in _ALIASES.values()
    ]
    return [c for c in cols if df[c].astype(str).nunique(dropna=False) > 1]


# -- the listing (``seqbench runs``, in ``bench/commands/runs.py``) ------------------------------


def listing(shown: pd.DataFrame, all_runs: pd.DataFrame, sort: str | None) -> str:
    """The table ``seqbench runs`` prints: one line per run."""
    if shown.empty:
        return "no runs match"
    settings = settings_columns(all_runs)[:MAX_SETTINGS]
    sort_col = column_for(shown, sort) if sort else None
    head = ["id", "task", "model", "settings", "seed", "status", "primary metric", "steps", "time"]
    if sort_col and sort_col.startswith(FINAL) and sort_col[len(FINAL) :] not in set(shown["primary_metric"]):
        head.append(sort_col[len(FINAL) :])
    rows = []
    for _, r in shown.iterrows():
        pm = r.get("primary_metric")
        val = r.get(FINAL + pm) if isinstance(pm, str) else None
        line = [
            str(r["run_id"]),
            str(r["task"]),
            str(r["model"]),
            " ".join(f"{c[len(CONFIG_KEY) :]}={_setting(r[c])}" for c in settings if c in r and _present(r[c])),
            _int(r.get("seed")),
            str(r["status"]),
            f"{pm} {val:.4g}" if isinstance(pm, str) and _present(val) else MISSING,
            _int(r.get("steps")),
            _duration(r.get("train_time_s")),
        ]
        if len(head) > len(line):
            line.append(f"{r[sort_col]:.4g}" if _present(r[sort_col]) else MISSING)
        rows.append(line)
    return text_table(head, rows)


def _present(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _setting(v: Any) -> str:
    """A config value as typed: a whole number stays whole (a column with a missing value is float in
    pandas, so ``kernel_size`` 8 reads 8.0 there), other floats as Python writes them."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _int(v: Any) -> str:
    return str(int(v)) if _present(v) else MISSING


def _duration(v: Any) -> str:
    return duration(float(v)) if _present(v) else MISSING
