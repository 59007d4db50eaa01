"""The seqbench command line: list, run, sweep, report, cost, verify.

Only this module reads argv. Bad input prints ``error: <one line>`` and exits 2.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, Sequence

from seqbench.bench.errors import UserError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage + exits 2; keep it one line
        raise UserError(message)


def _fmt_default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            v = field.default_factory()
        except TypeError:
            return "..."
        return "..." if hasattr(v, "model_fields") else repr(v)
    return repr(field.default)


def cmd_list(args: argparse.Namespace) -> int:
    from seqbench.bench.registry import MODELS, TASKS
    import seqbench.bench.config  # noqa: F401  (registers everything)

    def show(kind: str, reg) -> None:
        print(f"{kind}:")
        for e in reg:
            print(f"  {e.name:<20} {e.doc}")
            if args.verbose:
                for fname, f in e.config_cls.model_fields.items():
                    if fname == "name":
                        continue
                    desc = f" - {f.description}" if f.description else ""
                    print(f"      {kind[:-1]}.{fname} = {_fmt_default(f)}{desc}")
    show("tasks", TASKS)
    show("models", MODELS)
    from seqbench.sweeps import shipped_sweeps

    print("sweeps:")
    for path, question in shipped_sweeps():
        print(f"  {path:<34} {question}")
    if not args.verbose:
        print("(seqbench list -v shows every config field with its default)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from seqbench.bench.config import load_config

    cfg = load_config(args.config, args.overrides)
    from seqbench.bench.train import run

    r = run(cfg, argv=["seqbench", "run", *sys.argv[2:]] if args.argv is None else args.argv)
    final, base = r["final"], r["baseline"]
    pm = r["primary_metric"]
    print(f"run {r['run_id']}: {r['status']}" + (f" ({r['reason']})" if r["reason"] else ""))
    if pm in final:
        print(f"  {pm} {final[pm]:.4f}  (memoryless baseline {base.get(pm, float('nan')):.4f})  "
              f"solved={r['solved']}")
    print(f"  {r['steps']} steps in {r['train_time_s']:.1f}s ({r['samples_per_s']} samples/s), "
          f"{r['n_params']:,} parameters")
    print(f"  results: {os.path.join(str(cfg.out_dir), 'runs', r['run_id'], 'results.json')}")
    return 0 if r["status"] in ("completed", "diverged") else 1


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="seqbench", description="Benchmark harness for sequence architectures.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sp = sub.add_parser("list", help="tasks, models and shipped sweeps with one-line docs")
    sp.add_argument("-v", "--verbose", action="store_true", help="also list every config field and default")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("run", help="train and evaluate one configuration")
    sp.add_argument("--config", help="RunConfig YAML file; overrides apply on top")
    sp.add_argument("overrides", nargs="*", help="dotted key=value, e.g. task=copy model.d_model=64")
    sp.set_defaults(func=cmd_run, argv=None)

    from seqbench.bench import cost
    from seqbench.reports import cli as report_cli
    from seqbench.sweeps import cli as sweep_cli
    from seqbench.sweeps import verify

    for module in (sweep_cli, report_cli, cost, verify):  # each adds its subcommand
        module.register(sub)
    return p


def one_line(msg: str, longest: int = 100) -> str:
    """A message as one terminal line: line breaks of any kind (\\n, \\x85, \\u2028 ...) become
    spaces, and a huge value echoed from the input is cut to its ends."""
    words = [w if len(w) <= longest else f"{w[:40]}...({len(w)} chars)...{w[-20:]}" for w in msg.split()]
    return " ".join(words)


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM (schedulers, `kill`) stops work like Ctrl-C: a checkpointed run resumes with resume=true
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished work is saved under out_dir", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
