"""``seqbench eval RUN [RUN ...] [eval.lengths=[...]] [eval.test_batches=N] [--split test|val] [--out-dir D]``:
evaluate trained runs again (new lengths, another split) from their final checkpoint, without
training. Each evaluation lands in ``<run>/evals/<n>.json`` with what was asked; the run's
config.yaml (and so its hash), metrics.csv and results.json stay as they were. ``seqbench runs``,
``seqbench.load_runs`` and reports show the results as ``eval.<split>@<length>/<metric>`` columns.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seqbench.bench.config import load_config
from seqbench.bench.core import artifacts
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.lengths import length_phrase
from seqbench.bench.training.trained import Evaluated, checkpoint_of, eval_config, evaluate_run, run_dir_of


@dataclass
class EvalResult:
    """What ``evaluate`` did: one entry per run, in the order asked."""

    runs: list[Evaluated] = field(default_factory=list)


def evaluate(
    runs: Sequence[str | Path],
    overrides: Sequence[str] = (),
    split: str = "test",
    out_dir: str | Path = "outputs",
    argv: Sequence[str] = (),
) -> EvalResult:
    """Evaluate each trained run (a run folder or an id under ``<out_dir>/runs``); every run is
    checked to exist before the first is evaluated, so a typo costs no work."""
    if not runs:
        raise UserError("eval: name at least one run (an id from `seqbench runs`, or a run folder)")
    dirs = [run_dir_of(r, out_dir) for r in runs]
    for d in dirs:  # every refusal before any work: bad keys and lengths, missing checkpoints, no room
        eval_config(load_config(d / artifacts.CONFIG), overrides)
        checkpoint_of(d)
        artifacts.check_writable(d / artifacts.EVALS)
    return EvalResult([evaluate_run(d, overrides, split, out_dir, argv) for d in dirs])


def register(sp: argparse.ArgumentParser) -> None:
    # dest "overrides": the CLI appends key=value words typed after options to this list
    sp.add_argument(
        "overrides",
        nargs="+",
        metavar="RUN",
        help="run id (see `seqbench runs`) or run folder, then eval.lengths=[...] / eval.test_batches=N",
    )
    sp.add_argument("--split", default="test", choices=["test", "val"], help="split to evaluate (default test)")
    sp.add_argument("--out-dir", default="outputs", help="root holding runs/ (default outputs)")
    sp.add_argument(
        "--print-config",
        action="store_true",
        help="print each run's config as the evaluation would use it (eval.* settings applied) and evaluate nothing",
    )
    sp.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    # settings (key=value) and run names share the positional list: a word with "=" is a setting
    overrides = [a for a in args.overrides if "=" in a]
    runs = [a for a in args.overrides if "=" not in a]
    if args.print_config:
        for run in runs or [""]:
            d = run_dir_of(run, args.out_dir)
            print(
                f"# {d} ({args.split} split)\n" + eval_config(load_config(d / artifacts.CONFIG), overrides).to_yaml(),
                end="",
            )
        return 0
    res = evaluate(runs, overrides, args.split, args.out_dir, argv=args.command_line)
    for ev in res.runs:
        if ev.warning:
            print(f"warning: {ev.warning}", file=sys.stderr)
        shown = "  ".join(f"{k} {v:.4g}" for k, v in ev.record["metrics"].items())
        print(f"{ev.run_dir.name} (step {ev.record['step']}, {ev.record['eval_s']:.1f}s): {shown}")
        curve = ev.record.get("length_generalisation")
        if curve is not None:
            print(f"  {length_phrase(curve)}")
        print(f"  saved: {ev.path}")
    return 0
