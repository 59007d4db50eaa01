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
the same seeds, named by a digest of its spec (``probe-<probe>-<digest>``; the plan is
``bench/commands/probe_plan.py``, its spec built by ``sweeps/grid.py`` as ``compare``'s is), run by ``sweep()``,
the runner behind ``seqbench sweep``, with its YAML written to ``<out_dir>/specs/`` beside it: its runs are
ordinary runs, a killed probe continues where it stopped, and a model already probed with the same settings
trains nothing again.
Then ``sweeps/frontier.py`` turns each study into the frontier with its interval, and the card goes to
``<out_dir>/cards/<name>/`` (``card.json``, ``card.md``, ``index.html``) and to the terminal.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seqbench.bench.commands.probe_plan import Job, Plan, card_name, metric_of, specs
from seqbench.bench.commands.sweep import sweep
from seqbench.bench.core import card_against
from seqbench.bench.core.artifacts import check_writable
from seqbench.bench.core.card_format import Card, CardEntry
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.provenance import git_sha, package_version
from seqbench.sweeps.coordinator import preflight_specs
from seqbench.sweeps.probes import BATTERIES, Battery, Probe, select
from seqbench.sweeps.probes import battery as battery_named
from seqbench.sweeps.storage import check_scheme


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
        choices=list(BATTERIES),
        help="quick: 2 CPU cores, ~10 min for one small model; paper: MAD's widths and optimiser grid (a GPU)",
    )
    sp.add_argument(
        "--probes",
        help=f"comma list of probes to run (default: all of {', '.join(p.name for p in BATTERIES['quick'].probes)})",
    )
    sp.add_argument("--rungs", type=int, help="keep only the first K rungs of every ladder")
    sp.add_argument(
        "--against",
        metavar="CARD",
        help="put your models beside another card's without retraining it: 'baseline' (the shipped card of "
        "eight models, quick profile, seeds 0-2) or a card.json (or its folder); refused before training "
        "when the profile, seeds, learning rates or probes differ",
    )
    sp.add_argument("--workers", type=int, default=1, help="local worker processes per study")
    sp.add_argument("--storage", help="journal path or postgresql://... (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="runs, journal, specs/ and cards/ go here (default outputs)")
    sp.add_argument("--name", help="the card's folder under <out-dir>/cards/ (default: the models and the profile)")
    sp.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the trials that failed for a reason outside the experiment (no space left, out of "
        "memory, killed); the card lists them until then",
    )
    sp.add_argument(
        "--print-config",
        "--print-spec",
        dest="print_config",
        action="store_true",
        help="print every study's sweep YAML and run nothing",
    )
    sp.set_defaults(func=cmd_probe)


@dataclass(frozen=True)
class ProbeResult:
    """What ``probe()`` returns: the card, where its files are, and each study's sweep status."""

    card: Card
    folder: Path  # <out_dir>/cards/<name>/: card.json, card.md, index.html
    index: Path
    studies: dict[str, str]  # "<probe> x <model>" -> study name
    status: int  # 0 when every study's workers finished cleanly


def run_job(
    job: Job, p: Plan, out: Path, workers: int, storage: str | None, retry_failed: bool = False
) -> tuple[CardEntry, int]:
    """Run (or continue) one study: its typed spec through ``sweep()`` (its YAML written beside the study as
    provenance), its card entry read from the sweep's own trials and runs; and the sweep's status."""
    from seqbench.sweeps.frontier import probe_entry  # here: scipy stays out of `probe --help/--print-config`

    path = job.grid.write(out, job.study, command="probe")
    swept = sweep(
        job.spec,
        source=path,
        study=job.study,
        out_dir=out,
        workers=workers,
        storage=storage,
        quiet_summary=True,
        retry_failed=retry_failed,
    )
    metric, maximize = metric_of(job.probe)
    return probe_entry(
        swept.table(),
        job.probe,
        model=job.model.label,
        study=job.study,
        seeds=p.seeds,
        per_seed=job.per_seed,
        metric=metric,
        maximize=maximize,
    ), swept.status


def probe(
    settings: Sequence[str],
    *,
    profile: Profile | Battery = "quick",
    probes: Sequence[str] | None = None,
    rungs: int | None = None,
    workers: int = 1,
    storage: str | None = None,
    out_dir: str | Path = "outputs",
    name: str | None = None,
    argv: Sequence[str] = (),
    retry_failed: bool = False,
    against: str | None = None,
) -> ProbeResult:
    """Probe the models of ``settings`` on the battery of ``profile`` and write their card: the entry behind
    ``seqbench probe``. Every study's spec is built (and so checked), and every configuration's task and model,
    before anything trains or any file is written. ``retry_failed``:
    as ``sweep(retry_failed=True)``, per study. ``against``: ``"baseline"`` or a card.json path whose models are
    put beside these, not retrained (``bench/core/card_against.py``), refused before anything trains where the
    two cards would not measure the same thing."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    prof = battery_named(profile) if isinstance(profile, str) else profile
    chosen = select(prof, list(probes) if probes else None, rungs)
    p, jobs = specs(settings, prof, chosen)
    other = _against(against, p, prof, chosen, argv)
    for n in p.notes:
        print(n)
    check_scheme(storage)
    # every study's task and model built before any study, spec or card: a model a run would refuse (a plug-in
    # mixer that reads the future) refuses the command, and never shows on a card as failing every rung
    preflight_specs([(f"probe {j.probe.name} x {j.model.label}", j.spec) for j in jobs])
    print(
        f"probe: {len(p.models)} model(s) x {len(chosen)} probe(s), profile {prof.name} ({prof.note}), "
        f"seeds {p.seeds}, lr {p.lrs}",
        flush=True,
    )
    out = Path(out_dir)
    check_writable(out)
    from seqbench.reports.card import answer, write_card_files  # here: `probe --help/--print-config` stay light

    entries: list[CardEntry] = []
    status = 0
    for i, job in enumerate(jobs):
        print(f"[probe {i + 1}/{len(jobs)}] {job.probe.name} x {job.model.label}: study {job.study}", flush=True)
        entry, code = run_job(job, p, out, workers, storage, retry_failed)
        entries.append(entry)
        status |= code
    card = _card(p, prof, chosen, entries, argv)
    if other is not None:
        card = card_against.beside(card, *other)
    card["answer"] = answer(card)
    folder = out / "cards" / (name or card_name(p, prof.name))
    studies = {f"{j.probe.name} x {j.model.label}": j.study for j in jobs}
    return ProbeResult(card, folder, write_card_files(folder, card), studies, status)


def _against(
    against: str | None, p: Plan, prof: Battery, chosen: tuple[Probe, ...], argv: Sequence[str]
) -> tuple[Card, str] | None:
    """The card ``--against`` names, checked against this plan (header and probes) before anything trains."""
    if against is None:
        return None
    other, where = card_against.load(against)
    card_against.check(_card(p, prof, chosen, [], argv), other, where)
    return other, where


def _card(p: Plan, prof: Battery, chosen: tuple[Probe, ...], entries: list[CardEntry], argv: Sequence[str]) -> Card:
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
        prof = battery_named(args.profile)
        chosen = select(prof, probes, args.rungs)
        p, jobs = specs(args.settings, prof, chosen)
        _against(args.against, p, prof, chosen, args.command_line)
        print("\n---\n".join(j.grid.yaml(j.study, p.notes, "probe") for j in jobs), end="")
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
        retry_failed=args.retry_failed,
        against=args.against,
    )
    from seqbench.reports.card import terminal  # here: `probe --help` stays light

    print(terminal(r.card))
    print(f"card: {r.index}  (card.json, card.md beside it)")
    return r.status
