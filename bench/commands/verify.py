"""``seqbench verify [CLAIM ...] [--profile quick|paper] [--workers K] [--storage URL] [--out-dir D] [--strict]``.

Every claim (``sweeps/claims/*.yaml``, schema in ``sweeps/claims/schema.py``) is loaded and all of
its profiles checked before anything trains. Then each claim's sweep runs through the ordinary sweep
entry (``bench.commands.sweep.sweep``: resumable, parallel), look by look: the first look's seeds in
study ``verify-<claim>-<profile>-<spec hash>`` (the hash leaves seeds and looks out, so re-running
continues it and a changed claim starts afresh), each later look's new seeds in
``<study>+s<first>-<last>`` (the runner keeps a study's seed list fixed). After each look every rule
is judged at that look's share of alpha 0.05 (``stats.look_alphas``: O'Brien-Fleming-type spending,
most of it kept for the last look; the shares sum to 0.05, so the stated 95% holds whichever look
stops); verify stops at the first look that decides every rule, or finds a failed control. The seeds
and looks are locked when first judged (``sweeps/claims/lock.py``): changing them afterwards is refused;
fresh seeds start a fresh study. ``kind: cost`` claims run ``seqbench cost`` once per replicate (cached
as JSON), their looks counted in replicates. The table is printed, and ``<out-dir>/verify/`` gets
``index.html`` and ``verify.md``.

Exit status: 0 when every claim was judged, whatever the verdicts; 1 when something failed to run
(a claim raised, a trial failed for a reason other than diverged seeds); with ``--strict`` also 1
when a claim fails or is invalid (a control failed).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import yaml

from seqbench.bench.commands.sweep import sweep
from seqbench.bench.config import build_config
from seqbench.bench.core.artifacts import FINAL, PARAM
from seqbench.bench.core.contract import OutputKind, TaskSpec
from seqbench.bench.core.diagnostics_format import FILENAME, DiagnosticsFormatError, read_diagnostics
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.stats import look_alphas
from seqbench.bench.core.text import text_table
from seqbench.bench.training.cost_config import VOCAB, fit_exponent, model_config
from seqbench.bench.training.flops import forward_macs
from seqbench.reports.table import Objective, build_table, load_study, outcomes, runs_root
from seqbench.reports.verify_html import claim_figure, cost_figure, verdict_figure, write_verify
from seqbench.sweeps.claims.judge import ERROR, FAILS, INVALID, ClaimResult, decided, judge_all, verdict_table
from seqbench.sweeps.claims.lock import lock_path, record, study_for
from seqbench.sweeps.claims.measure import RUN_STATUSES
from seqbench.sweeps.claims.schema import ALPHA, cost_config, find_claims, load_claim, sweep_spec, swept_values
from seqbench.sweeps.claims.schema import MIN_COST_LENGTHS as MIN_FIT_LENGTHS
from seqbench.sweeps.storage import open_storage


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("claims", nargs="*", help="claim names (file stems in sweeps/claims/) or claim files; "
                    "default: every shipped claim")
    sp.add_argument("--profile", default="quick", choices=["quick", "paper"],
                    help="quick: 2 CPU cores, ~5 min a claim; paper: the paper's settings (meant for a GPU)")
    sp.add_argument("--workers", type=int, default=1, help="local worker processes per claim's sweep")
    sp.add_argument("--storage", help="Optuna storage URL or journal path (default <out-dir>/optuna.journal)")
    sp.add_argument("--out-dir", default="outputs", help="root for runs/, the journal and verify/ (default outputs)")
    sp.add_argument("--strict", action="store_true", help="exit 1 when a claim fails")
    sp.add_argument("--plan", action="store_true", help="print each claim's study, configurations, seeds, looks "
                    "and an estimate of the time, and run nothing")
    sp.set_defaults(func=cmd_verify)


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` returns: each claim's judged result, the verdict table and the page."""

    results: list[Any]  # ClaimResult per claim (verdict, rules, controls, table, wall_s, error)
    table: pd.DataFrame  # the verdict table printed by the command (one row per rule and control)
    index: Path  # <out_dir>/verify/index.html (verify.md beside it)

    @property
    def ok(self) -> bool:
        """Every claim ran (whatever its verdict)."""
        return not any(r.verdict == ERROR or r.error for r in self.results)


def verify(claims: Sequence[str] = (), *, profile: str = "quick", workers: int = 1, storage: str | None = None,
           out_dir: str | Path = "outputs", progress: bool = True) -> VerifyResult:
    """Run and judge ``claims`` (names or files; default every shipped claim) at ``profile``: the entry
    behind ``seqbench verify``. Every claim file and profile is checked before anything trains."""
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    loaded = [load_claim(p) for p in find_claims(list(claims))]
    out = Path(out_dir)
    results = []
    for i, claim in enumerate(loaded):
        if progress:
            print(f"[verify {i + 1}/{len(loaded)}] {claim.name} ({profile}): {claim.question}", flush=True)
        res = run_claim(claim, profile, out, workers, storage)
        results.append(res)
        if progress:
            print(f"[verify {i + 1}/{len(loaded)}] {claim.name}: {res.verdict_text()} in {res.wall_s:.0f}s"
                  + (f"; could not run: {res.error}" if res.error else ""), flush=True)
    return VerifyResult(results, verdict_table(results), write_verify(results, out / "verify"))


def cmd_verify(args: argparse.Namespace) -> int:
    if args.plan:
        from seqbench.bench.commands.verify_plan import plan_text

        if args.workers < 1:
            raise UserError(f"--workers: must be >= 1 (got {args.workers})")
        print(plan_text([load_claim(p) for p in find_claims(list(args.claims))], args.profile, Path(args.out_dir),
                        args.workers))
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

def run_claim(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    """Run and judge one claim; an exception becomes an ``error`` result (the other claims still run)."""
    t0 = time.perf_counter()
    try:
        res = (_run_cost if claim.kind == "cost" else _run_sweep)(claim, profile, out_dir, workers, storage)
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001 - one claim that cannot run never stops the others
        res = ClaimResult(claim, profile, ERROR, [], error=f"{type(e).__name__}: {' '.join(str(e).split())}"[:300])
    res.wall_s = time.perf_counter() - t0
    return res


FRESH_SEEDS = "fresh seeds (seeds: values no study of this claim used)"
FRESH_REPLICATES = "another --out-dir (a cost claim's replicates are measured afresh there)"


def _run_sweep(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    """The claim's looks in order: run the next seeds, judge everything so far at the look's spent alpha,
    stop at the first look that decides every rule (or finds a failed control)."""
    spec = sweep_spec(claim, profile)  # every seed's configs built: a bad field fails before training
    seeds = claim.seeds_for(profile)
    looks = claim.looks_for(profile) or [len(seeds)]
    digest = claim.digest(profile)  # leaves seeds and looks out: a change to them meets the lock
    lock = lock_path(out_dir / "verify" / claim.name, profile, digest)
    base = study_for(lock, f"verify-{claim.name}-{profile}-{digest}", seeds[:looks[-1]], looks,
                     f"{claim.name} (profile {profile})", FRESH_SEEDS)
    swept = swept_values(claim, profile)
    tables, errors, prev = [], [], 0
    for k, n in enumerate(looks):
        chunk = seeds[prev:n]  # seeds are only ever appended, in the claim's order
        study = base if k == 0 else f"{base}+s{chunk[0]}-{chunk[-1]}"
        table, err = _run_seeds(claim, profile, out_dir, workers, storage, study, chunk, k)
        tables.append(table)
        errors += err
        table = pd.concat([t for t in tables if not t.empty], ignore_index=True) if any(
            not t.empty for t in tables) else tables[0]
        (verdict, rules, controls, why), done, said = _judge_look(
            claim, table, swept, profile, looks, k, f"n={n}", lambda: f"adding seeds {seeds[n:looks[k + 1]]}")
        record(lock, base, seeds[:looks[-1]], looks)  # judged: from now on these seeds have these looks
        if done or k == len(looks) - 1:
            break
        prev = n
    m = spec.metrics()[0]
    res = ClaimResult(claim, profile, verdict, rules, study=base, table=table, controls=controls, why=why,
                      looks=said,
                      figure=claim_figure(claim.figure, table, Objective(m.name, m.goal), [*controls, *rules]))
    if errors:
        res.error = "; ".join(errors)[:300]
    return res


def _judge_look(claim, table: pd.DataFrame, swept: dict[str, list[Any]], profile: str, looks: list[int], k: int,
                n: str, next_step) -> tuple[tuple, bool, str]:
    """Judge everything measured after look ``k`` at the alpha that look spends (``stats.look_alphas``: the
    shares sum to ALPHA, so 95% overall whichever look stops); print the look's verdict and, if undecided
    with looks left, ``next_step()``. Returns judge_all's (verdict, rules, controls, why), whether it
    decided, and the verdict line's "decided at look k of K, ..." (or "undecided after ...")."""
    alpha = look_alphas(looks, ALPHA)[k]
    judged = judge_all(claim, table, swept, profile, alpha)
    done = decided(*judged[:3])
    look = f"look {k + 1} of {len(looks)}, {n}, alpha {alpha:.3g}"
    if len(looks) > 1:
        last = done or k == len(looks) - 1
        print(f"[verify] {claim.name}: {look}: {judged[0]}" + ("" if last else f"; undecided, {next_step()}"),
              flush=True)
    return judged, done, ("decided at " if done else "undecided after ") + look


def _run_seeds(claim, profile: str, out_dir: Path, workers: int, storage: str | None, study: str,
               seeds: list[int], look: int) -> tuple[pd.DataFrame, list[str]]:
    """One look's new seeds as a sweep of their own (the runner keeps a study's seed list fixed) and its table."""
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    # the resolved spec of these seeds: provenance, and what `seqbench sweep` reads
    spec_path = folder / (f"{profile}.yaml" if look == 0 else f"{profile}-look{look + 1}.yaml")
    spec_path.write_text(f"# {claim.path}, profile {profile}, look {look + 1} (written by seqbench verify)\n"
                         + yaml.safe_dump({"question": claim.question, **claim.resolved(profile), "seeds": seeds},
                                          sort_keys=False))
    try:
        status = sweep(spec_path, study=study, workers=workers, out_dir=out_dir, storage=storage).status
    except UserError as e:
        if "started from a different spec" not in str(e):
            raise
        raise UserError(f"claim {claim.name}: its seeds or looks changed since study {study} ran (a look's seeds "
                        f"are fixed once run); restore them, or pass another --out-dir/--storage ({e})") from None
    st = load_study(study, open_storage(storage, out_dir))
    table = add_diagnostic_metrics(build_table(st, runs_root(st, out_dir)))
    errors = ([f"sweep {study} exit status {status}"] if status else []) + failed_trials(table)
    return table, errors


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


def add_diagnostic_metrics(table: pd.DataFrame) -> pd.DataFrame:
    """Per run, from diagnostics.json (records in step order):

    - ``diag/decay_rate@first`` / ``@last``: fitted decay of ||dL/dx_t|| per step of distance at the
      first and last record with a through-time measurement (``ThroughTime.decay_rate``);
    - ``diag/last_layer_grad_norm@first``: the gradient norm of the last numbered layer group
      (``...layers.<k>``, largest k) at the first record (Xiong et al. 2020 Fig. 3: at initialisation);
    - ``diag/global_grad_norm@first`` / ``@max``: the global gradient norm (before clipping) at the first
      record and its largest over training (a non-finite norm counts as inf: it exploded)."""
    if table.empty or "run_dir" not in table.columns:
        return table
    cols: dict[str, list[float]] = {k: [] for k in DIAG_METRICS}
    for run_dir in table["run_dir"]:
        recs = []
        path = Path(str(run_dir)) / FILENAME
        if run_dir and path.is_file():
            try:
                recs = list(read_diagnostics(path).records)
            except (OSError, DiagnosticsFormatError):
                recs = []
        for k, v in diag_metrics(recs).items():
            cols[k].append(v)
    present = {k: v for k, v in cols.items() if not all(pd.isna(v))}
    return table.assign(**present) if present else table


DIAG_METRICS = ("diag/decay_rate@first", "diag/decay_rate@last", "diag/last_layer_grad_norm@first",
                "diag/global_grad_norm@first", "diag/global_grad_norm@max")
_LAYER = re.compile(r"\.layers\.(\d+)$")


def diag_metrics(recs: list[Any]) -> dict[str, float]:
    """The per-run diagnostics metrics of :func:`add_diagnostic_metrics` from its records (NaN when absent)."""
    nan = float("nan")
    tt = [r for r in recs if r.through_time is not None]
    out = {"diag/decay_rate@first": tt[0].through_time.decay_rate() if tt else nan,
           "diag/decay_rate@last": tt[-1].through_time.decay_rate() if tt else nan,
           "diag/last_layer_grad_norm@first": nan, "diag/global_grad_norm@first": nan,
           "diag/global_grad_norm@max": nan}
    if recs:
        layers = [(int(m.group(1)), v) for k, v in recs[0].layer_grad_norm.items() if (m := _LAYER.search(k))]
        if layers:
            out["diag/last_layer_grad_norm@first"] = float(max(layers)[1])
        norms = [r.global_grad_norm if math.isfinite(r.global_grad_norm) else math.inf for r in recs]
        out["diag/global_grad_norm@first"] = float(recs[0].global_grad_norm)
        out["diag/global_grad_norm@max"] = float(max(norms))
    return out


def _run_cost(claim, profile: str, out_dir: Path, workers: int, storage: str | None):
    """The claim's replicates of ``seqbench cost`` (each cached as JSON), look by look as a sweep claim's
    seeds: judged at the look's spent alpha after each look, stopping at the first that decides. Rows = model x
    replicate with the fitted exponents, the FLOP count's at the same lengths and the fixed-cost share
    (see :func:`cost_metrics`)."""
    # the measurement's floor (torch), here so that `verify --help` imports none of it
    from seqbench.bench.training.cost import measure_cost

    cfg = cost_config(claim.resolved(profile))
    looks = claim.looks_for(profile) or [claim.replicates_for(profile)]
    swept, digest = swept_values(claim, profile), claim.digest(profile)  # the digest leaves replicates out
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    lock, replicates = lock_path(folder, profile, digest), list(range(looks[-1]))
    study = study_for(lock, f"{profile}-{digest}-cost", replicates, looks, f"{claim.name} (profile {profile})",
                      FRESH_REPLICATES)  # the replicates' cache names; refused when the looks changed
    rows, results = [], []
    for k, n in enumerate(looks):
        for rep in range(len(results), n):
            path = folder / f"{profile}-{digest}-cost-{rep}.json"
            if path.is_file():
                result = json.loads(path.read_text())
            else:
                result = measure_cost(cfg)
                path.write_text(json.dumps(result, indent=1) + "\n")
            results.append(result)
            for model in result["summary"]:
                rows.append({"trial": rep, "state": "COMPLETE", "seed": rep, "run_id": f"cost-{rep}-{model}",
                             "run_dir": "", "status": "completed", PARAM + "model.name": model,
                             **{FINAL + key: v for key, v in cost_metrics(model, result["rows"], cfg).items()}})
        table = pd.DataFrame(rows)
        table = table.astype({c: float for c in table.columns if c.startswith(FINAL)})
        (verdict, rules, controls, why), done, said = _judge_look(
            claim, table, swept, profile, looks, k, f"n={n} replicates", lambda: f"measuring up to {looks[k + 1]}")
        record(lock, study, replicates, looks)
        if done or k == len(looks) - 1:
            break
    verdict_fig = verdict_figure(table, [*controls, *rules])
    return ClaimResult(claim, profile, verdict, rules, study=str(folder), table=table, controls=controls, why=why,
                       looks=said,
                       figure=[f for f in (verdict_fig, cost_figure(results[0]["rows"], results[0]["meta"])) if f])


def cost_metrics(model: str, rows: list[dict[str, Any]], cfg) -> dict[str, float]:
    """One replicate of one model: ``time_exponent`` (all lengths), ``time_exponent_upper`` (upper
    half), ``time_exponent_long`` (the 4 longest), the same fits of the FLOP count
    (``flops_exponent``, ``flops_exponent_long``: what ``bench.training.flops.forward_macs`` predicts at
    the same lengths and d_model), ``fixed_share`` (median step time at the shortest length / at the
    longest: near 0 when the fixed per-step cost is negligible) and ``memory_exponent``. A fit over
    fewer than 4 measured lengths is NaN (not judged), not a slope through 2 points."""
    ok = sorted((r for r in rows if r["model"] == model and r["status"] == "ok" and r.get("time_ms")),
                key=lambda r: r["length"])
    ts = [r["length"] for r in ok]
    nan = float("nan")

    def fit(lengths: list[int], values: list[float]) -> float:
        e = fit_exponent(lengths, values) if len(lengths) >= MIN_FIT_LENGTHS else None
        return nan if e is None else e

    times = [r["time_ms"] for r in ok]
    macs = flops_per_length(model, ts, cfg)
    upper = len(ts) // 2
    k = MIN_FIT_LENGTHS
    mem = [(r["length"], r["peak_mem_mib"]) for r in ok if r.get("peak_mem_mib")]
    return {"time_exponent": fit(ts, times), "time_exponent_upper": fit(ts[upper:], times[upper:]),
            "time_exponent_long": fit(ts[-k:], times[-k:]),
            "flops_exponent": fit(ts, macs) if macs else nan,
            "flops_exponent_long": fit(ts[-k:], macs[-k:]) if macs else nan,
            "fixed_share": times[0] / times[-1] if len(times) >= 2 else nan,
            "memory_exponent": fit([m[0] for m in mem], [m[1] for m in mem])}


def flops_per_length(model: str, lengths: list[int], cfg) -> list[float] | None:
    """Forward multiply-accumulates of ``model`` at each length, at the cost measurement's width, depth
    and token input (``bench.training.cost.VOCAB``); None where the model has no FLOP counter."""
    spec = TaskSpec(OutputKind.TOKENS, n_classes=VOCAB, causal=True, vocab_size=VOCAB)
    out = []
    for T in lengths:
        m = model_config(model, cfg.d_model, cfg.n_layers, T)  # as the cost measurement builds it
        # the adding task only supplies seq_len() = T here; spec says tokens, as the timed step has
        macs = forward_macs(build_config({"task": {"name": "adding", "length": T}, "model": m}), spec)
        if macs is None:
            return None
        out.append(float(macs))
    return out
