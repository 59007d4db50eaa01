"""The seqbench command line: list, run, sweep, compare, verify, report, runs, cost.

A thin layer: each command's module in ``bench/commands/`` declares its arguments (``register``) and
turns them into a call of its typed entry (``run()``, ``sweep()``, ``compare()`` ...). Only this
module reads argv. Bad input prints ``error: <one line>`` per problem and exits 2.

Only the module of the command being run is imported (like git's subcommands): ``seqbench --help``
imports none, ``seqbench runs`` only pandas/optuna. ``list``, ``--print-config`` and ``--help`` only read
configs: the registries hold config modules (``models/configs/``, ``tasks/**/configs/``), which import
no torch (an import-linter contract), and the command modules import their torch-heavy floor inside
the function that trains or measures. A command that reads configs starts the registries first
(``bench/startup.py``: the shipped entries, then the installed plug-ins); ``report`` and ``runs`` read
result files, whose names are text, and start nothing.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import seqbench
from seqbench.bench.core import signals
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.settings import hydra_habit

EXIT_USAGE = 2
# command -> its one-line help; the command's arguments live in seqbench.bench.commands.<command>.register
COMMANDS = {
    "list": "tasks, models and shipped sweeps with one-line docs",
    "run": "train and evaluate one configuration",
    "sweep": "run (or continue) an Optuna study from a sweep spec",
    "compare": "compare settings (comma lists = grid axes) over seeds: ranked table with intervals, paired tests, "
    "dashboard",
    "verify": "run the shipped claims (papers, textbooks) and judge them: holds / fails / inconclusive / invalid "
    "(a control failed)",
    "report": "static HTML dashboard of a study (opens from file://, no network)",
    "runs": "list the runs under an output folder (filter, sort)",
    "eval": "evaluate trained runs again (new lengths, another split) without training",
    "cost": "time and memory of one training step against sequence length",
    "probe": "a capability card: where each model stops on the probe battery's difficulty ladders (MAD, MQAR, copy)",
}
READ_NO_CONFIGS = frozenset({"report", "runs"})  # their input is result files: no registry, no plug-in imported


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default prints usage + exits 2; keep it one line
        raise UserError(message)


def version() -> str:
    """The installed package's version (importlib.metadata: the one source, pyproject.toml)."""
    return f"seqbench {seqbench.__version__}"


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (the first word that is not an option), if it names a command."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full arguments of ``command`` only: its module is imported here, and the
    other commands are names with their help (enough for ``seqbench --help``)."""
    p = _Parser(prog="seqbench", description="Benchmark harness for sequence architectures.")
    p.add_argument("--version", action="version", version=version())
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.add_argument("--version", action="version", version=version())  # `seqbench CMD --version` too
        if name == command:
            importlib.import_module(f"seqbench.bench.commands.{name}").register(sp)
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
    parser = build_parser(chosen_command(argv))
    args, extra = parser.parse_known_args(argv)
    args.command_line = ["seqbench", *argv]
    listed = next(
        (n for n in ("overrides", "settings", "filters", "claims") if isinstance(getattr(args, n, None), list)), None
    )
    stray = [a for a in extra if a.startswith("-") or listed is None]
    if stray:
        parser.error(hydra_habit(args.command, stray) or f"unrecognized arguments: {' '.join(stray)}")
    if extra:
        assert listed is not None  # without a list every extra word is stray, refused above
        setattr(args, listed, [*getattr(args, listed), *extra])
    return args


def _closed_stdout() -> int:
    """The reader went away (``seqbench list -v | head``): stop quietly, like other Unix tools."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def main(argv: Sequence[str] | None = None) -> int:
    signals.install()  # SIGTERM (schedulers, `kill`) stops work like Ctrl-C: a checkpointed run resumes
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        command = chosen_command(argv)
        if command is not None and command not in READ_NO_CONFIGS:
            # here: `report`, `runs` and a bare --help import no config module (as build_parser's commands)
            from seqbench.bench.startup import start

            start()  # before the parser: a command's arguments may name registered entries
        args = parse_args(argv)
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


def entry() -> None:
    """The ``seqbench`` console script and ``python -m seqbench``: ``main``, then a quick exit.

    Tearing down the interpreter after torch and Lightning were imported took ~1.5 s on a quiet
    2-core machine (4.8 s under load) for nothing: every file is written and closed by then. So the
    process exits as usual (threads joined, then the exit handlers W&B's service, logging and
    multiprocessing registered), and the last handler, registered here before ``main`` imports anything
    that registers one, flushes the standard streams and ends the process without the module-by-module
    teardown. ``main`` itself returns normally, for callers in Python (tests, notebooks)."""
    status = 1  # what the process reports if main raises: Python's own status for an uncaught exception

    def _end_without_teardown() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`seqbench list | head`) or stream
                pass
        os._exit(status)

    atexit.register(_end_without_teardown)  # the first registered runs last: after every other handler
    try:
        status = main()
    except SystemExit as e:  # argparse's --help and --version exit from inside main
        status = e.code if isinstance(e.code, int) else int(e.code is not None)
        raise
    sys.exit(status)


if __name__ == "__main__":
    entry()
