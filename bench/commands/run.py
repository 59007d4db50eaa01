"""``seqbench run [--config FILE] [key=value ...] [--out-dir D] [--print-config]``: train and evaluate one
configuration.

``run(config, overrides) -> RunResult`` is the typed entry (also ``seqbench.run`` in a notebook);
``cmd_run`` parses the command line, calls it and prints the summary.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from seqbench.bench.config import Composed, RunConfig, build_config, load_config, notes, override, resolve
from seqbench.bench.core.artifacts import RunResult
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.lengths import length_phrase
from seqbench.bench.core.text import speed_summary


def config_of(config: RunConfig | str | Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """A ``RunConfig`` from a RunConfig, a YAML path, or nothing (defaults), with ``overrides`` on top."""
    if isinstance(config, RunConfig):
        return build_config(config.to_dict(), overrides) if overrides else config
    return load_config(config, overrides)


def run(
    config: RunConfig | str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    argv: Sequence[str] | None = None,
    progress: bool = True,
) -> RunResult:
    """Train and evaluate one configuration (a ``RunConfig``, a YAML path or None for the defaults, with
    ``overrides`` applied) and write ``<out_dir>/runs/<run_id>/``.

    ``argv`` is the command line recorded as provenance (the CLI passes the user's own).
    """
    from seqbench.bench.training.train import train_run  # here: `run --print-config/--help` import no torch

    cfg = config_of(config, overrides)
    return train_run(cfg, argv=argv, progress=progress)


# -- the command ----------------------------------------------------------------------------------


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--config", help="RunConfig YAML file; overrides apply on top")
    sp.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as YAML (loadable with --config) and exit",
    )
    sp.add_argument("--out-dir", help="where runs/<id>/ goes (same as out_dir=DIR; default outputs)")
    sp.add_argument(
        "overrides",
        nargs="*",
        help="dotted key=value in any order, e.g. model=gru model.d_model=64 "
        "(task=/model= choices apply first, then values)",
    )
    sp.set_defaults(func=cmd_run)


def with_out_dir(cfg: RunConfig, composed: Composed, out_dir: str | None) -> RunConfig:
    """``cfg`` with ``--out-dir D`` applied (it wins over a --config file's out_dir, as overrides do);
    ``out_dir=`` typed as well, with another folder, is refused."""
    if out_dir is None:
        return cfg
    if "out_dir" in composed.keys and Path(cfg.out_dir) != Path(out_dir):
        raise UserError(f"--out-dir: {out_dir} disagrees with out_dir={cfg.out_dir}; give one of them")
    return override(cfg, out_dir=out_dir)


def cmd_run(args: argparse.Namespace) -> int:
    cfg, composed = resolve(args.config, args.overrides)
    cfg = with_out_dir(cfg, composed, args.out_dir)
    for line in notes(composed, args.config):
        print(line, file=sys.stderr)
    if args.print_config:
        print(cfg.to_yaml(), end="")
        return 0
    r = run(cfg, argv=args.command_line)
    final, base, pm = r.final, r.results["baseline"], r.results["primary_metric"]
    print(f"run {r.run_id}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
    if pm in final:
        solved = r.results["solved"]
        print(f"  {pm} {final[pm]:.4f}  (memoryless baseline {base.get(pm, float('nan')):.4f})  solved={solved}")
    curve = r.results.get("length_generalisation")
    if curve is not None:
        print(f"  {length_phrase(curve)}")
    print(f"  {speed_summary(r.results)}, {r.results['n_params']:,} parameters")
    print(f"  results: {r.run_dir / 'results.json'}")
    return 0 if r.ok else 1
