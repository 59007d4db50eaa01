"""``seqbench compare model=lstm,gru,transformer task=copy task.delay=20,40 seeds=3``: a grid study
from the command line.

Every ``key=value`` with a comma list becomes a grid axis, every single value goes into the base;
``task=``/``model=`` are ``task.name``/``model.name``, ``seeds=`` is a count (or a list ``0,1,2``).
A field that only some of the chosen models (tasks) have is routed to ``per_model.<name>``
(``per_task``) for those that have it, and said so; swept over a list it is refused, since the
other models cannot take it. The objective is ``--metric`` (goal: the task's declared direction),
else the task's primary metric.

The settings become a typed sweep spec (``sweeps/grid.py``, the builder ``probe`` and ``verify`` use too);
the study name is a digest of that spec (``compare-<hash>``), so
the same command (in any order, from any directory with the same ``--out-dir``/``--storage``)
continues the same study and runs nothing that is done. Every setting's task and model are built first
(``sweeps.coordinator.preflight_specs``): one that a run would refuse, a plug-in mixer that reads the future
say, refuses the command in one line before any file is written. The spec runs through ``sweep()``, the
runner behind ``seqbench sweep`` (same output, same resume, workers, storage), and its YAML is written to
``<out_dir>/specs/<study>.yaml`` beside the study; then the terminal gets a ranked table with 95% intervals
and the paired statements, each by the test ``seqbench verify`` judges that kind of metric with
(``bench.core.seed_tests``: per seed with an exact sign test for an accuracy, which cannot decide at
5% below 6 seeds and says so; the ratio for a loss; the paired t otherwise), and
``<out_dir>/reports/<study>/`` the dashboard. ``--print-config`` (or ``--print-spec``)
prints that YAML and runs nothing: ``seqbench sweep FILE --study <study>`` continues the same study.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqbench.bench.commands.sweep import sweep
from seqbench.bench.config import DEFAULT_NAMES, RunConfig
from seqbench.bench.core.artifacts import check_writable
from seqbench.bench.core.errors import UserError, did_you_mean
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.settings import check_key
from seqbench.sweeps.coordinator import preflight_specs
from seqbench.sweeps.grid import GridStudy, grid_study, seeds_of, values_of
from seqbench.sweeps.grid import study_name as grid_name
from seqbench.sweeps.progress import failed_trials
from seqbench.sweeps.spec import MixedPrimaryMetrics, SweepSpec, parse_spec
from seqbench.sweeps.storage import check_scheme
from seqbench.sweeps.study import failed_outside

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

    from seqbench.bench.commands.report import ReportResult
    from seqbench.reports.build import Report
    from seqbench.sweeps.table import Objective


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
            seeds = seeds_of(text)
            continue
        values = values_of(key, text)
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


def build_grid(settings: list[str], metric: str | None = None) -> tuple[GridStudy, list[str]]:
    """The grid study of the settings (its typed spec and its YAML, ``sweeps.grid``) and the routing notes."""
    base, axes, seeds = parse_grid(settings)
    blocks, notes = route(base, axes)
    try:
        study = grid_study(
            base,
            axes,
            seeds,
            metric=metric,
            question=_question(axes, base),
            per_model=blocks["per_model"],
            per_task=blocks["per_task"],
            source="compare",
        )
    except MixedPrimaryMetrics:  # no --metric: the spec's advice (metric: {name, goal}) in this command's words
        raise UserError(
            f"--metric: the compared tasks ({', '.join(_names('task', base, axes))}) have different primary "
            "metrics; name one they all report, e.g. --metric val/loss"
        ) from None
    return study, notes


def build_spec(settings: list[str], metric: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sweep spec of the settings as its YAML reads (a plain dict), and the routing notes."""
    study, notes = build_grid(settings, metric)
    return study.raw, notes


def study_name(spec: SweepSpec | Mapping[str, Any]) -> str:
    """``compare-<digest>`` of what makes a study (the spec without budget and prose): equal settings,
    in any order on the command line or loaded back from --print-spec, give the same name."""
    return grid_name("compare-", spec if isinstance(spec, SweepSpec) else parse_spec(dict(spec)))


# -- the command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareResult:
    """What ``compare()`` returns: the study it ran (or continued), its spec, and the built report."""

    study: str  # compare-<digest> unless named
    status: int  # the sweep's: 0 when every worker finished cleanly
    spec: dict[str, Any]  # the sweep spec the settings made (as its YAML reads)
    spec_path: Path  # <out_dir>/specs/<study>.yaml
    notes: list[str]  # fields routed to per_model/per_task blocks
    report: ReportResult  # the dashboard and the tidy table (``bench.commands.report``)
    failed_outside: int = 0  # settings whose trial failed outside the experiment (--retry-failed runs them)

    @property
    def table(self) -> pd.DataFrame:
        return self._built.table

    @property
    def objective(self) -> Objective:
        return self._built.info.objectives[0]

    @property
    def _built(self) -> Report:
        return self.report.built


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
    """Compare ``settings`` (``key=a,b`` sweeps a key; ``seeds=N``) as a grid study over seeds: run its typed
    spec through ``sweep()`` (its YAML written beside the study as provenance), build its report through
    ``report()``. ``retry_failed``: as ``sweep(retry_failed=True)``."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    grid, notes = build_grid(list(settings), metric)
    name = study or grid.name("compare-")
    for n in notes:
        print(n)
    out_dir = Path(out_dir)
    check_scheme(storage)
    preflight_specs([("", grid.spec)])  # every setting built before the spec is written
    check_writable(out_dir)
    path = grid.write(out_dir, name, notes, "compare")
    from seqbench.bench.commands.report import report  # here: `compare --print-config/--help` stay light

    swept = sweep(
        grid.spec,
        source=path,
        study=name,
        out_dir=out_dir,
        workers=workers,
        storage=storage,
        quiet_summary=True,
        retry_failed=retry_failed,
    )  # the ranked table is the one summary
    outside = sum(1 for t in failed_trials(swept.trials) if failed_outside(t))
    built = report(name, storage=storage, out_dir=out_dir)
    return CompareResult(name, swept.status, grid.raw, path, notes, built, outside)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.print_config:
        grid, notes = build_grid(args.settings, args.metric)
        print(grid.yaml(args.study or grid.name("compare-"), notes, "compare"), end="")
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
