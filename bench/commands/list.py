"""``seqbench list [-v] [SECTION]``: tasks, models, shipped sweeps and claims, and every config field.

The typed entries are ``list_tasks()``/``list_models()`` (registered names, for a notebook) and
``list_sections()`` (section -> its ``key = default - description`` lines); ``cmd_list`` prints them.
Every name here needs the registries filled, which imports every model's, mixer's and task's config
module (``models/configs/``, ``tasks/**/configs/``), none of which imports torch, and every installed
plug-in's entry point: a declaration (``seqbench.plugin``) imports no torch either, a class named directly
does (``bench/plugins.py``).
"""

from __future__ import annotations

import argparse
from typing import Any

from seqbench.bench.config import RunConfig, start
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS, TASKS
from seqbench.bench.core.schema import Section, describe_field
from seqbench.bench.core.settings import show
from seqbench.bench.plugins import BROKEN
from seqbench.sweeps import shipped_claims, shipped_sweeps


def list_tasks() -> list[str]:
    """The registered task names (what ``task=`` takes), installed plug-ins' included."""
    start()
    return TASKS.names()


def list_models() -> list[str]:
    """The registered model names (what ``model=`` takes), installed plug-ins' included."""
    start()
    return MODELS.names()


# -- field lines ----------------------------------------------------------------------------------


def _fmt_default(field: Any) -> str:
    """A field's default as it would be typed on the command line (null, true, [64, 128])."""
    if field.is_required():
        return "(required)"
    if field.default_factory is not None:
        try:
            v = field.default_factory()
        except TypeError:
            return "..."
        return "..." if hasattr(v, "model_fields") else show(v)
    return show(field.default.as_posix() if hasattr(field.default, "as_posix") else field.default)


def field_line(key: str, field: Any) -> str:
    """``  key = default - description [allowed values or range]``: the one place a field's listing
    line is written."""
    desc = f" - {field.description}" if field.description else ""
    allowed = describe_field(field)  # choices and bounds: what the error would say, before the error
    return f"  {key} = {_fmt_default(field)}{desc}{f' [{allowed}]' if allowed else ''}"


def field_lines(prefix: str, cls: Any) -> list[str]:
    """``prefix.field = default - description`` for every field of a config section, nested
    sections (``train.early_stop``, ``model.decode``) spelled out field by field."""
    lines = []
    for fname, f in cls.model_fields.items():
        if fname == "name" and prefix in ("task", "model", "model.mixer_args"):
            continue
        subs = [
            a
            for a in getattr(f.annotation, "__args__", (f.annotation,))
            if isinstance(a, type) and issubclass(a, Section)
        ]
        if subs and (f.default_factory is not None or f.default is None):
            if f.default is None and f.default_factory is None:
                lines.append(field_line(f"{prefix}.{fname}", f))  # `= null`: the section is off by default
            lines += field_lines(f"{prefix}.{fname}", subs[0])
            continue
        lines.append(field_line(f"{prefix}.{fname}", f))
    return lines


def list_sections() -> dict[str, list[str]]:
    """Every config section -> its field lines: each task and model by name, then the rest."""
    start()
    out: dict[str, list[str]] = {}
    for kind, reg in (("task", TASKS), ("model", MODELS), ("model.mixer_args", MIXERS)):
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
            top.append(field_line(fname, f))
    out["run"] = top
    return out


# -- the command ----------------------------------------------------------------------------------


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("-v", "--verbose", action="store_true", help="also list every config field and default")
    sp.add_argument(
        "section",
        nargs="?",
        help="only this section's fields: train, optim, eval, tracking, "
        "diagnostics, run, task, model, mixer, or a task/model/mixer name",
    )
    sp.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    sections = list_sections() if args.verbose or args.section else {}
    if args.section:
        return _list_section(args.section, sections)

    def show(kind: str, reg) -> None:
        print(f"{kind}:")
        for e in reg:
            origin = "" if e.origin == "seqbench" else f" [plug-in: {e.origin}]"
            print(f"  {e.name:<20} {e.doc}{origin}")
            for line in sections.get(e.name, []):
                print(f"    {line}")
        for (k, name), why in BROKEN.items():
            if k == reg.kind:
                print(f"  {name:<20} [broken plug-in] {why}")

    show("tasks", TASKS)
    show("models", MODELS)
    show("mixers (model=stack model.mixer=NAME, or pkg.module:Class)", MIXERS)
    for name, lines in sections.items():
        if name not in TASKS and name not in MODELS and name not in MIXERS:
            print(f"{name}:" if name != "run" else "run (top level):")
            print("\n".join(lines))
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
    regs = {"task": TASKS, "model": MODELS, "mixer": MIXERS}
    if section in regs:
        for name in regs[section].names():
            print(f"{section} {name}:")
            print("\n".join(sections[name]))
        return 0
    if section not in sections:
        named = [n for n in sections if all(n not in r for r in regs.values())]
        raise UserError(
            f"list: unknown section {section!r}; choose from task, model, mixer, "
            f"{', '.join(named)} or a task/model/mixer name"
        )
    kind = next((f"{k} " for k, r in regs.items() if section in r), "")
    print(f"{kind}{section}:")
    print("\n".join(sections[section]))
    return 0
