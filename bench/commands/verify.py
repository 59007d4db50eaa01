"""``seqbench verify [CLAIM ...] [--profile quick|paper] [--workers K] [--storage URL] [--out-dir D] [--strict]``.

Every claim (``sweeps/claims/*.yaml``, schema in ``sweeps/claims/schema.py``) is loaded and all of
its profiles checked before anything trains. Then each claim's sweep runs through the ordinary sweep
command (``seqbench sweep``: resumable, parallel; study ``verify-<claim>-<profile>-<spec hash>``, so
re-running continues it and a changed claim starts afresh), or ``kind: cost`` claims run ``seqbench
cost`` once per replicate (cached as JSON). The rules are judged (``sweeps/claims/judge.py``), the
table is printed, and ``<out-dir>/verify/`` gets ``index.html`` and ``verify.md``.

Exit status: 0 when every claim was judged, whatever the verdicts; 1 when something failed to run
(a claim raised, a trial failed for a reason other than diverged seeds); with ``--strict`` also 1
when a claim fails.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from seqbench.bench.core.artifacts import FINAL, PARAM
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import text_table

_DIVERGED_ONLY = re.compile(r"^\d+/\d+ seeds diverged")  # the runner's fail_reason when seeds only diverged


def register(sub: Any) -> None:
    sp = sub.add_parser("verify", help="run the shipped claims (papers, textbooks) and judge them: holds / fails / "
                        "inconclusive")
    sp.add_argument("claims", nargs="*", help="claim names (file stems in sweeps/claims/) or claim files; "
                    "default: every shipped claim")
    sp.add_argument("--profile", default="quick", choices=["quick", "paper"],
                    help="quick: 2 CPU cores, ~5 min a claim; paper: the paper's settings (meant for a GPU)")
    sp.add_argument("--workers", type=int, default=1, help="local worker processes per claim's sweep")
    sp.add_argument("--storage", help="Optuna storage URL or journal path (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="root for runs/, the journal and verify/ (default outputs)")
    sp.add_argument("--strict", action="store_true", help="exit 1 when a claim fails")
    sp.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from seqbench.reports.verify_html import write_verify
    from seqbench.sweeps.claims.judge import ERROR, FAILS, verdict_table
    from seqbench.sweeps.claims.schema import find_claims, load_claim

    if args.workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {args.workers})")
    claims = [load_claim(p) for p in find_claims(args.claims)]  # every file and profile checked first
    out_dir = Path(args.out_dir)
    results = []
    for i, claim in enumerate(claims):
        print(f"[verify {i + 1}/{len(claims)}] {claim.name} ({args.profile}): {claim.question}", flush=True)
        results.append(run_claim(claim, args.profile, out_dir, args.workers, args.storage))
        res = results[-1]
        print(f"[verify {i + 1}/{len(claims)}] {claim.name}: {res.verdict} in {res.wall_s:.0f}s"
              + (f"; could not run: {res.error}" if res.error else ""), flush=True)
    table = verdict_table(results)
    print(format_table(table))
    index = write_verify(results, out_dir / "verify")
    print(f"verify: {', '.join(f'{r.claim.name} {r.verdict}' for r in results)} -> {index} (+ verify.md)")
    if any(r.verdict == ERROR or r.error for r in results):
        return 1
    return 1 if args.strict and any(r.verdict == FAILS for r in results) else 0


def format_table(t: pd.DataFrame) -> str:
    """The terminal table: claim | source figure | rule | paper | measured (mean [95% CI] n) | needs | verdict."""
    cols = ["claim", "source", "rule", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]
    rows = [[str(v) for v in row] for row in t[cols].itertuples(index=False)]
    lines = [text_table(cols, rows, sep=" | ", rule=True, max_width=70)]
    verdicts = t.drop_duplicates("claim")
    lines += ["", "claim verdicts: " + ", ".join(f"{c} {v} ({w}s)" for c, v, w in
                                                 verdicts[["claim", "claim verdict", "wall s"]].itertuples(index=False))]
    return "\n".join(lines)


# -- one claim ----------------------------------------------------------------------------------

def run_claim(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    """Run and judge one claim; an exception becomes an ``error`` result (the other claims still run)."""
    from seqbench.sweeps.claims.judge import ERROR, ClaimResult

    t0 = time.perf_counter()
    try:
        res = (_run_cost if claim.kind == "cost" else _run_sweep)(claim, profile, out_dir, workers, storage)
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - one claim that cannot run never stops the others
        res = ClaimResult(claim, profile, ERROR, [], error=f"{type(e).__name__}: {' '.join(str(e).split())}"[:300])
    res.wall_s = time.perf_counter() - t0
    return res


def _run_sweep(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    from seqbench.reports.table import Objective, build_table, load_study, runs_root
    from seqbench.reports.verify_html import claim_figure
    from seqbench.sweeps.claims.judge import ClaimResult, judge
    from seqbench.sweeps.claims.schema import sweep_spec, swept_values
    from seqbench.bench.commands.sweep import sweep
    from seqbench.sweeps.storage import open_storage

    spec = sweep_spec(claim, profile)
    study = f"verify-{claim.name}-{profile}-{claim.digest(profile)}"
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / f"{profile}.yaml"  # the resolved spec: provenance, and what `seqbench sweep` reads
    spec_path.write_text(f"# {claim.path}, profile {profile} (written by seqbench verify)\n"
                         + yaml.safe_dump({"question": claim.question, **claim.resolved(profile)}, sort_keys=False))
    status = sweep(spec_path, study=study, workers=workers, out_dir=out_dir, storage=storage).status
    st = load_study(study, open_storage(storage, out_dir))
    table = add_diagnostic_metrics(build_table(st, runs_root(st, out_dir)))
    verdict, rules = judge(claim, table, swept_values(claim, profile), profile)
    m = spec.metrics()[0]
    res = ClaimResult(claim, profile, verdict, rules, study=study, table=table,
                      figure=claim_figure(claim.figure, table, Objective(m.name, m.goal)))
    broken = failed_trials(table)
    if status or broken:
        res.error = "; ".join(([f"sweep exit status {status}"] if status else []) + broken)[:300]
    return res


def failed_trials(table: pd.DataFrame) -> list[str]:
    """Trials that failed for a reason other than diverged seeds (an exception, a lost worker)."""
    if table.empty or "state" not in table.columns:
        return []
    out = []
    for trial, g in table[table["state"] == "FAIL"].groupby("trial"):
        why = str(g["fail_reason"].iloc[0] or "")
        if not _DIVERGED_ONLY.match(why):
            out.append(f"trial {trial} failed: {why}")
    return out


def add_diagnostic_metrics(table: pd.DataFrame) -> pd.DataFrame:
    """Per run, from diagnostics.json: ``diag/decay_rate@first`` and ``@last`` (fitted decay of
    ||dL/dx_t|| per step of distance at the first and last record; see ``ThroughTime.decay_rate``)."""
    from seqbench.bench.core.diagnostics_format import FILENAME, DiagnosticsFormatError, read_diagnostics

    if table.empty or "run_dir" not in table.columns:
        return table
    first, last = [], []
    for run_dir in table["run_dir"]:
        recs = []
        path = Path(str(run_dir)) / FILENAME
        if run_dir and path.is_file():
            try:
                recs = [r for r in read_diagnostics(path).records if r.through_time is not None]
            except (OSError, DiagnosticsFormatError):
                recs = []
        first.append(recs[0].through_time.decay_rate() if recs else float("nan"))
        last.append(recs[-1].through_time.decay_rate() if recs else float("nan"))
    if all(pd.isna(first)):
        return table
    return table.assign(**{"diag/decay_rate@first": first, "diag/decay_rate@last": last})


def _run_cost(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    """``replicates`` cost sweeps (each cached as JSON); rows = model x replicate with the fitted exponents."""
    from seqbench.bench.training.cost import sweep
    from seqbench.reports.verify_html import cost_figure
    from seqbench.sweeps.claims.judge import ClaimResult, judge
    from seqbench.sweeps.claims.schema import cost_config, swept_values

    resolved = claim.resolved(profile)
    cfg = cost_config(resolved)
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    rows, results = [], []
    exponents = ("time_exponent", "time_exponent_upper", "memory_exponent")
    for rep in range(int(resolved.get("replicates", 3))):
        path = folder / f"{profile}-{claim.digest(profile)}-cost-{rep}.json"
        if path.is_file():
            result = json.loads(path.read_text())
        else:
            result = sweep(cfg)
            path.write_text(json.dumps(result, indent=1) + "\n")
        results.append(result)
        for model, s in result["summary"].items():
            rows.append({"trial": rep, "state": "COMPLETE", "seed": rep, "run_id": f"cost-{rep}-{model}",
                         "run_dir": "", "status": "completed", PARAM + "model.name": model,
                         **{FINAL + k: s[k] for k in exponents}})
    table = pd.DataFrame(rows).astype({FINAL + k: float for k in exponents})
    verdict, rules = judge(claim, table, swept_values(claim, profile), profile)
    return ClaimResult(claim, profile, verdict, rules, study=str(folder), table=table,
                       figure=cost_figure(results[0]["rows"], results[0]["meta"]))
