"""``seqbench probe MODEL-SETTINGS... [--profile quick|paper] [--probes a,b] [--rungs K]``: a capability card.

Models come in groups: each ``model=NAME`` word starts one, and the ``model.*`` words after it belong to
it (``model=lstm model=stack model.mixer=mamba model.mixer_args.d_state=8``). Inside a group a comma list
is a product, as in ``compare`` (``model=stack model.mixer=attention,mamba`` is two models; ``model=lstm,gru``
too); a field only some of a group's models have is applied to those (a note says so), and one none has
is refused. A plug-in is named by import path (``model=stack model.mixer=mypkg.layers:TokenShift``). The
first model is the reference the card compares the others to. Other words apply to every run
(``train.max_steps=200``, ``tracking.wandb=offline``); ``seeds=N`` and ``optim.lr=a,b`` replace the
profile's seeds and learning rates.

Each probe (``sweeps/probes.py``) x model is one grid study over its ladder's rungs x the learning rates on
the same seeds, named by a digest of its spec (``probe-<probe>-<digest>``), written to
``<out_dir>/specs/`` and run by ``seqbench sweep`` itself: its runs are ordinary runs, a killed probe
continues where it stopped, and a model already probed with the same settings trains nothing again.
Then ``sweeps/frontier.py`` turns each study into the frontier with its interval, and the card goes to
``<out_dir>/cards/<name>/`` (``card.json``, ``card.md``, ``index.html``) and to the terminal.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seqbench.bench.config  # noqa: F401  (fills the registries)
from seqbench.bench.commands.compare import _REFUSED, _seeds, _values, spec_yaml
from seqbench.bench.commands.sweep import sweep
from seqbench.bench.config import compose
from seqbench.bench.core.artifacts import Card, atomic_write, check_writable
from seqbench.bench.core.contract import Goal
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, package_version
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.sweeps.probes import PROFILES, Probe, Profile, select
from seqbench.sweeps.probes import profile as profile_named
from seqbench.sweeps.spec import parse_spec
from seqbench.sweeps.storage import check_scheme
from seqbench.sweeps.study import comparable


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "settings",
        nargs="*",
        help="models: model=NAME starts one, model.* words after it are its "
        "settings (a comma list makes several); other key=value apply to every run; seeds=N, "
        "optim.lr=a,b replace the profile's",
    )
    sp.add_argument(
        "--profile",
        default="quick",
        choices=list(PROFILES),
        help="quick: 2 CPU cores, ~10 min for one small model; paper: MAD's widths and optimiser grid (a GPU)",
    )
    sp.add_argument(
        "--probes",
        help=f"comma list of probes to run (default: all of {', '.join(p.name for p in PROFILES['quick'].probes)})",
    )
    sp.add_argument("--rungs", type=int, help="keep only the first K rungs of every ladder")
    sp.add_argument("--workers", type=int, default=1, help="local worker processes per study")
    sp.add_argument("--storage", help="journal path or postgresql://... (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="runs, journal, specs/ and cards/ go here (default outputs)")
    sp.add_argument("--name", help="the card's folder under <out-dir>/cards/ (default: the models and the profile)")
    sp.add_argument(
        "--print-config",
        "--print-spec",
        dest="print_config",
        action="store_true",
        help="print every study's sweep YAML and run nothing",
    )
    sp.set_defaults(func=cmd_probe)


# -- settings -> models --------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbedModel:
    """One model of the card."""

    label: str  # the card's name for it: the model, or the mixer of a stack, plus settings given
    settings: dict[str, Any]  # {model.<field>: value} as given (model.name included)


@dataclass(frozen=True)
class Plan:
    """What the settings ask for: the models, and what every run shares."""

    models: list[ProbedModel]
    common: dict[str, Any]  # {dotted key: value} for every run
    seeds: list[int]
    lrs: list[float]
    notes: list[str]


def _groups(settings: Sequence[str]) -> tuple[list[list[tuple[str, str]]], dict[str, str]]:
    groups: list[list[tuple[str, str]]] = []
    common: dict[str, str] = {}
    for word in settings:
        key, eq, text = word.partition("=")
        key = key.strip()
        if not eq:
            raise UserError(f"{word}: settings look like key=value, e.g. model=lstm model=stack model.mixer=mamba")
        if key == "task" or key.startswith("task."):
            raise UserError(f"{key}: probe sets the tasks and their ladders; choose probes with --probes NAME,...")
        if key.split(".")[0] in _REFUSED:
            raise UserError(f"{key}: set by probe; {_REFUSED[key.split('.')[0]]}")
        if key in ("model", "model.name"):
            groups.append([("model.name", text)])
        elif key.startswith("model."):
            if not groups:
                raise UserError(f"{key}: comes before any model=NAME; start each model with model=NAME")
            groups[-1].append((key, text))
        elif key in common:
            raise UserError(f"{key}: given twice; give it once")
        else:
            common[key] = text
    if not groups:
        raise UserError(
            "probe: name a model to probe, e.g. model=lstm (several: model=lstm model=stack model.mixer=mamba)"
        )
    return groups, common


def _fields(name: str) -> set[str]:
    return set(MODELS.get(str(name)).config_cls.model_fields)


def expand(group: list[tuple[str, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """A group's models (its comma lists as a product), fields a model lacks dropped with a note."""
    axes: dict[str, list[Any]] = {}
    for key, text in group:
        if key in axes:
            raise UserError(f"{key}: given twice for one model; give it once (a comma list makes several models)")
        axes[key] = _values(key, text)
    names = axes["model.name"]
    for key in axes:
        field = key.split(".")[1]
        if key != "model.name" and not any(field in _fields(n) for n in names):
            raise UserError(
                f"{key}: no field {field!r} in {', '.join(map(str, names))}; "
                f"allowed: {', '.join(sorted(_fields(names[0]) - {'name'}))}"
            )
    out, notes = [], []
    for combo in itertools.product(*axes.values()):
        d = dict(zip(axes, combo))
        kept = {k: v for k, v in d.items() if k == "model.name" or k.split(".")[1] in _fields(d["model.name"])}
        if len(kept) < len(d):
            notes.append(
                f"note: {', '.join(sorted(set(d) - set(kept)))} left out for model={d['model.name']} (no such field)"
            )
        if kept not in out:
            out.append(kept)
    return out, list(dict.fromkeys(notes))


def label(settings: dict[str, Any]) -> str:
    """``lstm``, ``mamba`` (a stack's mixer), ``TokenShift`` (an import path's class), plus the settings given."""
    name = str(settings["model.name"])
    head = str(settings.get("model.mixer", name)) if name == "stack" else name
    head = head.rsplit(":", 1)[-1]
    extra = [f"{k.removeprefix('model.')}={v}" for k, v in settings.items() if k not in ("model.name", "model.mixer")]
    return head + (f"[{', '.join(extra)}]" if extra else "")


def _shared(common_text: dict[str, str], prof: Profile) -> tuple[dict[str, Any], list[int], list[float]]:
    """The settings for every run, the seeds and the learning rates (the profile's unless given)."""
    common: dict[str, Any] = {}
    seeds: list[int] | int = prof.seeds
    lrs = list(prof.lrs)
    for key, text in common_text.items():
        if key == "seeds":
            seeds = _seeds(text)
            continue
        values = _values(key, text)
        if key == "optim.lr":
            lrs = [float(v) for v in values]
        elif len(values) > 1:
            raise UserError(
                f"{key}: probe sweeps only models (model=a,b), rungs and learning rates (optim.lr=a,b); "
                f"give {key} one value, or compare it with seqbench compare"
            )
        else:
            common[key] = values[0]
    seed_list = list(range(seeds)) if isinstance(seeds, int) else seeds
    if not seed_list:
        raise UserError("seeds: must be >= 1")
    return common, seed_list, lrs


def plan(settings: Sequence[str], prof: Profile) -> Plan:
    """The models (groups expanded, duplicates once) and the shared settings of ``settings``."""
    groups, common_text = _groups(settings)
    models, notes = [], []
    for g in groups:
        found, said = expand(g)
        models += [m for m in found if m not in models]
        notes += said
    probed = [ProbedModel(label(m), m) for m in models]
    labels = [m.label for m in probed]
    twice = [x for x in labels if labels.count(x) > 1]
    if twice:
        raise UserError(f"probe: two models share the label {twice[0]!r}; give them different settings")
    return Plan(probed, *_shared(common_text, prof), notes)


# -- models x probes -> studies -------------------------------------------------------------------


def metric_of(probe: Probe) -> tuple[str, bool]:
    facts = TASKS.get(probe.task).config_cls.facts
    return f"val/{facts.primary}", facts.primary_goal is Goal.MAX


def study_spec(probe: Probe, model: ProbedModel, p: Plan, prof: Profile) -> dict[str, Any]:
    """The grid spec of one probe x model: rungs x learning rates (x weight decays) on the plan's seeds."""
    fields = _fields(model.settings["model.name"])
    flat = {
        "task.name": probe.task,
        **{f"task.{k}": v for k, v in probe.settings.items()},
        **{f"model.{k}": v for k, v in prof.model.items() if k in fields},
        **model.settings,
        "train.max_steps": probe.steps,
        **prof.run,
        **p.common,
    }
    metric, maximize = metric_of(probe)
    if "train.early_stop" not in p.common and probe.stop_at is not None:  # a solved run stops: budget for the rest
        flat["train.early_stop"] = {"metric": metric, "threshold": probe.stop_at}
    params: dict[str, Any] = {
        f"task.{probe.ladder.key}": {"values": list(probe.ladder.rungs)},
        "optim.lr": {"values": p.lrs},
    }
    if len(prof.weight_decays) > 1 and "optim.weight_decay" not in p.common:
        params["optim.weight_decay"] = {"values": list(prof.weight_decays)}
    question = f"Probe {probe.name} ({probe.skill}): where does {model.label} stop on task.{probe.ladder.key}?"
    raw = {
        "question": question,
        "base": compose({}, flat).data,
        "method": "grid",
        "metric": {"name": metric, "goal": "maximize" if maximize else "minimize"},
        "parameters": params,
        "seeds": p.seeds,
    }
    parse_spec(raw, source=f"probe {probe.name} x {model.label}")  # every grid point's config built: fails now
    return raw


def study_name(probe: Probe, raw: dict[str, Any]) -> str:
    canon = comparable(parse_spec(raw).to_dict())  # seeds included: a study's seed list is fixed once it runs
    return f"probe-{probe.name}-" + hashlib.sha1(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:10]


def card_name(p: Plan, prof_name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", "+".join(m.label for m in p.models))
    if len(name) > 60:
        name = name[:48] + "-" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name}-{prof_name}"


@dataclass(frozen=True)
class ProbeResult:
    """What ``probe()`` returns: the card, where its files are, and each study's sweep status."""

    card: Card
    folder: Path  # <out_dir>/cards/<name>/: card.json, card.md, index.html
    index: Path
    studies: dict[str, str]  # "<probe> x <model>" -> study name
    status: int  # 0 when every study's workers finished cleanly


@dataclass(frozen=True)
class Job:
    """One probe x model: its grid spec and its study's name."""

    probe: Probe
    model: ProbedModel
    raw: dict[str, Any]  # the sweep spec, as its YAML reads
    study: str

    @property
    def per_seed(self) -> int:
        """Runs per seed and rung: the grid's other axes (learning rates, weight decays)."""
        axes = self.raw["parameters"].items()
        return math.prod(len(v["values"]) for k, v in axes if k != f"task.{self.probe.ladder.key}")


def specs(settings: Sequence[str], prof: Profile, probes: tuple[Probe, ...]) -> tuple[Plan, list[Job]]:
    p = plan(settings, prof)
    jobs = []
    for pr in probes:
        for m in p.models:
            raw = study_spec(pr, m, p, prof)
            jobs.append(Job(pr, m, raw, study_name(pr, raw)))
    return p, jobs


def run_job(job: Job, p: Plan, out: Path, workers: int, storage: str | None) -> tuple[Any, int]:
    """Run (or continue) one study through ``sweep()`` and read its card entry from the runs; the sweep's status."""
    from seqbench.sweeps.frontier import probe_entry
    from seqbench.sweeps.storage import open_storage
    from seqbench.sweeps.table import build_table, load_study, runs_root  # here: `probe --help` stays light

    path = out / "specs" / f"{job.study}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, spec_yaml(job.raw, job.study, command="probe"))
    status = sweep(path, study=job.study, out_dir=out, workers=workers, storage=storage, quiet_summary=True).status
    st = load_study(job.study, open_storage(storage, out))
    metric, maximize = metric_of(job.probe)
    return probe_entry(
        build_table(st, runs_root(st, out)),
        job.probe,
        model=job.model.label,
        study=job.study,
        seeds=p.seeds,
        per_seed=job.per_seed,
        metric=metric,
        maximize=maximize,
    ), status


def probe(
    settings: Sequence[str],
    *,
    profile: str | Profile = "quick",
    probes: Sequence[str] | None = None,
    rungs: int | None = None,
    workers: int = 1,
    storage: str | None = None,
    out_dir: str | Path = "outputs",
    name: str | None = None,
    argv: Sequence[str] = (),
) -> ProbeResult:
    """Probe the models of ``settings`` on the battery of ``profile`` and write their card: the entry behind
    ``seqbench probe``. Every study's spec is built (and so checked) before anything trains."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    prof = profile_named(profile) if isinstance(profile, str) else profile
    chosen = select(prof, list(probes) if probes else None, rungs)
    p, jobs = specs(settings, prof, chosen)
    for n in p.notes:
        print(n)
    print(
        f"probe: {len(p.models)} model(s) x {len(chosen)} probe(s), profile {prof.name} ({prof.note}), "
        f"seeds {p.seeds}, lr {p.lrs}",
        flush=True,
    )
    out = Path(out_dir)
    check_scheme(storage)
    check_writable(out)
    from seqbench.reports.card import answer, write_card_files  # here: `probe --help/--print-config` stay light

    entries, status = [], 0
    for i, job in enumerate(jobs):
        print(f"[probe {i + 1}/{len(jobs)}] {job.probe.name} x {job.model.label}: study {job.study}", flush=True)
        entry, code = run_job(job, p, out, workers, storage)
        entries.append(entry)
        status |= code
    card = _card(p, prof, chosen, entries, argv)
    card["answer"] = answer(card)
    folder = out / "cards" / (name or card_name(p, prof.name))
    studies = {f"{j.probe.name} x {j.model.label}": j.study for j in jobs}
    return ProbeResult(card, folder, write_card_files(folder, card), studies, status)


def _card(p: Plan, prof: Profile, chosen: tuple[Probe, ...], entries: list[Any], argv: Sequence[str]) -> Card:
    from seqbench.bench.core.stats import LEVEL  # here: scipy stays out of `probe --help/--print-config`

    wds = list(prof.weight_decays) if "optim.weight_decay" not in p.common else [p.common["optim.weight_decay"]]
    return Card(
        created=time.strftime("%Y-%m-%dT%H:%M:%S"),
        seqbench_version=package_version(),
        git_sha=git_sha(),
        argv=list(argv),
        profile=prof.name,
        seeds=p.seeds,
        lrs=p.lrs,
        weight_decays=wds,
        level=LEVEL,
        models=[{"label": m.label, "settings": [f"{k}={v}" for k, v in m.settings.items()]} for m in p.models],
        probes=[
            {
                "name": pr.name,
                "task": pr.task,
                "skill": pr.skill,
                "key": pr.ladder.key,
                "unit": pr.ladder.unit,
                "rungs": list(pr.ladder.rungs),
                "reference": pr.ladder.reference,
                "settings": pr.settings,
                "steps": p.common.get("train.max_steps", pr.steps),
            }
            for pr in chosen
        ],
        entries=entries,
    )


def cmd_probe(args: argparse.Namespace) -> int:
    probes = [s.strip() for s in args.probes.split(",")] if args.probes else None
    if args.print_config:
        prof = profile_named(args.profile)
        p, jobs = specs(args.settings, prof, select(prof, probes, args.rungs))
        print("\n---\n".join(spec_yaml(j.raw, j.study, p.notes, "probe") for j in jobs), end="")
        return 0
    r = probe(
        args.settings,
        profile=args.profile,
        probes=probes,
        rungs=args.rungs,
        workers=args.workers,
        storage=args.storage,
        out_dir=args.out_dir,
        name=args.name,
        argv=args.command_line,
    )
    from seqbench.reports.card import terminal  # here: `probe --help` stays light

    print(terminal(r.card))
    print(f"card: {r.index}  (card.json, card.md beside it)")
    return r.status
