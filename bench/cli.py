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

from seqbench.bench.core.errors import UserError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default prints usage + exits 2; keep it one line
        raise UserError(message)


def _fmt_default(field: Any) -> str:
    """A field's default as it would be typed on the command line (null, true, [64, 128])."""
    from seqbench.bench.core.settings import show

    if field.is_required():
        return "(required)"
    if field.default_factory is not None:
        try:
            v = field.default_factory()
        except TypeError:
            return "..."
        return "..." if hasattr(v, "model_fields") else show(v)
    return show(field.default.as_posix() if hasattr(field.default, "as_posix") else field.default)


def field_lines(prefix: str, cls: Any) -> list[str]:
    """``prefix.field = default - description`` for every field of a config section, nested
    sections (``train.early_stop``, ``model.decode``) spelled out field by field."""
    from seqbench.bench.core.schema import Section

    lines = []
    for fname, f in cls.model_fields.items():
        if fname == "name" and prefix in ("task", "model"):
            continue
        subs = [a for a in getattr(f.annotation, "__args__", (f.annotation,))
                if isinstance(a, type) and issubclass(a, Section)]
        desc = f" - {f.description}" if f.description else ""
        if subs and (f.default_factory is not None or f.default is None):
            if f.default is None and f.default_factory is None:
                lines.append(f"  {prefix}.{fname} = null{desc}")
            lines += field_lines(f"{prefix}.{fname}", subs[0])
            continue
        lines.append(f"  {prefix}.{fname} = {_fmt_default(f)}{desc}")
    return lines


def list_sections() -> dict[str, list[str]]:
    """Every config section -> its field lines: each task and model by name, then the rest."""
    from seqbench.bench.config import RunConfig
    from seqbench.bench.core.registry import MODELS, TASKS
    from seqbench.bench.core.schema import Section

    out: dict[str, list[str]] = {}
    for kind, reg in (("task", TASKS), ("model", MODELS)):
        for e in reg:
            out[e.name] = field_lines(kind, e.config_cls)
    top = []
    for fname, f in RunConfig.model_fields.items():
        if fname in ("task", "model"):
            continue
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, Section):
            out[fname] = field_lines(fname, ann)
        else:
            desc = f" - {f.description}" if f.description else ""
            top.append(f"  {fname} = {_fmt_default(f)}{desc}")
    out["run"] = top
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from seqbench.bench.core.registry import MODELS, TASKS
    import seqbench.bench.config  # noqa: F401  (registers everything)

    sections = list_sections() if args.verbose or args.section else {}
    if args.section:
        return _list_section(args.section, sections)

    def show(kind: str, reg) -> None:
        print(f"{kind}:")
        for e in reg:
            print(f"  {e.name:<20} {e.doc}")
            for line in sections.get(e.name, []):
                print(f"    {line}")
    show("tasks", TASKS)
    show("models", MODELS)
    for name, lines in sections.items():
        if name not in TASKS and name not in MODELS:
            print(f"{name}:" if name != "run" else "run (top level):")
            print("\n".join(lines))
    from seqbench.sweeps import shipped_claims, shipped_sweeps

    print("sweeps (seqbench sweep NAME):")
    for s in shipped_sweeps():
        print(f"  {s.name:<34} {s.question}")
    print("claims (seqbench verify NAME):")
    for s in shipped_claims():
        print(f"  {s.name:<34} {s.question}")
    if not args.verbose:
        print("(seqbench list -v [SECTION] shows every config field with its default)")
    return 0


def _list_section(section: str, sections: dict[str, list[str]]) -> int:
    """``seqbench list -v train``: one section (a task or model name, or train/optim/eval/...)."""
    from seqbench.bench.core.registry import MODELS, TASKS

    if section in ("task", "model"):
        names = (TASKS if section == "task" else MODELS).names()
        for name in names:
            print(f"{section} {name}:")
            print("\n".join(sections[name]))
        return 0
    if section not in sections:
        raise UserError(f"list: unknown section {section!r}; choose from task, model, "
                        f"{', '.join(n for n in sections if n not in TASKS and n not in MODELS)} "
                        "or a task/model name")
    kind = "task " if section in TASKS else "model " if section in MODELS else ""
    print(f"{kind}{section}:")
    print("\n".join(sections[section]))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from seqbench.bench.config import notes, resolve

    cfg, composed = resolve(args.config, args.overrides)
    for line in notes(composed, args.config):
        print(line, file=sys.stderr)
    if args.print_config:
        print(cfg.to_yaml(), end="")
        return 0
    from seqbench.bench.training.train import run

    r = run(cfg, argv=["seqbench", "run", *sys.argv[2:]] if args.argv is None else args.argv)
    final, base = r["final"], r["baseline"]
    pm = r["primary_metric"]
    print(f"run {r['run_id']}: {r['status']}" + (f" ({r['reason']})" if r["reason"] else ""))
    if pm in final:
        print(f"  {pm} {final[pm]:.4f}  (memoryless baseline {base.get(pm, float('nan')):.4f})  "
              f"solved={r['solved']}")
    from seqbench.bench.training.train import speed_summary

    print(f"  {speed_summary(r)}, {r['n_params']:,} parameters")
    print(f"  results: {os.path.join(str(cfg.out_dir), 'runs', r['run_id'], 'results.json')}")
    return 0 if r["status"] in ("completed", "diverged") else 1


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="seqbench", description="Benchmark harness for sequence architectures.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sp = sub.add_parser("list", help="tasks, models and shipped sweeps with one-line docs")
    sp.add_argument("-v", "--verbose", action="store_true", help="also list every config field and default")
    sp.add_argument("section", nargs="?", help="only this section's fields: train, optim, eval, tracking, "
                    "diagnostics, run, task, model, or a task/model name")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("run", help="train and evaluate one configuration")
    sp.add_argument("--config", help="RunConfig YAML file; overrides apply on top")
    sp.add_argument("--print-config", action="store_true",
                    help="print the resolved config as YAML (loadable with --config) and exit")
    sp.add_argument("overrides", nargs="*", help="dotted key=value in any order, e.g. model=gru model.d_model=64 "
                    "(task=/model= choices apply first, then values)")
    sp.set_defaults(func=cmd_run, argv=None)

    from seqbench.bench.commands import cost
    from seqbench.bench.commands import report as report_cli
    from seqbench.reports import runs as runs_cli
    from seqbench.bench.commands import sweep as sweep_cli
    from seqbench.bench.commands import compare as compare_cli
    from seqbench.bench.commands import eval as eval_cli, verify

    for module in (sweep_cli, compare_cli, verify, report_cli, runs_cli, cost, eval_cli):  # each adds its subcommand
        module.register(sub)
    return p


def one_line(msg: str, longest: int = 100) -> str:
    """A message as one terminal line: line breaks of any kind (\\n, \\x85, \\u2028 ...) become
    spaces, and a huge value echoed from the input is cut to its ends."""
    words = [w if len(w) <= longest else f"{w[:40]}...({len(w)} chars)...{w[-20:]}" for w in msg.split()]
    return " ".join(words)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """argparse, but ``key=value`` settings may also follow options (``sweep s.yaml --trials 2 a=1``):
    a positional list stops at the first option, and what follows would be 'unrecognized'."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    listed = next((n for n in ("overrides", "settings") if isinstance(getattr(args, n, None), list)), None)
    stray = [a for a in extra if a.startswith("-") or listed is None]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
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
        args = parse_args(argv)
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return _closed_stdout()
    except UserError as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished work is saved under out_dir", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
