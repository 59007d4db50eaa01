"""How often the claim judge (``sweeps/claims/judge.py``) says holds or fails when it should say neither.

    python benchmarks/judge_calibration.py                  # calibration and power tables (markdown)
    python benchmarks/judge_calibration.py --reps 4000 --power-reps 0 --seed 1
    python benchmarks/judge_calibration.py --kinds versus     # one kind's rows, as in the full tables
    python benchmarks/judge_calibration.py --power-reps 0 --broken-reps 0   # the calibration table alone

Each rule kind is a rule as a claim writes it and a generator of seed values whose quantity sits
exactly on the rule's threshold (the null boundary): there, holds and fails are both unwarranted, so
their rates are the judge's false-holds and false-fails rates, the most they can be anywhere on the
wrong side (tests are monotone in the effect). The quantity is the one the judge tests: the mean
(Student-t; exact sign flips where the seeds take few values) for continuous metrics, the geometric
mean for log-scale ones, and for per-seed rules the share of seeds past the threshold (a sign test: at
the null half the seeds pass). Every rep runs the
claim's looks as ``seqbench verify`` does (judged at each look's spent alpha, stopped at the first
look that decides) through the judge's public entry, ``judge_all``, on a study table like the one
``sweeps.table`` builds. The procedures put several kinds in one claim (Holm over rules and controls)
and count a rep as wrong when any member is. A verdict at the null is wrong whether it says holds or
fails, so the rate that is bounded is the two together ("wrong"): alpha is the chance of any verdict
there, not of each. Broken judges (``BROKEN``: the real judge with one safeguard patched out) must
exceed the same bound on the kinds that safeguard protects: evidence that the check bites.
tests/sweeps/claims/test_judge_calibration.py runs the same rows (same reps and streams); the tables of
docs/claims.md are this script's output.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from seqbench.bench.core import stats
from seqbench.bench.training.cost_config import fit_exponent
from seqbench.sweeps.claims import judge, measure
from seqbench.sweeps.claims.cost import CostRow, cost_table
from seqbench.sweeps.claims.judge import decided, judge_all
from seqbench.sweeps.claims.load import parse_claim
from seqbench.sweeps.claims.results import FAILS, HOLDS
from seqbench.sweeps.claims.schema import ALPHA

LOOKS = (3, 5, 8)
COST_LOOKS = (5, 10, 15)  # the shipped cost claims' looks, in replicates of the whole measurement
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
    cost: bool = False  # a kind: cost claim: replicates of the cost measurement, judged as sweeps/claims/cost.py does
    looks: tuple[int, ...] = LOOKS
    reps_scale: int = 1  # x the reps of a row: a kind of few distinct tables is judged once per table (``seen``)


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


def _band(rng, n, p):  # a loss inside [0.9, 1.1] x the baseline (0.05) on a share p of seeds, else outside
    half = _probit((1 + p) / 2)  # |z| < half with probability p
    return {("gru", LRS[0]): 0.05 * (1 + 0.1 * rng.normal(size=n) / half)}


PAIRED_BEST_SD = 0.5 * 0.7480 * math.sqrt(2)  # sd of a difference of two bests of 3 (sd of a min of 3: 0.748)


def _best_of_minus(rng, n, e):  # per seed and side the best (lowest) of 3 rates; gru's best e sd below rnn's
    seed = rng.normal(0, 0.3, n)  # shared by every run of a seed: the pairing removes it
    shift = {"gru": -e * PAIRED_BEST_SD, "rnn": 0.0}
    return {(m, lr): np.exp(math.log(0.1) + seed + shift[m] + rng.normal(0, 0.5, n)) for m in shift for lr in LRS}


ACC_SPREAD = 50  # Beta(m k, (1 - m) k): sd sqrt(m (1 - m) / (k + 1)), 0.042 at m = 0.9
ACC_SD = math.sqrt(0.9 * 0.1 / (ACC_SPREAD + 1))


def _by_mean(rng, n, e):  # accuracies that spread smoothly inside (0, 1) (Beta), mean 0.9 + e sd, against 0.9
    m = 0.9 + e * ACC_SD
    return {("gru", LRS[0]): rng.beta(m * ACC_SPREAD, (1 - m) * ACC_SPREAD, n)}


COST_LENGTHS = (512, 1024, 2048, 4096)  # the 4 longest of the shipped cost claims: time_exponent_long's fit
TIME_NOISE = 0.1  # sd of log step time at one length (replicate and length alike)
EXPONENT_SD = TIME_NOISE / math.sqrt(sum((math.log(t) - np.mean(np.log(COST_LENGTHS))) ** 2 for t in COST_LENGTHS))


def _cost(rng, n, e):  # per replicate the slope fitted to step times whose exponent is e sd inside 1.2
    k = 1.2 - e * EXPONENT_SD
    times = np.exp(k * np.log(COST_LENGTHS) + rng.normal(0, TIME_NOISE, (n, len(COST_LENGTHS))))
    return {("rnn", LRS[0]): np.array([fit_exponent(COST_LENGTHS, list(t)) for t in times])}


def _lattice(rng, n, e):  # integers, round(N(e, 1)): ~4-5 distinct values over 8 seeds, so t or sign flips
    return {("gru", LRS[0]): np.round(rng.normal(e, 1.0, n))}


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
        reps_scale=10,
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
        reps_scale=10,
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
    Kind(
        "between",
        "between: at the baseline, a per-seed band",
        {"metric": "val/loss", "where": _at("gru"), "between": [{"baseline": 0.9}, {"baseline": 1.1}], **NC},
        _band,
        0.5,
        PROBS,
        "P(seed in the band)",
        {"val/loss": 0.05},
    ),
    Kind(
        "best_of_minus",
        "best_of 3 rates, minus: each side its own best (log ratio, t)",
        {
            "metric": "val/loss",
            "where": {"model.name": "gru"},
            "minus": {"model.name": "rnn"},
            "best_of": {"params": ["optim.lr"], "goal": "minimize"},
            "scale": "log",
            "below": 1.0,
            **NC,
        },
        _best_of_minus,
        0.0,
        SDS,
    ),
    Kind(
        "by_mean",
        "by_mean: a bounded accuracy judged by its mean (t)",
        {
            "metric": "val/acc",
            "where": _at("gru"),
            "above": 0.9,
            "by_mean": "calibration: the seeds spread smoothly well inside (0, 1)",
        },
        _by_mean,
        0.0,
        SDS,
    ),
    Kind(
        "cost",
        "cost: time exponent per replicate in a band (t)",
        {"metric": "time_exponent_long", "where": {"model.name": "rnn"}, "between": [0.8, 1.2]},
        _cost,
        0.0,
        SDS,
        cost=True,
        looks=COST_LOOKS,
    ),
    Kind(
        "lattice",
        "integer values: a lattice (t or sign flips)",
        {"metric": "score", "where": _at("gru"), "above": 0.0},
        _lattice,
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


COST_MODELS = ("rnn", "lstm", "transformer")
COST_SWEPT = {"model.name": list(COST_MODELS)}


def cost_claim(rule: dict[str, Any], looks: tuple[int, ...] = COST_LOOKS):
    """A ``kind: cost`` claim of one rule, as complexity_exponents states its bands (looks in replicates)."""
    raw = {
        "question": "calibration?",
        "kind": "cost",
        "source": SOURCE,
        "figure": "cost",
        "cost": {"models": list(COST_MODELS), "lengths": [256, *COST_LENGTHS], "d_model": 32},
        "profiles": {"quick": {"looks": list(looks)}, "paper": {"looks": list(looks)}},
        "expect": [{"name": "m0", **rule}],
    }
    return parse_claim(raw, "calibration")


def cost_study_table(
    values: dict[str, dict[tuple[str, float], np.ndarray]], baselines: dict[str, float]
) -> pd.DataFrame:
    """metric -> (model, _) -> per-replicate values: the table sweeps/claims/cost.py judges (``cost_table`` of one
    ``CostRow`` per model and replicate, the replicate standing where a seed does)."""
    assert not baselines  # a cost measurement has no memoryless baseline
    by_model: dict[tuple[str, int], dict[str, float]] = {}
    for metric, by_config in values.items():
        for (model, _), vals in by_config.items():
            for rep, v in enumerate(vals):
                by_model.setdefault((model, rep), {})[metric] = float(v)
    return cost_table([CostRow(model, rep, metrics) for (model, rep), metrics in by_model.items()])


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
    cost: bool = False,
) -> tuple[str, list[str]]:
    """The claim verdict and each member's after verify's looks over the seeds' ``values`` (``cost``: the
    replicates of a cost claim). A look is a function of its seeds' values alone, so ``seen`` keeps each
    judged look (discrete kinds repeat)."""
    table = None
    tabulate, swept = (cost_study_table, COST_SWEPT) if cost else (study_table, SWEPT)
    for n, alpha in zip(looks, look_alphas(looks)):
        key = n.to_bytes(2, "little") + b"".join(v[:n].tobytes() for by in values.values() for v in by.values())
        if key not in seen:
            table = tabulate(values, baselines) if table is None else table
            verdict, rules, controls, _ = judge_all(claim, table[table["seed"] < n], swept, "quick", alpha)
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
    wrong: float = math.nan  # share of reps where some member held or some member failed: the bounded rate

    def se(self, p: float) -> float:
        return math.sqrt(max(p * (1 - p), 1e-12) / self.reps)


def bound(reps: int, alpha: float = ALPHA) -> float:
    """The most a wrong-verdict rate measured over ``reps`` studies may be: alpha plus three Monte-Carlo
    standard errors at alpha (0.0707 at 1000 reps; a judge wrong 5% of the time exceeds it once in ~700)."""
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def rates(members: list[tuple[Kind, float]], reps: int, seed: int, looks: tuple[int, ...] | None = None) -> Rates:
    """Over ``reps`` simulated studies of the claim made of ``members`` (kind, effect), each member on a
    configuration of its own: how often some member held, some member failed, some member did either (a
    wrong verdict at the null), and the claim held. ``looks``: the first member's kind's by default."""
    cost = members[0][0].cost
    looks = looks or members[0][0].looks
    if cost:
        assert len(members) == 1, "a cost kind is judged alone (its claim has no sweep to share)"
        claim = cost_claim(members[0][0].rule, looks)
    else:
        claim = claim_of(
            [_placed(k.rule, i) for i, (k, _) in enumerate(members)] if len(members) > 1 else [members[0][0].rule],
            looks,
        )
    rng = np.random.default_rng(seed)
    baselines = {m: b for k, _ in members for m, b in k.baseline.items()}
    held = failed = wrong = claim_held = 0
    seen: dict[bytes, Judged] = {}
    for _ in range(reps):
        values: dict[str, dict[tuple[str, float], np.ndarray]] = {}
        for i, (k, e) in enumerate(members):
            drawn = k.draw(rng, looks[-1], e)
            values.setdefault(k.rule["metric"], {}).update(_moved(drawn, i) if len(members) > 1 else drawn)
        verdict, each = sequential(claim, values, baselines, looks, seen, cost)
        held += HOLDS in each
        failed += FAILS in each
        wrong += HOLDS in each or FAILS in each
        claim_held += verdict == HOLDS
    return Rates(held / reps, failed / reps, reps, claim_held / reps, wrong / reps)


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


# -- broken judges: the real judge with one safeguard patched out ----------------------------------------
Patch = Callable[[Any, str, Any], None]  # setattr(target, name, value): pytest's monkeypatch.setattr, or patched()'s


def _no_doubling(patch: Patch) -> None:
    """Each side tested at the whole alpha: p_alone = min(p_holds, p_fails), and Holm over those, where the
    judge doubles the smaller one-sided p (``judge._test``, ``judge.judge_all``) so each side gets alpha / 2."""
    real_test, real_holm = judge._test, judge.holm

    def one_sided(res, *args):
        out = real_test(res, *args)
        if out.estimate is not None:
            out.p_alone = out.p_adjusted = min(out.p_holds, out.p_fails)
        return out

    patch(judge, "_test", one_sided)
    patch(judge, "holm", lambda ps: real_holm([p / 2 for p in ps]))  # judge_all passes 2 * min(...)


def _no_spending(patch: Patch) -> None:
    """The whole alpha at every look (``stats.look_alphas`` spends it over the looks)."""
    patch(stats, "look_alphas", lambda looks, alpha: [alpha] * len(looks))


def _ties_certain(patch: Patch) -> None:
    """Seeds that all measured the same value are certain (a t-test on zero spread: p = 0 on their side, 1 on
    the other), where the judge leaves them untested (p = 1 both ways)."""
    real = stats.Estimate.p_value

    def p_value(self, threshold, side):
        if self.scale != "rate" and self.n >= 2 and self.tied:
            v = self.values[0]
            return 0.0 if (v < threshold if side == "below" else v > threshold) else 1.0
        return real(self, threshold, side)

    patch(stats.Estimate, "p_value", p_value)


def _by_mean(patch: Patch) -> None:
    """Every rule judged by its mean (t-tests on seeds that click or stay on a plateau), where the judge
    judges a bounded metric, a baseline multiple or imputed seeds per seed (``measure.per_seed_why``)."""
    assert judge.per_seed_why is measure.per_seed_why  # what _quantities calls
    patch(judge, "per_seed_why", lambda rule: "")


def _no_sign_flips(patch: Patch) -> None:
    """Student-t on lattice values too (the judge before issue 38), where ``Estimate.sign_flip`` flips signs."""
    patch(stats.Estimate, "sign_flip", property(lambda self: False))


@dataclass(frozen=True)
class Broken:
    """A judge with one safeguard patched out, and the kinds (keys) whose rows it should push past the bound."""

    key: str
    name: str
    patch: Callable[[Patch], None]
    kinds: tuple[str, ...]


BROKEN = [
    Broken("no_doubling", "no two-sided doubling (each side at alpha)", _no_doubling, ("continuous",)),
    Broken("no_spending", "no spending over looks (alpha at every look)", _no_spending, ("continuous",)),
    Broken("ties_certain", "tied seeds certain (p = 0 on zero spread)", _ties_certain, ("ties",)),
    Broken("by_mean", "click-like seeds judged by their mean (t)", _by_mean, ("click_acc", "click_loss")),
    Broken("no_sign_flips", "t-tests on lattice values (no sign flips)", _no_sign_flips, ("ties",)),
]


@contextmanager
def patched(broken: Broken) -> Iterator[None]:
    """The judge with ``broken``'s patch applied, restored after (pytest's monkeypatch does this in the tests)."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(target: Any, name: str, value: Any) -> None:
        saved.append((target, name, getattr(target, name)))
        setattr(target, name, value)

    try:
        broken.patch(patch)
        yield
    finally:
        for target, name, value in reversed(saved):
            setattr(target, name, value)


def by_key(key: str) -> Kind:
    return next(k for k in KINDS if k.key == key)


def kind_rates(k: Kind, reps: int, seed: int = 0) -> Rates:
    """A kind's row at its null (``reps`` x its ``reps_scale`` studies): the stream of its place in KINDS, so
    a broken judge meets the very studies the real judge's row judged."""
    return rates([(k, k.null)], reps * k.reps_scale, seed + KINDS.index(k))


# -- tables ---------------------------------------------------------------------------------------
def _row(name: str, r: Rates, reps: int | None = None) -> list[str]:
    """The row's cells; a row of more studies than the table's ``reps`` says so (its bound is tighter)."""
    named = name if reps is None or r.reps == reps else f"{name}, {r.reps} studies"
    return [named, _pct(r.holds, r), _pct(r.fails, r), _pct(r.wrong, r)]


def calibration_rows(reps: int, seed: int, kinds: list[Kind] | None = None) -> list[list[str]]:
    """Every kind's row and the procedures' (``kinds`` None), else those kinds' rows alone. A kind's
    random stream is fixed by its place in KINDS, so its row is the same in either table."""
    out = [_row(k.name, kind_rates(k, reps, seed), reps) for k in kinds or KINDS]
    for j, name in enumerate(PROCEDURES if kinds is None else []):
        at_null = rates([(k, k.null) for k in procedure(name)], reps, seed + 100 + j)
        one_false = rates(
            [(k, k.null if i == 1 else k.effects[-1]) for i, k in enumerate(procedure(name))], reps, seed + 200 + j
        )
        out.append(_row(f"{name}: any member (all at the null)", at_null))
        out.append(
            [f"{name}: the claim holds (one rule at the null)", _pct(one_false.claim_holds, one_false), "-", "-"]
        )
    return out


def broken_rows(reps: int, seed: int) -> list[list[str]]:
    """Each broken judge on the kinds it should fail: its wrong rate beside the real judge's bound."""
    out = []
    for b in BROKEN:
        for key in b.kinds:
            k = by_key(key)
            with patched(b):
                r = kind_rates(k, reps, seed)
            verdict = "exceeds" if r.wrong > bound(r.reps) else "WITHIN"
            out.append([b.name, _row(k.name, r, reps)[0], _pct(r.wrong, r), f"{verdict} {100 * bound(r.reps):.2f}%"])
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
    ap.add_argument(
        "--broken-reps", type=int, default=1000, help="per broken judge's row (default 1000; 0: no broken judges)"
    )
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
    print(
        f"looks {list(LOOKS)} (cost: {list(COST_LOOKS)} replicates), alpha {ALPHA} spent as {alphas}; "
        f"{args.reps} reps per row, seed {args.seed}{only}; wrong = held or failed, bound alpha + 3 SE = "
        f"{100 * bound(args.reps):.2f}%\n"
    )
    print(
        markdown(
            ["rule kind / procedure (at the null)", "false holds", "false fails", "wrong (either)"],
            calibration_rows(args.reps, args.seed, kinds),
        ),
        flush=True,
    )
    if args.broken_reps and kinds is None:
        print(f"\nBroken judges at the null, {args.broken_reps} reps per row (the same studies as the rows above)\n")
        print(
            markdown(["broken judge", "rule kind", "wrong (either)", "bound"], broken_rows(args.broken_reps, args.seed))
        )
    print(f"\n{time.perf_counter() - t0:.0f} s", flush=True)
    if args.power_reps:
        print(f"\nP(holds) by the last look, {args.power_reps} reps per cell\n")
        rows = power_rows(args.power_reps, args.seed, kinds)
        print(markdown(["rule kind", "small effect", "medium", "large"], rows))
        print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
