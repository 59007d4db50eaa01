"""``seqbench runs [--out-dir D] [key=value ...] [--sort METRIC] [--limit N]``: the runs under an output
folder, filtered and sorted (the frame is ``reports/runs.py``'s ``load_runs``, also ``seqbench.load_runs``).

``runs(...) -> RunsResult`` is the typed entry; ``cmd_runs`` prints its listing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from seqbench.bench.core.artifacts import runs_path
from seqbench.bench.core.errors import UserError
from seqbench.reports.runs import filter_runs, listing, load_runs, sort_runs

DEFAULT_OUT_DIR = "outputs"


@dataclass(frozen=True)
class RunsResult:
    """What ``runs()`` returns: the matching runs (best or newest first) and how many there are in all."""

    shown: pd.DataFrame  # load_runs' columns: the rows that matched, sorted, at most `limit`
    all_runs: pd.DataFrame  # every run under runs_dir
    runs_dir: Path

    @property
    def total(self) -> int:
        return len(self.all_runs)


def runs(
    out_dir: str | Path = DEFAULT_OUT_DIR,
    filters: Sequence[str] = (),
    *,
    sort: str | None = None,
    limit: int | None = None,
) -> RunsResult:
    """The runs under ``<out_dir>/runs`` matching every ``key=value`` filter (a comma list: any of),
    sorted by ``sort`` (a metric: best first by its goal; default newest first), at most ``limit``."""
    if limit is not None and limit < 1:
        raise UserError(f"--limit: must be >= 1 (got {limit})")
    df = load_runs(out_dir)
    shown = sort_runs(filter_runs(df, list(filters)), sort, _metric_goal)
    return RunsResult(shown.head(limit) if limit else shown, df, runs_path(out_dir))


def _metric_goal(metric: str, tasks: list[str]) -> str:
    """The config floor's ``metric_goal_of``, imported only when a metric sorts: it starts every task's
    config (and the plug-ins'), which a plain listing never needs."""
    from seqbench.bench.config import metric_goal_of  # why: `seqbench runs` stays light without --sort METRIC

    return metric_goal_of(metric, tasks)


# -- the command ----------------------------------------------------------------------------------


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "filters",
        nargs="*",
        help="key=value (comma list: any of), e.g. model=lstm,gru task.delay=40 "
        "status=completed; out_dir=D is --out-dir D",
    )
    sp.add_argument("--out-dir", help=f"root holding runs/ (default {DEFAULT_OUT_DIR})")
    sp.add_argument("--sort", help="a metric (val/acc: best first), steps, time or a config key; default newest first")
    sp.add_argument("--limit", type=int, help="show at most N runs")
    sp.set_defaults(func=cmd_runs)


def split_out_dir(filters: Sequence[str], out_dir: str | None) -> tuple[str, list[str]]:
    """``out_dir=D`` among the filters names the folder to list, as it does for ``run`` and ``cost``
    (every run in one folder shares it, so as a filter it would only hide them all)."""
    given = [f.partition("=")[2].strip() for f in filters if f.partition("=")[0].strip() == "out_dir"]
    rest = [f for f in filters if f.partition("=")[0].strip() != "out_dir"]
    if len(set(map(Path, given))) > 1 or (given and out_dir is not None and Path(given[0]) != Path(out_dir)):
        raise UserError(
            f"out_dir: {', '.join(dict.fromkeys([*given, *([out_dir] if out_dir else [])]))} "
            "disagree; list one folder at a time"
        )
    return (out_dir or (given[0] if given else DEFAULT_OUT_DIR)), rest


def cmd_runs(args: argparse.Namespace) -> int:
    out_dir, filters = split_out_dir(args.filters, args.out_dir)
    r = runs(out_dir, filters, sort=args.sort, limit=args.limit)
    print(listing(r.shown, r.all_runs, args.sort))
    print(
        f"{len(r.shown)} of {r.total} runs under {r.runs_dir}"
        + (" (load them in Python: seqbench.load_runs(out_dir))" if r.total else "")
    )
    return 0
