"""Running one claim (``seqbench verify``): its seeds look by look, each look's new seeds a sweep of their
own, judged after each look (``looks.py``); a ``kind: cost`` claim's replicates instead (``cost.py``).

The first look's seeds run in study ``verify-<claim>-<profile>-<digest>`` (``Claim.digest``: the claim's
registration, so re-running continues it), each later look's new seeds in ``<study>+s<first>-<last>`` (the
runner keeps a study's seed list fixed). A claim runs only under its registration (``registry.py``): a new
one on fresh seeds is registered before anything trains; a claim changed on judged seeds is refused.
Each look's resolved spec is written beside the lock (``<out>/verify/<claim>/<profile>[-lookK].yaml``), so
``seqbench sweep`` can run it again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import yaml

from seqbench.bench.core.artifacts import RUN_STATUSES
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.sweeps.claims.cost import run_cost_claim
from seqbench.sweeps.claims.diag import add_diagnostic_metrics
from seqbench.sweeps.claims.looks import Look, judge_look
from seqbench.sweeps.claims.registry import registered
from seqbench.sweeps.claims.results import ERROR, ClaimResult
from seqbench.sweeps.claims.schema import Claim, claim_grid, sweep_spec, swept_values
from seqbench.sweeps.coordinator import run_sweep, sweep_argv
from seqbench.sweeps.study import SpecChanged
from seqbench.sweeps.table import Objective, outcomes


def run_claim(claim: Claim, profile: Profile, out_dir: Path, workers: int, storage: str | None) -> ClaimResult:
    """Run and judge one claim; an exception becomes an ``error`` result (the other claims still run)."""
    t0 = time.perf_counter()
    try:
        res = (
            run_cost_claim(claim, profile, out_dir)
            if claim.kind == "cost"
            else run_sweep_claim(claim, profile, out_dir, workers, storage)
        )
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - one claim that cannot run never stops the others
        res = ClaimResult(claim, profile, ERROR, [], error=f"{type(e).__name__}: {' '.join(str(e).split())}"[:300])
    return replace(res, wall_s=time.perf_counter() - t0)


def run_sweep_claim(claim: Claim, profile: Profile, out_dir: Path, workers: int, storage: str | None) -> ClaimResult:
    """The claim's looks in order: run the next seeds, judge everything so far at the look's spent alpha,
    stop at the first look that decides every rule (or finds a failed control)."""
    spec = sweep_spec(claim, profile)  # every seed's configs built: a bad field fails before training
    seeds = claim.seeds_for(profile)
    looks = claim.looks_for(profile) or [len(seeds)]
    base = f"verify-{claim.name}-{profile}-{registered(claim, profile)}"
    swept = swept_values(claim, profile)
    tables: list[pd.DataFrame] = []
    errors: list[str] = []
    prev = 0
    for k, n in enumerate(looks):
        chunk = seeds[prev:n]  # seeds are only ever appended, in the claim's order
        study = base if k == 0 else f"{base}+s{chunk[0]}-{chunk[-1]}"
        table, err = _run_seeds(claim, profile, out_dir, workers, storage, study, chunk, k)
        tables.append(table)
        errors += err
        table = (
            pd.concat([t for t in tables if not t.empty], ignore_index=True)
            if any(not t.empty for t in tables)
            else tables[0]
        )
        look = judge_look(
            claim,
            table,
            swept,
            profile,
            Look(looks, k, f"n={n}"),
            lambda: f"adding seeds {seeds[n : looks[k + 1]]}",  # noqa: B023  (called within this iteration)
        )
        if look.done or k == len(looks) - 1:
            break
        prev = n
    m = spec.metrics()[0]
    assert m.goal is not None  # metrics() states every goal (the task's where the spec leaves it out)
    objective = Objective(m.name, m.goal)
    return look.result(claim, profile, study=base, table=table, objective=objective, error="; ".join(errors)[:300])


def _run_seeds(
    claim: Claim,
    profile: Profile,
    out_dir: Path,
    workers: int,
    storage: str | None,
    study: str,
    seeds: list[int],
    look: int,
) -> tuple[pd.DataFrame, list[str]]:
    """One look's new seeds as a sweep of their own (the runner keeps a study's seed list fixed), its run
    table (with the diagnostics metrics) and what failed to run."""
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    grid = claim_grid(claim, profile, seeds=seeds)  # the one builder of compare, probe and verify (sweeps.grid)
    raw = {"question": claim.question, **claim.resolved(profile), "seeds": seeds}
    spec_file = folder / (f"{profile}.yaml" if look == 0 else f"{profile}-look{look + 1}.yaml")
    # the resolved spec of these seeds: provenance, and `seqbench sweep` runs it again
    spec_file.write_text(
        f"# {claim.path}, profile {profile}, look {look + 1} (written by seqbench verify)\n"
        + yaml.safe_dump(raw, sort_keys=False)
    )
    path = str(spec_file)
    try:
        swept = run_sweep(
            grid.spec,
            study=study,
            source=path,
            out_dir=str(out_dir),
            argv=sweep_argv(path, workers=workers, storage=storage, study=study, out_dir=str(out_dir)),
            workers=workers,
            storage=storage,
        )
    except SpecChanged as e:
        raise UserError(
            f"claim {claim.name}: its seeds or looks changed since study {study} ran (a look's seeds "
            f"are fixed once run); restore them, or pass another --out-dir/--storage ({e})"
        ) from None
    table = add_diagnostic_metrics(swept.table())
    return table, ([f"sweep {study} exit status {swept.status}"] if swept.status else []) + failed_trials(table)


def failed_trials(table: pd.DataFrame) -> list[str]:
    """Trials that failed for a reason other than diverged seeds (an exception, a lost worker); an
    attempt that was retried is not one (its retry's rows say how the configuration ended)."""
    if table.empty or "state" not in table.columns:
        return []
    out = []
    table = outcomes(table)
    for trial, g in table[table["state"] == "FAIL"].groupby("trial"):
        # from the runs' own results, not the reason's text: every seed ran to an end, one or more diverged
        diverged_only = g["status"].isin(RUN_STATUSES).all() and (g["status"] == "diverged").any()
        if not diverged_only:
            out.append(f"trial {trial} failed: {g['fail_reason'].iloc[0] or ''}")
    return out
