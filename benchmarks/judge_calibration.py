"""How often the claim judge (``sweeps/claims/judge.py``) says holds or fails when it should say neither.

    python benchmarks/judge_calibration.py                  # calibration and power tables (markdown)
    python benchmarks/judge_calibration.py --reps 4000 --power-reps 0 --seed 1
    python benchmarks/judge_calibration.py --kinds versus     # one kind's rows, as in the full tables

Each rule kind is a rule as a claim writes it and a generator of seed values whose quantity sits
exactly on the rule's threshold (the null boundary): there, holds and fails are both unwarranted, so
their rates are the judge's false-holds and false-fails rates, the most they can be anywhere on the
wrong side (tests are monotone in the effect). The quantity is the one the judge tests: the mean
(Student-t) for continuous metrics, the geometric mean for log-scale ones, and for per-seed rules the
share of seeds past the threshold (a sign test: at the null half the seeds pass). Every rep runs the
claim's looks as ``seqbench verify`` does (judged at each look's spent alpha, stopped at the first
look that decides) through the judge's public entry, ``judge_all``, on a study table like the one
``sweeps.table`` builds. The procedures put several kinds in one claim (Holm over rules and controls)
and count a rep as wrong when any member is. tests/test_judge_calibration.py runs the same kinds at
fewer reps; the tables of docs/claims.md are this script's output.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from seqbench.sweeps.claims.judge import FAILS, HOLDS, decided, judge_all
from seqbench.sweeps.claims.load import parse_claim
from seqbench.sweeps.claims.schema import ALPHA

LOOKS = (3, 5, 8)
MODELS = ("rnn", "gru", "lstm", "tcn")
LRS = (0.001, 0.003, 0.01)
BASE = {"task": {"name": "adding", "length": 8}, "tracking": {"wandb": "off"}, "eval": {"test": False}}
SOURCE = {
    "cite": "calibration",
    "paper": "simulated",
    "where": "-",
    "metric": "-",
    "published": [{"what": "-", "value": 0, "unit": "-"}],
}
Draw = Callable[[np.random.Generator, int, float], dict[tuple[str, float], np.ndarray]]  # NaN = diverged


@dataclass(frozen=True)
class Kind:
    """One rule kind: the rule (where: one configuration, model and lr) and its seeds' values at an effect
    (``null``: on the threshold; ``effects``: where the power table looks, in ``unit``); ``key`` names it
    on the command line (``--kinds``)."""

    key: str
    name: str
    rule: dict[str, Any]
    draw: Draw
    null: float = 0.0
    effects: tuple[float, ...] = ()
    unit: str = "sd"
    baseline: dict[str, float] = field(default_factory=dict)  # metric -> memoryless baseline


def _at(model: str, lr: float = LRS[0]) -> dict[str, Any]:
    return {"model.name": model, "optim.lr": lr}


def _probit(p: float) -> float:
    return float(st.norm.ppf(min(max(p, 1e-12), 1 - 1e-12)))


def _pass_prob_shift(z: np.ndarray, p: float) -> np.ndarray:
    """Standard normal draws shifted so that P(value < 0) = p (a seed passes with probability p)."""
    return z - _probit(p)


# -- the rule kinds --------------------------------------------------------------------------------
def _continuous(rng, n, e):  # mean e (in sd) against "above 0"
    return {("gru", LRS[0]): rng.normal(e, 1.0, n)}


def _log_scale(rng, n, e):  # geometric mean e sd below 0.01 on the log scale
    return {("gru", LRS[0]): np.exp(rng.normal(math.log(0.01) - 0.7 * e, 0.7, n))}


def _near_one(rng, n, p):  # accuracy just under 1, median 0.95 at p = 0.5
    return {("gru", LRS[0]): 1 - 0.05 * np.exp(0.5 * _pass_prob_shift(rng.normal(size=n), p))}


def _near_zero(rng, n, p):  # exact match just above 0, median 0.05 at p = 0.5
    return {("gru", LRS[0]): 0.05 * np.exp(0.5 * _pass_prob_shift(rng.normal(size=n), p))}


def _click_acc(rng, n, p):  # a seed clicks (accuracy 1.0) or stays on the chance plateau (~0.25)
    return {("gru", LRS[0]): np.where(rng.random(n) < p, 1.0, rng.normal(0.25, 0.02, n))}


def _click_loss(rng, n, p):  # a seed clicks (loss ~1% of the baseline) or stays on the baseline plateau
    solved = 0.05 * np.exp(rng.normal(math.log(0.01), 1.0, n))
    return {("gru", LRS[0]): np.where(rng.random(n) < p, solved, 0.05 * (1 + 0.002 * rng.normal(size=n)))}


def _ties(rng, n, p):  # a metric on a coarse lattice: +1 or -1 (mean 2p - 1) against "above 0"
    return {("gru", LRS[0]): np.where(rng.random(n) < p, 1.0, -1.0)}


def _imputed(rng, n, p):  # trains (bpc ~3.7) or diverges (imputed as the unigram baseline 4.8)
    return {("gru", LRS[0]): np.where(rng.random(n) < p, np.exp(rng.normal(math.log(3.7), 0.02, n)), np.nan)}


def _best_of(rng, n, e):  # per seed the best (lowest) of 3 rates; E[log best] = log 0.1 - 0.5 e
    mu = math.log(0.1) + 0.8463 * 0.5 - 0.5 * e  # E[min of 3 standard normals] = -0.8463
    return {("gru", lr): np.exp(rng.normal(mu, 0.5, n)) for lr in LRS}


TRAINED, STUCK = 3.6, 4.78  # val/bpc below / above 0.85 x the unigram baseline (4.08)


def _largest(rng, n, p):  # gru's largest trainable rate is one grid step below rnn's on a share p of seeds
    top = {"rnn": np.full(n, 2), "gru": np.where(rng.random(n) < p, 1, 2)}
    return {(m, lr): np.where(step <= top[m], TRAINED, STUCK) for m in top for step, lr in enumerate(LRS, 1)}


def _paired(rng, n, e):  # gru - rnn ~ N(e, 1) over shared seeds (a seed effect shared by both)
    rnn = rng.normal(0, 1, n)
    return {("rnn", LRS[0]): rnn, ("gru", LRS[0]): rnn + rng.normal(e, 1.0, n)}


def _did(rng, n, e):  # gru - rnn is 3 at both rates (an effect by construction); the interaction ~ N(e, 1)
    a, b, sd = rng.normal(0, 1, n), rng.normal(0, 1, n), 0.5**0.5
    return {
        ("rnn", LRS[0]): a,
        ("gru", LRS[0]): a + 3 + rng.normal(e, sd, n),
        ("rnn", LRS[1]): b,
        ("gru", LRS[1]): b + 3 + rng.normal(0, sd, n),
    }


NC = {"no_control": "calibration: the control is not what is measured"}
PROBS = (0.7, 0.9, 1.0)
SDS = (0.5, 1.0, 2.0)
KINDS = [
    Kind(
        "continuous",
        "continuous (mean, t)",
        {"metric": "score", "where": _at("gru"), "above": 0.0},
        _continuous,
        0.0,
        SDS,
    ),
    Kind(
        "log_scale",
        "log-scale (geo-mean, t on logs)",
        {"metric": "val/mse", "where": _at("gru"), "below": 0.01},
        _log_scale,
        0.0,
        SDS,
    ),
    Kind(
        "near_one",
        "bounded near 1 (accuracy)",
        {"metric": "val/acc", "where": _at("gru"), "above": 0.95},
        _near_one,
        0.5,
        PROBS,
        "P(seed passes)",
    ),
    Kind(
        "near_zero",
        "bounded near 0 (exact match)",
        {"metric": "val/exact_match", "where": _at("gru"), "below": 0.05},
        _near_zero,
        0.5,
        PROBS,
        "P(seed passes)",
    ),
    Kind(
        "click_acc",
        "bimodal: accuracy clicks or plateaus",
        {"metric": "val/acc", "where": _at("gru"), "above": 0.95},
        _click_acc,
        0.5,
        PROBS,
        "P(seed clicks)",
    ),
    Kind(
        "click_loss",
        "bimodal: loss leaves the baseline or not",
        {"metric": "val/loss", "where": _at("gru"), "below": {"baseline": 0.5}},
        _click_loss,
        0.5,
        PROBS,
        "P(seed clicks)",
        {"val/loss": 0.05},
    ),
    Kind(
        "ties",
        "discrete ties (values +-1)",
        {"metric": "score", "where": _at("gru"), "above": 0.0},
        _ties,
        0.5,
        (0.75, 0.9, 1.0),
        "P(+1)",
    ),
    Kind(
        "imputed",
        "diverged and imputed",
        {"metric": "val/bpc", "where": _at("gru"), "below": {"baseline": 0.85}, "diverged": "baseline"},
        _imputed,
        0.5,
        PROBS,
        "P(seed trains)",
        {"val/bpc": 4.8},
    ),
    Kind(
        "best_of",
        "best_of 3 rates (log, t)",
        {
            "metric": "val/loss",
            "where": {"model.name": "gru"},
            "best_of": {"params": ["optim.lr"], "goal": "minimize"},
            "below": 0.1,
        },
        _best_of,
        0.0,
        SDS,
    ),
    Kind(
        "largest",
        "largest: grid step one lower",
        {
            "metric": "val/bpc",
            "where": {"model.name": "gru"},
            "minus": {"model.name": "rnn"},
            "below": -0.5,
            **NC,
            "largest": {"over": "optim.lr", "below": {"baseline": 0.85}},
        },
        _largest,
        0.5,
        PROBS,
        "P(seed one step lower)",
        {"val/bpc": 4.8},
    ),
    Kind(
        "minus",
        "minus: paired difference (t)",
        {"metric": "score", "where": _at("gru"), "minus": _at("rnn"), "above": 0.0, **NC},
        _paired,
        0.0,
        SDS,
    ),
    Kind(
        "versus",
        "versus: difference in differences (t)",
        {
            "metric": "score",
            "where": _at("gru"),
            "minus": _at("rnn"),
            "versus": {"where": _at("gru", LRS[1]), "minus": _at("rnn", LRS[1])},
            "above": 0.0,
            **NC,
        },
        _did,
        0.0,
        SDS,
    ),
]


# -- a study table and the looks --------------------------------------------------------------------
def claim_of(members: list[dict[str, Any]], looks: tuple[int, ...] = LOOKS):
    """A claim whose first member is the control when ``members`` has more than one (the procedures)."""
    named = [{"name": f"m{i}", **m} for i, m in enumerate(members)]
    controls, expect = (named[:1], named[1:]) if len(named) > 1 else ([], named)
    raw = {
        "question": "calibration?",
        "source": SOURCE,
        "figure": "factors",
        "base": BASE,
        "metric": {"name": "val/loss", "goal": "minimize"},
        "looks": list(looks),
        "parameters": {"model.name": {"values": list(MODELS)}, "optim.lr": {"values": list(LRS)}},
        "profiles": {"quick": {}, "paper": {}},
        "expect": expect,
        "controls": controls,
    }
    return parse_claim(raw, "calibration")


def study_table(values: dict[str, dict[tuple[str, float], np.ndarray]], baselines: dict[str, float]) -> pd.DataFrame:
    """metric -> (model, lr) -> per-seed values: one row per run (NaN: a diverged run)."""
    runs: dict[tuple[str, float, int], dict[str, Any]] = {}
    for metric, by_config in values.items():
        for (model, lr), vals in by_config.items():
            for seed, v in enumerate(vals):
                row = runs.setdefault(
                    (model, lr, seed),
                    {
                        "seed": seed,
                        "run_id": f"{model}-{lr}-{seed}",
                        "status": "completed",
                        "param.model.name": model,
                        "param.optim.lr": lr,
                    },
                )
                row["final." + metric] = float(v)
                if math.isnan(v):
                    row["status"] = "diverged"
                if metric in baselines:
                    row["baseline." + metric] = baselines[metric]
    # object strings: pandas' default arrow strings made every selection of a run ~1.5x slower here
    return pd.DataFrame(list(runs.values())).astype({"run_id": object, "status": object, "param.model.name": object})


def look_alphas(looks: tuple[int, ...]) -> list[float]:
    """The alpha verify spends at each look (imported, so this measures the judge as shipped)."""
    try:
        from seqbench.bench.core.stats import look_alphas as spend
    except ImportError:  # a checkout before issue 27: alpha / len(looks) at every look
        return [ALPHA / len(looks)] * len(looks)
    return spend(list(looks), ALPHA)


SWEPT = {"model.name": list(MODELS), "optim.lr": list(LRS)}


Judged = tuple[str, list[str], bool]  # the claim's verdict, each member's (controls first), decided


def sequential(
    claim,
    values: dict[str, dict[tuple[str, float], np.ndarray]],
    baselines: dict[str, float],
    looks: tuple[int, ...],
    seen: dict[bytes, Judged],
) -> tuple[str, list[str]]:
    """The claim verdict and each member's after verify's looks over the seeds' ``values``. A look is a
    function of its seeds' values alone, so ``seen`` keeps each judged look (discrete kinds repeat)."""
    table = None
    for n, alpha in zip(looks, look_alphas(looks)):
        key = n.to_bytes(2, "little") + b"".join(v[:n].tobytes() for by in values.values() for v in by.values())
        if key not in seen:
            table = study_table(values, baselines) if table is None else table
            verdict, rules, controls, _ = judge_all(claim, table[table["seed"] < n], SWEPT, "quick", alpha)
            seen[key] = verdict, [r.verdict for r in [*controls, *rules]], decided(verdict, rules, controls)
        verdict, each, done = seen[key]
        if done:
            break
    return verdict, each


# -- rates --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rates:
    holds: float  # share of reps where some member held (any member, for a procedure)
    fails: float
    reps: int
    claim_holds: float = math.nan

    def se(self, p: float) -> float:
        return math.sqrt(max(p * (1 - p), 1e-12) / self.reps)


def rates(members: list[tuple[Kind, float]], reps: int, seed: int, looks: tuple[int, ...] = LOOKS) -> Rates:
    """Over ``reps`` simulated studies of the claim made of ``members`` (kind, effect), each member on a
    configuration of its own: how often some member held, some member failed, and the claim held."""
    claim = claim_of(
        [_placed(k.rule, i) for i, (k, _) in enumerate(members)] if len(members) > 1 else [members[0][0].rule], looks
    )
    rng = np.random.default_rng(seed)
    baselines = {m: b for k, _ in members for m, b in k.baseline.items()}
    held = failed = claim_held = 0
    seen: dict[bytes, Judged] = {}
    for _ in range(reps):
        values: dict[str, dict[tuple[str, float], np.ndarray]] = {}
        for i, (k, e) in enumerate(members):
            drawn = k.draw(rng, looks[-1], e)
            values.setdefault(k.rule["metric"], {}).update(_moved(drawn, i) if len(members) > 1 else drawn)
        verdict, each = sequential(claim, values, baselines, looks, seen)
        held += HOLDS in each
        failed += FAILS in each
        claim_held += verdict == HOLDS
    return Rates(held / reps, failed / reps, reps, claim_held / reps)


# A procedure gives each member its own model x rate configurations: member i's "gru"/"rnn" become
# two of MODELS, so members never share a run (a member's rate key keeps its meaning).
def _pair_of(i: int) -> dict[str, str]:
    return {"gru": MODELS[(2 * i) % 4], "rnn": MODELS[(2 * i + 1) % 4]}


def _moved(drawn: dict[tuple[str, float], np.ndarray], i: int) -> dict[tuple[str, float], np.ndarray]:
    to = _pair_of(i // 2)
    lr_shift = i % 2  # members 2k and 2k+1 share models but not rates (one-rate kinds only)
    return {(to[m], LRS[(LRS.index(lr) + lr_shift) % 3]): v for (m, lr), v in drawn.items()}


def _placed(rule: dict[str, Any], i: int) -> dict[str, Any]:
    to, shift = _pair_of(i // 2), i % 2
    out = dict(rule)
    for key in ("where", "minus"):
        if key in rule:
            w = dict(rule[key])
            w["model.name"] = to[w["model.name"]]
            if "optim.lr" in w:
                w["optim.lr"] = LRS[(LRS.index(w["optim.lr"]) + shift) % 3]
            out[key] = w
    return out


def kind(name: str) -> Kind:
    return next(k for k in KINDS if k.name.startswith(name))


def kinds_of(text: str) -> list[Kind]:
    """``--kinds near_one,versus``: those kinds, in KINDS' order; SystemExit (one line naming the allowed
    keys) on an unknown or empty one."""
    keys = [k.key for k in KINDS]
    asked = [s.strip() for s in text.split(",")]
    bad = next((s for s in asked if s not in keys), None)
    if bad is not None:
        raise SystemExit(f"error: --kinds: unknown kind {bad!r}; allowed (comma-separated): {', '.join(keys)}")
    return [k for k in KINDS if k.key in asked]


# Procedures: a control and three rules in one claim (Holm over the four, every look); each member on
# configurations of its own (one-rate kinds share a pair of models at different rates; a kind that
# ranges over rates or picks among them gets a pair of its own).
PROCEDURES = {
    "claim of continuous rules": ["continuous", "log-scale", "minus", "best_of"],
    "claim of per-seed rules": ["bimodal: accuracy", "diverged", "largest", "bimodal: loss"],
}


def procedure(name: str) -> list[Kind]:
    return [kind(k) for k in PROCEDURES[name]]


# -- tables ---------------------------------------------------------------------------------------
def calibration_rows(reps: int, seed: int, kinds: list[Kind] | None = None) -> list[list[str]]:
    """Every kind's row and the procedures' (``kinds`` None), else those kinds' rows alone. A kind's
    random stream is fixed by its place in KINDS, so its row is the same in either table."""
    out = []
    for k in kinds or KINDS:
        r = rates([(k, k.null)], reps, seed + KINDS.index(k))
        out.append([k.name, _pct(r.holds, r), _pct(r.fails, r)])
    for j, name in enumerate(PROCEDURES if kinds is None else []):
        at_null = rates([(k, k.null) for k in procedure(name)], reps, seed + 100 + j)
        one_false = rates(
            [(k, k.null if i == 1 else k.effects[-1]) for i, k in enumerate(procedure(name))], reps, seed + 200 + j
        )
        out.append(
            [f"{name}: any member (all at the null)", _pct(at_null.holds, at_null), _pct(at_null.fails, at_null)]
        )
        out.append([f"{name}: the claim holds (one rule at the null)", _pct(one_false.claim_holds, one_false), "-"])
    return out


def power_rows(reps: int, seed: int, kinds: list[Kind] | None = None) -> list[list[str]]:
    out = []
    for k in kinds or KINDS:
        cells = []
        for e in k.effects:
            r = rates([(k, e)], reps, seed + 1000 + KINDS.index(k))
            cells.append(f"{k.unit} {e:g}: {100 * r.holds:.0f}%")
        out.append([k.name, *cells])
    return out


def _pct(p: float, r: Rates) -> str:
    return f"{100 * p:.1f}% ± {100 * r.se(p):.1f}"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000, help="simulated studies per calibration row (default 1000)")
    ap.add_argument("--power-reps", type=int, default=500, help="per power cell (default 500; 0: no power table)")
    ap.add_argument("--seed", type=int, default=0)
    keys = ", ".join(k.key for k in KINDS)
    ap.add_argument(
        "--kinds",
        help=f"only these kinds' rows (comma-separated; no procedures; each row as in the full tables): {keys}",
    )
    args = ap.parse_args()
    kinds = None if args.kinds is None else kinds_of(args.kinds)
    t0 = time.perf_counter()
    alphas = ", ".join(f"{a:.4f}" for a in look_alphas(LOOKS))
    only = "" if kinds is None else f"; only {', '.join(k.key for k in kinds)} (no procedures)"
    print(f"looks {list(LOOKS)}, alpha {ALPHA} spent as {alphas}; {args.reps} reps per row, seed {args.seed}{only}\n")
    print(
        markdown(
            ["rule kind / procedure (at the null)", "false holds", "false fails"],
            calibration_rows(args.reps, args.seed, kinds),
        ),
        flush=True,
    )
    if args.power_reps:
        print(f"\nP(holds) by the last look, {args.power_reps} reps per cell\n")
        rows = power_rows(args.power_reps, args.seed, kinds)
        print(markdown(["rule kind", "small effect", "medium", "large"], rows))
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
