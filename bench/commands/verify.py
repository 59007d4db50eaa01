"""``seqbench verify [CLAIM ...] [--profile quick|paper] [--workers K] [--storage URL] [--out-dir D] [--strict]``.

Every claim (``sweeps/claims/*.yaml``, schema in ``sweeps/claims/schema.py``) is loaded and all of
its profiles checked before anything trains. Then each claim runs (``sweeps/claims/runner.py``): its
seeds look by look, each look's new seeds a study of the ordinary sweep runner (resumable, parallel),
judged after each look at that look's share of alpha 0.05 (``sweeps/claims/looks.py``), stopping at the
first look that decides every rule or finds a failed control. A claim runs only under its registration
(``sweeps/claims/registry.py``, committed beside the claim files): every claim's is checked before anything
trains, a claim changed on seeds a registration judged is refused, and one on fresh seeds is registered.
``kind: cost`` claims measure ``seqbench cost`` once per replicate (cached as JSON;
``sweeps/claims/cost.py``), their looks counted in replicates. This command draws each claim's
figures, prints the table, and writes ``index.html`` and ``verify.md`` to ``<out-dir>/verify/``; each claim's
verdict is also recorded there (``bench/core/verdicts.py``), and verify.md covers every claim recorded.

Exit status: 0 when every claim was judged, whatever the verdicts; 1 when something failed to run
(a claim raised, a trial failed for a reason other than diverged seeds); with ``--strict`` also 1
when a claim fails or is invalid (a control failed).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile, as_profile
from seqbench.bench.core.text import text_table
from seqbench.reports.verify_html import claim_figure, cost_figure, verdict_figure, write_verify
from seqbench.sweeps.claims import runner as claims_runner
from seqbench.sweeps.claims.load import find_claims, load_claim
from seqbench.sweeps.claims.looks import check_decidable
from seqbench.sweeps.claims.registry import check
from seqbench.sweeps.claims.results import ERROR, FAILS, INVALID, ClaimResult, verdict_table
from seqbench.sweeps.claims.schema import Claim, cost_config, sweep_spec
from seqbench.sweeps.coordinator import preflight_specs


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "claims",
        nargs="*",
        help="claim names (file stems in sweeps/claims/) or claim files; default: every shipped claim",
    )
    sp.add_argument(
        "--profile",
        default="quick",
        choices=["quick", "paper"],
        help="quick: 2 CPU cores, ~5 min a claim; paper: the paper's settings (meant for a GPU)",
    )
    sp.add_argument("--workers", type=int, default=1, help="local worker processes per claim's sweep")
    sp.add_argument("--storage", help="Optuna storage URL or journal path (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="root for runs/, the journal and verify/ (default outputs)")
    sp.add_argument("--strict", action="store_true", help="exit 1 when a claim fails")
    sp.add_argument(
        "--plan",
        action="store_true",
        help="print each claim's study, configurations, seeds, looks and an estimate of the time, and run nothing",
    )
    sp.set_defaults(func=cmd_verify)


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` returns: each claim's judged result, the verdict table and the page."""

    results: list[ClaimResult]  # per claim: verdict, rules, controls, table, wall_s, error
    table: pd.DataFrame  # the verdict table printed by the command (one row per rule and control)
    index: Path  # <out_dir>/verify/index.html (verify.md beside it)

    @property
    def ok(self) -> bool:
        """Every claim ran (whatever its verdict)."""
        return not any(r.verdict == ERROR or r.error for r in self.results)


def verify(
    claims: Sequence[str] = (),
    *,
    profile: Profile = "quick",
    workers: int = 1,
    storage: str | None = None,
    out_dir: str | Path = "outputs",
    progress: bool = True,
) -> VerifyResult:
    """Run and judge ``claims`` (names or files; default every shipped claim) at ``profile``: the entry
    behind ``seqbench verify``. Every claim file and profile is checked, and every configuration the claims will
    train is built (``preflight_claims``), before anything trains or any file is written."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    profile = as_profile(profile)  # a notebook's string: the type says quick or paper, this checks it
    loaded = [load_claim(p) for p in find_claims(list(claims))]
    # refused in one line before anything trains: a changed rule on judged seeds, looks that cannot decide
    for c in loaded:
        check_decidable(c, profile, registered=not check(c, profile)[1])
    preflight_claims(loaded, profile)
    out = Path(out_dir)
    results = []
    for i, claim in enumerate(loaded):
        if progress:
            print(f"[verify {i + 1}/{len(loaded)}] {claim.name} ({profile}): {claim.question}", flush=True)
        res = verify_claim(claim, profile, out, workers, storage)
        results.append(res)
        if progress:
            print(
                f"[verify {i + 1}/{len(loaded)}] {claim.name}: {res.verdict_text()} in {res.wall_s:.0f}s"
                + (f"; could not run: {res.error}" if res.error else ""),
                flush=True,
            )
    return VerifyResult(results, verdict_table(results), write_verify(results, out / "verify"))


def preflight_claims(claims: Sequence[Claim], profile: Profile) -> None:
    """Build every configuration the claims will train at ``profile`` (a cost claim: every model it measures),
    before any claim runs, registers or writes a file: one a run would refuse (a plug-in mixer that reads the
    future) refuses the whole verify in one line, instead of a claim judged on failed trials."""
    from seqbench.bench.training.cost import check_models  # torch: `verify --plan/--help` stay light

    preflight_specs([(f"claim {c.name}", sweep_spec(c, profile)) for c in claims if c.kind != "cost"])
    for c in claims:
        if c.kind == "cost":
            try:
                check_models(cost_config(c.resolved(profile)))
            except UserError as e:
                raise e.prefixed(f"claim {c.name}: cost.") from None


def cmd_verify(args: argparse.Namespace) -> int:
    if args.plan:
        from seqbench.bench.commands.verify_plan import plan_text  # why: only --plan reads it (light --help)

        if args.workers < 1:
            raise UserError(f"--workers: must be >= 1 (got {args.workers})")
        print(
            plan_text(
                [load_claim(p) for p in find_claims(list(args.claims))], args.profile, Path(args.out_dir), args.workers
            )
        )
        return 0
    r = verify(args.claims, profile=args.profile, workers=args.workers, storage=args.storage, out_dir=args.out_dir)
    print(format_table(r.table))
    print(f"verify: {', '.join(f'{c.claim.name} {c.verdict_text()}' for c in r.results)} -> {r.index} (+ verify.md)")
    if not r.ok:
        return 1
    return 1 if args.strict and any(c.verdict in (FAILS, INVALID) for c in r.results) else 0


def format_table(t: pd.DataFrame) -> str:
    """The terminal table: claim | source figure | rule | paper | measured (mean [95% CI] n) | needs | verdict;
    a long cell (a best_of pick, the FLOP count beside an exponent) wraps onto the row's next lines."""
    cols = ["claim", "source", "rule", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]
    rows = [[str(v) for v in row] for row in t[cols].itertuples(index=False)]
    lines = [text_table(cols, rows, sep=" | ", rule=True, max_width=70, wrap=True)]
    verdicts = t.drop_duplicates("claim")[["claim", "claim verdict", "wall s"]]
    lines += ["", "claim verdicts: " + ", ".join(f"{c} {v} ({w}s)" for c, v, w in verdicts.itertuples(index=False))]
    return "\n".join(lines)


# -- one claim ----------------------------------------------------------------------------------


def verify_claim(claim: Claim, profile: Profile, out_dir: Path, workers: int, storage: str | None) -> ClaimResult:
    """Run and judge one claim (``sweeps.claims.runner.run_claim``), then draw its figures."""
    res = claims_runner.run_claim(claim, profile, out_dir, workers, storage)
    judged = [*res.controls, *res.rules]
    if res.objective is not None and res.table is not None:
        return replace(res, figure=claim_figure(claim.figure, res.table, res.objective, judged))
    if res.measurement is not None and res.table is not None:
        figs = (verdict_figure(res.table, judged), cost_figure(res.measurement.rows, res.measurement.meta))
        return replace(res, figure=[f for f in figs if f])
    return res
