"""``seqbench compare model=lstm,gru,transformer task=copy task.delay=20,40 seeds=3``: a grid study
from the command line.

Every ``key=value`` with a comma list becomes a grid axis, every single value goes into the base;
``task=``/``model=`` are ``task.name``/``model.name``, ``seeds=`` is a count (or a list ``0,1,2``).
A field that only some of the chosen models (tasks) have is routed to ``per_model.<name>``
(``per_task``) for those that have it, and said so; swept over a list it is refused, since the
other models cannot take it. The objective is ``--metric`` (goal: the task's declared direction),
else the task's primary metric.

The settings become a sweep spec; the study name is a digest of that spec (``compare-<hash>``), so
the same command (in any order, from any directory with the same ``--out-dir``/``--storage``)
continues the same study and runs nothing that is done. Every setting's task and model are built first
(``sweeps.coordinator.preflight_specs``): one that a run would refuse, a plug-in mixer that reads the future
say, refuses the command in one line before any file is written. The spec is written to
``<out_dir>/specs/<study>.yaml`` and run by ``seqbench sweep`` itself (same output, same resume,
workers, storage); then the terminal gets a ranked table with 95% intervals and the paired
statements, each by the test ``seqbench verify`` judges that kind of metric with
(``bench.core.seed_tests``: per seed with an exact sign test for an accuracy, which cannot decide at
5% below 6 seeds and says so; the ratio for a loss; the paired t otherwise), and
``<out_dir>/reports/<study>/`` the dashboard. ``--print-config`` (or ``--print-spec``)
prints that YAML and runs nothing: ``seqbench sweep FILE --study <study>`` continues the same study.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

import seqbench.bench.config  # noqa: F401  (fills the registries)
from seqbench.bench.commands.sweep import sweep
from seqbench.bench.config import DEFAULT_NAMES, RunConfig, compose, metric_goal_of, parse_value
from seqbench.bench.core.artifacts import atomic_write, check_writable
from seqbench.bench.core.errors import UserError, did_you_mean
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.settings import check_key
from seqbench.sweeps.coordinator import preflight_specs
from seqbench.sweeps.progress import failed_trials
from seqbench.sweeps.spec import MixedPrimaryMetrics, parse_spec
from seqbench.sweeps.storage import check_scheme
from seqbench.sweeps.study import comparable, failed_outside

ALIASES = {"task": "task.name", "model": "model.name"}
_REFUSED = {
    "seed": "compare runs every setting on seeds=N replicates (or seeds=0,1,2); set seeds=",
    "out_dir": "pass --out-dir DIR",
    "run_id": "each replicate gets its own run id",
    "resume": "re-running the same compare command continues its study",
}
# a comparison needs replicates: intervals and t-tests start at n=2; a per-seed sign test (an accuracy's
# pairs) decides at 5% only from 6 agreeing seeds (seed_tests.seeds_to_decide), which the statements say
DEFAULT_SEEDS = 3
# the top-level keys compare takes: RunConfig's sections and fields but the ones it sets itself
SETTINGS = [k for k in RunConfig.model_fields if k not in _REFUSED] + ["seeds"]

if TYPE_CHECKING:
    import pandas as pd


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "settings",
        nargs="*",
        help="key=value; a comma list sweeps that key, e.g. "
        "model=lstm,gru task=copy task.delay=20,40 seeds=3 train.max_steps=500",
    )
    sp.add_argument("--workers", type=int, default=1, help="local worker processes sharing the study")
    sp.add_argument("--storage", help="journal path or postgresql://... (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="runs, journal, specs/ and reports/ go here (default outputs)")
    sp.add_argument(
        "--metric",
        help="objective key, e.g. val/loss or test/acc (default: the task's primary "
        "validation metric); its goal is the one the task declares",
    )
    sp.add_argument("--study", help="study name (default: compare-<digest of the settings>)")
    sp.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the settings whose trials failed "
        "for a reason outside the experiment (no space left, out of memory, killed)",
    )
    sp.add_argument(
        "--print-config",
        "--print-spec",
        dest="print_config",
        action="store_true",
        help="print the equivalent sweep YAML and run nothing",
    )
    sp.set_defaults(func=cmd_compare)


# -- settings -> spec -------------------------------------------------------------------------


def _values(key: str, text: str) -> list[Any]:
    """One value, or the comma list's values (a YAML list or mapping stays one value)."""
    if text.strip().startswith(("[", "{")):
        return [parse_value(text)]
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise UserError(f"{key}: empty value in {text!r}; give key=a,b,c")
    values = [parse_value(p) for p in parts]
    if len({json.dumps(v, sort_keys=True, default=str) for v in values}) != len(values):
        raise UserError(f"{key}: a value repeats in {text!r}; list each once")
    return values


def _seeds(text: str) -> list[int] | int:
    values = _values("seeds", text)
    if len(values) == 1 and isinstance(values[0], int) and not isinstance(values[0], bool):
        return values[0]  # a count: the spec validates its range
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UserError(f"seeds: give a count (seeds=3) or distinct integers (seeds=0,1,2), got {text!r}")
    return values


def parse_grid(settings: list[str]) -> tuple[dict[str, Any], dict[str, list[Any]], list[int] | int]:
    """``key=value`` words -> (base {dotted key: value}, axes {dotted key: values}, seeds)."""
    base: dict[str, Any] = {}
    axes: dict[str, list[Any]] = {}
    seeds: list[int] | int = DEFAULT_SEEDS
    seen: set[str] = set()
    for word in settings:
        check_key(word.partition("=")[0], "model=lstm,gru")  # Hydra's ~key, +key, hydra.* first
        if "=" not in word:
            raise UserError(f"{word}: settings look like key=value, e.g. model=lstm,gru task.delay=20,40")
        key, _, text = word.partition("=")
        key = ALIASES.get(key.strip(), key.strip())
        top = key.split(".")[0]
        if top in _REFUSED:
            raise UserError(f"{key}: set by compare; {_REFUSED[top]}")
        if top not in SETTINGS:  # suggest only what compare takes (`sedes` is seeds, not the refused seed)
            raise UserError(
                f"{key}: unknown setting;{did_you_mean(top, SETTINGS)} compare takes "
                f"{', '.join(SETTINGS)} (dotted below task, model, optim, train, eval ...)"
            )
        if key in seen:
            raise UserError(f"{key}: given twice; give it once (a comma list sweeps it)")
        seen.add(key)
        if key == "seeds":
            seeds = _seeds(text)
            continue
        values = _values(key, text)
        if len(values) > 1:
            axes[key] = values
        else:
            base[key] = values[0]
    if not axes:
        raise UserError("compare: nothing to compare; give at least one comma list, e.g. model=lstm,gru")
    return base, axes, seeds


def _names(section: str, base: dict[str, Any], axes: dict[str, list[Any]]) -> list[str]:
    key = f"{section}.name"
    if key in axes:
        return [str(v) for v in axes[key]]
    return [str(base.get(key, DEFAULT_NAMES[section]))]


def route(base: dict[str, Any], axes: dict[str, list[Any]]) -> tuple[dict[str, dict[str, dict[str, Any]]], list[str]]:
    """Move base fields that only some chosen models (tasks) have to their per_model (per_task) blocks.

    Returns {"per_model": ..., "per_task": ...} and one note per routed field; a swept field that
    some chosen model lacks is refused (a per-model block cannot sweep it).
    """
    blocks: dict[str, dict[str, dict[str, Any]]] = {"per_model": {}, "per_task": {}}
    notes: list[str] = []
    for section, reg, block in (("model", MODELS, "per_model"), ("task", TASKS, "per_task")):
        names = [n for n in _names(section, base, axes) if n in reg]  # unknown names: the spec check says so
        if len(names) < 2:
            continue
        for key in [k for k in [*base, *axes] if k.startswith(section + ".") and k != f"{section}.name"]:
            field = key.split(".")[1]
            have = [n for n in names if field in reg.get(n).config_cls.model_fields]
            if len(have) == len(names):
                continue
            if not any(field in e.config_cls.model_fields for e in reg):  # a typo, not a field of another
                own = dict.fromkeys(f for n in names for f in reg.get(n).config_cls.model_fields if f != "name")
                raise UserError(
                    f"{key}: unknown field; allowed: {', '.join(own)};"
                    + did_you_mean(field, own, lambda f: f"{section}.{f}")  # noqa: B023  (called at once)
                )
            if not have:
                raise UserError(
                    f"{key}: none of the compared {section}s ({', '.join(names)}) has this field; "
                    f"their fields: `seqbench list -v`"
                )
            lacking = ", ".join(n for n in names if n not in have)
            if key in axes:
                raise UserError(
                    f"{key}: only {', '.join(have)} of the compared {section}s have this field "
                    f"({lacking} do not), so it cannot be swept here; compare {section}={have[0]} "
                    "alone, or grow the --print-spec YAML into a sweep"
                )
            for n in have:
                blocks[block].setdefault(n, {})[key] = base[key]
            del base[key]
            notes.append(
                f"note: {key}={blocks[block][have[0]][key]} applies to {', '.join(have)} only "
                f"({block}; no such field in {lacking})"
            )
    return blocks, notes


def _question(axes: dict[str, list[Any]], base: dict[str, Any]) -> str:
    task = base.get("task.name", DEFAULT_NAMES["task"])
    swept = " x ".join(f"{k} in {', '.join(map(str, v))}" for k, v in axes.items())
    return (
        f"Which setting is best on {task}: {swept}?" if "task.name" not in axes else f"Which setting is best: {swept}?"
    )


def build_spec(settings: list[str], metric: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sweep spec (a plain dict, as YAML would give it) of the settings, and routing notes."""
    base_flat, axes, seeds = parse_grid(settings)
    blocks, notes = route(base_flat, axes)
    base = compose({}, base_flat).data  # as run composes its overrides: choices first, mappings as leaves
    raw: dict[str, Any] = {
        "question": _question(axes, base_flat),
        "base": base,
        "method": "grid",
        "parameters": {k: {"values": v} for k, v in axes.items()},
        **{b: v for b, v in blocks.items() if v},
        "seeds": seeds,
    }
    names = _names("task", base_flat, axes)
    if metric is not None:  # an unknown metric gets some goal here; the spec check refuses it by name
        raw["metric"] = {"name": metric, "goal": metric_goal_of(metric, names)}
    try:
        spec = parse_spec(raw, source="compare")
    except MixedPrimaryMetrics:  # no --metric: the spec's advice (metric: {name, goal}) in this command's words
        raise UserError(
            f"--metric: the compared tasks ({', '.join(names)}) have different primary metrics; "
            "name one they all report, e.g. --metric val/loss"
        ) from None
    if metric is None:  # written out, so the printed spec says what is optimised
        m = spec.metrics()[0]
        raw["metric"] = {"name": m.name, "goal": m.goal}
    return _ordered(raw), notes


def _ordered(raw: dict[str, Any]) -> dict[str, Any]:
    order = ["question", "base", "method", "metric", "parameters", "per_model", "per_task", "seeds"]
    return {k: raw[k] for k in order if k in raw}


def study_name(spec_dict: dict[str, Any]) -> str:
    """``compare-<digest>`` of what makes a study (the spec without budget and prose): equal settings,
    in any order on the command line or loaded back from --print-spec, give the same name."""
    canon = comparable(parse_spec(spec_dict).to_dict())
    return "compare-" + hashlib.sha1(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:10]


def spec_yaml(raw: dict[str, Any], name: str, notes: Sequence[str] = (), command: str = "compare") -> str:
    head = [
        f"# written by seqbench {command}; `seqbench sweep THIS.yaml --study {name}` continues the same study",
        *(f"# {n}" for n in notes),
    ]
    return "\n".join(head) + "\n" + yaml.safe_dump(raw, sort_keys=False, default_flow_style=None)


# -- the command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareResult:
    """What ``compare()`` returns: the study it ran (or continued), its spec, and the built report."""

    study: str  # compare-<digest> unless named
    status: int  # the sweep's: 0 when every worker finished cleanly
    spec: dict[str, Any]  # the sweep spec the settings made (as its YAML reads)
    spec_path: Path  # <out_dir>/specs/<study>.yaml
    notes: list[str]  # fields routed to per_model/per_task blocks
    report: Any  # bench.commands.report.ReportResult: the dashboard and the tidy table
    failed_outside: int = 0  # settings whose trial failed outside the experiment (--retry-failed runs them)

    @property
    def table(self) -> pd.DataFrame:
        return self.report.built.table

    @property
    def objective(self) -> Any:
        return self.report.built.info.objectives[0]


def compare(
    settings: Sequence[str],
    *,
    metric: str | None = None,
    workers: int = 1,
    storage: str | None = None,
    out_dir: str | Path = "outputs",
    study: str | None = None,
    retry_failed: bool = False,
) -> CompareResult:
    """Compare ``settings`` (``key=a,b`` sweeps a key; ``seeds=N``) as a grid study over seeds: write its
    spec, run it through ``sweep()``, build its report through ``report()``. ``retry_failed``: as
    ``sweep(retry_failed=True)``."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    raw, notes = build_spec(list(settings), metric)
    name = study or study_name(raw)
    for n in notes:
        print(n)
    out_dir = Path(out_dir)
    check_scheme(storage)
    preflight_specs([("", parse_spec(raw, source="compare"))])  # every setting built before the spec is written
    check_writable(out_dir)
    path = out_dir / "specs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, spec_yaml(raw, name, notes))
    from seqbench.bench.commands.report import report  # here: `compare --print-config/--help` stay light

    swept = sweep(
        path,
        study=name,
        out_dir=out_dir,
        workers=workers,
        storage=storage,
        quiet_summary=True,
        retry_failed=retry_failed,
    )  # the ranked table is the one summary
    outside = sum(1 for t in failed_trials(swept.trials) if failed_outside(t))
    return CompareResult(name, swept.status, raw, path, notes, report(name, storage=storage, out_dir=out_dir), outside)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.print_config:
        raw, notes = build_spec(args.settings, args.metric)
        print(spec_yaml(raw, args.study or study_name(raw), notes), end="")
        return 0
    r = compare(
        args.settings,
        metric=args.metric,
        workers=args.workers,
        storage=args.storage,
        out_dir=args.out_dir,
        study=args.study,
        retry_failed=args.retry_failed,
    )
    from seqbench.reports.headline import ranked_text  # here: `compare --print-config/--help` stay light

    print(ranked_text(r.table, r.objective))
    print(f"dashboard: {r.report.index}  (summary.md beside it; spec: {r.spec_path})")
    if r.failed_outside:
        print(
            f"{r.failed_outside} setting(s) failed outside the experiment (no space, memory, a kill): run the "
            "same command with --retry-failed to run them again"
        )
    return r.status
