"""The seqbench command line: list, run, sweep, compare, verify, report, runs, cost.

A thin layer: each command's module in ``bench/commands/`` declares its arguments (``register``) and
turns them into a call of its typed entry (``run()``, ``sweep()``, ``compare()`` ...). Only this
module reads argv. Bad input prints ``error: <one line>`` and exits 2.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, Sequence

import seqbench
from seqbench.bench.commands import compare, cost, report, run, runs, sweep, verify
from seqbench.bench.commands import list as list_cmd
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.settings import hydra_habit

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage + exits 2; keep it one line
        raise UserError(message)


def version() -> str:
    """The installed package's version (importlib.metadata: the one source, pyproject.toml)."""
    return f"seqbench {seqbench.__version__}"


def build_parser() -> argparse.ArgumentParser:
    """Every command's module adds its subcommand (``register``); each module imports only what
    parsing needs at its top, so building the parser (``--help``) imports no torch or Lightning."""
    p = _Parser(prog="seqbench", description="Benchmark harness for sequence architectures.")
    p.add_argument("--version", action="version", version=version())
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in (list_cmd, run, sweep, compare, verify, report, runs, cost):
        module.register(sub)
    for sp in sub.choices.values():  # `seqbench CMD --version` too
        sp.add_argument("--version", action="version", version=version())
    return p


def one_line(msg: str, longest: int = 100) -> str:
    """A message as one terminal line: line breaks of any kind (\\n, \\x85, \\u2028 ...) become
    spaces, and a huge value echoed from the input is cut to its ends."""
    words = [w if len(w) <= longest else f"{w[:40]}...({len(w)} chars)...{w[-20:]}" for w in msg.split()]
    return " ".join(words)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """argparse, but ``key=value`` settings may also follow options (``sweep s.yaml --trials 2 a=1``):
    a positional list stops at the first option, and what follows would be 'unrecognized'.

    ``args.command_line`` is the user's command line, which runs and studies record as provenance."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    args.command_line = ["seqbench", *argv]
    listed = next((n for n in ("overrides", "settings", "filters", "claims")
                   if isinstance(getattr(args, n, None), list)), None)
    stray = [a for a in extra if a.startswith("-") or listed is None]
    if stray:
        parser.error(hydra_habit(args.command, stray) or f"unrecognized arguments: {' '.join(stray)}")
    if extra:
        setattr(args, listed, [*getattr(args, listed), *extra])
    return args


def _closed_stdout() -> int:
    """The reader went away (``seqbench list -v | head``): stop quietly, like other Unix tools."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM (schedulers, `kill`) stops work like Ctrl-C: a checkpointed run resumes with resume=true
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        args = parse_args(list(sys.argv[1:] if argv is None else argv))
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return _closed_stdout()
    except UserError as e:
        for problem in e.problems:  # one line each: two mistakes, two lines
            print(f"error: {one_line(problem)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished work is saved under out_dir", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
