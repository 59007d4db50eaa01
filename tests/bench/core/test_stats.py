"""Intervals and paired tests against scipy on known data; a study with 1 and with 5 seeds in the report."""

from __future__ import annotations

import math

import numpy as np
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState
from scipy import stats as st

from seqbench.bench.core.stats import mean_ci, paired
from seqbench.reports.build import build_report
from seqbench.reports.comparisons import comparisons, ranked
from seqbench.sweeps.table import Objective, build_table
from tests.report_support import add_trial, journal_storage, new_study, write_run

ACC = Objective("val/acc", "maximize")
X = [0.61, 0.72, 0.58, 0.69, 0.75]
Y = [0.52, 0.70, 0.49, 0.60, 0.61]


def test_mean_ci_is_scipys_student_t_interval():
    ci = mean_ci(X)
    lo, hi = st.t.interval(0.95, df=4, loc=np.mean(X), scale=st.sem(X))
    assert (ci.mean, ci.lo, ci.hi, ci.n) == (pytest.approx(np.mean(X)), pytest.approx(lo), pytest.approx(hi), 5)
    assert ci.std == pytest.approx(np.std(X, ddof=1))
    # by hand: mean 0.67, sd sqrt(0.021/4) = 0.07246, t_{0.975,4} = 2.7764 -> half width 0.08997
    assert ci.half_width == pytest.approx(0.08997, abs=1e-5)
    assert ci.fmt() == "0.67 [0.58, 0.76] n=5"
    assert mean_ci([0.5, float("nan"), None]).fmt() == "0.5 (n=1, no interval)"
    assert math.isnan(mean_ci([0.5]).lo) and mean_ci([]).n == 0


def test_equal_values_summed_differently_have_no_spread():
    a = [0.1 + 0.2, 0.3, 0.3]  # 0.30000000000000004 and 0.3: rounding, not a difference between seeds
    ci = mean_ci(a)
    assert ci.std == 0.0 and ci.lo == ci.hi == pytest.approx(0.3)
    r = paired([0.5 + 0.175, 0.505 + 0.175], [0.5, 0.505])
    assert r.diff.std == 0.0 and math.isnan(r.p_t) and math.isnan(r.effect_size)


def test_paired_matches_scipy():
    r = paired(X, Y)
    d = np.subtract(X, Y)
    assert r.n == 5 and r.diff.mean == pytest.approx(d.mean())
    assert r.p_t == pytest.approx(st.ttest_rel(X, Y).pvalue)
    assert r.p_wilcoxon == pytest.approx(st.wilcoxon(d).pvalue)
    assert r.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    lo, hi = st.t.interval(0.95, df=4, loc=d.mean(), scale=st.sem(d))
    assert (r.diff.lo, r.diff.hi) == (pytest.approx(lo), pytest.approx(hi))
    one = paired([0.7], [0.5])  # one pair: a difference, no test
    assert one.n == 1 and one.diff.mean == pytest.approx(0.2) and math.isnan(one.p_t) and math.isnan(one.p_wilcoxon)
    with pytest.raises(ValueError, match="equal lengths"):
        paired([1.0], [1.0, 2.0])


def _study(tmp_path, seeds: list[int]):
    """model.name (lstm, rnn) x task.delay (10, 40); lstm = X, rnn = Y at delay 40; known per-seed values."""
    out = tmp_path / "outputs"
    storage = journal_storage(tmp_path / "j.journal")
    params = {"model.name": {"values": ["lstm", "rnn"]}, "task.delay": {"values": [10, 40]}}
    study = new_study(storage, f"s{len(seeds)}", out, params, "lstm or rnn?")
    dists = {"model.name": CategoricalDistribution(["lstm", "rnn"]), "task.delay": IntDistribution(10, 40)}
    for m, vals in (("lstm", X), ("rnn", Y)):
        for delay in (10, 40):
            per_seed = [v + (0.2 if delay == 10 else 0.0) for v in vals][: len(seeds)]
            run_ids = []
            for s, v in zip(seeds, per_seed):
                rid = f"{m}-{delay}-s{s}"
                write_run(out, rid, final={"val/acc": v}, baseline={"val/acc": 0.25}, seed=s, model=m)
                run_ids.append(rid)
            add_trial(
                study,
                {"model.name": m, "task.delay": delay},
                dists,
                state=TrialState.COMPLETE,
                values=[float(np.mean(per_seed))],
                attrs={"run_ids": run_ids, "seeds": seeds, "per_seed": per_seed},
            )
    return study, out


def test_five_seeds_report_intervals_and_paired_statements(tmp_path):
    study, out = _study(tmp_path, [0, 1, 2, 3, 4])
    rep = build_report(study, "journal", tmp_path / "rep", out)
    md = (rep.folder / "summary.md").read_text()
    assert f"| model.name | lstm | {mean_ci([x + 0.2 for x in X]).fmt()} |" in md
    # val/acc is bounded: judged per seed as verify judges it (bench.core.seed_tests), not by a paired t
    d = np.subtract(X, Y).mean()
    want = (
        f"lstm vs rnn at task.delay=40: lstm ahead on 5 of 5 seeds (share [0.478, 1], {d:+.3g} val/acc), "
        "sign test p=0.062: n=5 cannot decide at 5%"
    )
    assert (
        want in md
        and (
            "task.delay=10 vs 40 at model.name=lstm: task.delay=10 ahead on 5 of 5 seeds (share [0.478, 1], "
            "+0.2 val/acc on each), sign test p=0.062: n=5 cannot decide at 5%"
        )
        in md
    )
    comps = comparisons(build_table(study, out / "runs"), ACC)
    assert len(comps) == 4  # model at each delay, delay at each model
    top = ranked(build_table(study, out / "runs"), ACC)
    assert list(top["rank"]) == [1, 2, 3, 4] and top["mean [95% CI]"].iloc[0] == mean_ci([x + 0.2 for x in X]).fmt()


def test_one_seed_report_says_n1(tmp_path):
    study, out = _study(tmp_path, [0])
    rep = build_report(study, "journal", tmp_path / "rep", out)
    md = (rep.folder / "summary.md").read_text()
    assert "| model.name | lstm | 0.81 (n=1, no interval) |" in md
    assert "lstm vs rnn at task.delay=40: +0.09 val/acc (n=1 shared seed: no interval, no test)" in md
    heat = [f for t, f in _items(rep) if t == "heatmap"][0]
    assert any("n=1, no interval" in cell for row in heat.data[0].text for cell in row)


def _items(rep):
    from seqbench.reports.diagnostics import load_diagnostics
    from seqbench.reports.html import sections
    from seqbench.reports.table import load_curves

    secs = sections(rep.info, rep.table, load_curves(rep.table), load_diagnostics(rep.table))
    return [item for s in secs for item in s.items]


def test_many_levels_are_compared_with_the_best_few_levels_pairwise():
    import pandas as pd

    rows = [
        {
            "trial": lv,
            "state": "COMPLETE",
            "run_id": f"r{lv}-{s}",
            "seed": s,
            "diverged": False,
            "param.task.delay": lv,
            "objective:val/acc": 0.9 - 0.01 * lv + 0.003 * s * (lv == 30),
        }
        for lv in (10, 20, 30, 40)
        for s in range(3)
    ]
    df = pd.DataFrame(rows)
    four = comparisons(df, ACC)
    assert [(c.a, c.b) for c in four] == [(10, 20), (10, 30), (10, 40)]  # each level against the best
    assert four[0].result.diff.mean == pytest.approx(0.1)  # 10 minus 20, seed by seed
    three = comparisons(df[df["param.task.delay"] < 40], ACC)
    assert [(c.a, c.b) for c in three] == [(10, 20), (10, 30), (20, 30)]  # every pair
    lower = comparisons(df, Objective("val/acc", "minimize"))
    assert lower[0].a == 40 and lower[0].result.diff.mean < 0  # the better (lower) level first


# -- few-seed judging (sweeps/claims/judge.py) ---------------------------------------------------
def test_estimates_match_scipy_on_their_scale():
    from seqbench.bench.core.stats import Estimate

    mse = [0.1, 0.13, 0.238]
    log = Estimate(tuple(mse), "log").interval()
    lo, hi = st.t.interval(0.95, 2, loc=np.mean(np.log(mse)), scale=st.sem(np.log(mse)))
    assert (log.lo, log.hi) == (pytest.approx(math.exp(lo)), pytest.approx(math.exp(hi))) and log.lo > 0
    assert Estimate(tuple(mse), "log").p_value(0.3, "below") == pytest.approx(
        st.ttest_1samp(np.log(mse), math.log(0.3), alternative="less").pvalue
    )
    clipped = Estimate(tuple(mse), "linear", (0.0, math.inf)).interval()
    assert clipped.lo == 0.0 and clipped.hi == pytest.approx(mean_ci(mse).hi)  # t reaches below 0: clipped
    rate = Estimate((1.0, 1.0, 0.0, 1.0), "rate")
    ci = st.binomtest(3, 4).proportion_ci(confidence_level=0.9, method="exact")
    assert (rate.interval(0.9).lo, rate.interval(0.9).hi) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert rate.p_value(0.2, "above") == pytest.approx(st.binomtest(3, 4, 0.2, alternative="greater").pvalue)
    ci95 = st.binomtest(3, 4).proportion_ci(method="exact")
    assert rate.interval().fmt() == f"3/4 seeds [{ci95.low:.3g}, {ci95.high:.3g}] n=4"
    same = Estimate((0.5, 0.5, 0.5))  # no spread among 3 seeds is no test, not certainty (it was p = 0 and 1)
    assert same.tied and same.p_value(0.4, "above") == 1.0 and same.p_value(0.4, "below") == 1.0
    assert Estimate((0.5, 0.5, 0.5 + 1e-15)).tied and not Estimate((0.5, 0.5, 0.51)).tied
    assert Estimate((0.3, 0.3), "log").tied and not Estimate((1.0, 1.0, 0.0), "rate").tied
    # the same seeds judged per seed: an exact sign test says 3 of 3 is p = 1/8, nowhere near certain
    assert Estimate((1.0, 1.0, 1.0), "rate").p_value(0.5, "above") == pytest.approx(0.125)
    with pytest.raises(ValueError, match="positive values"):
        Estimate((0.0, 0.1), "log")


def test_clopper_pearson_from_beta_quantiles_is_scipys_exact_interval():
    from seqbench.bench.core.stats import clopper_pearson

    for n, k, level in [(3, 3, 0.95), (8, 8, 0.95), (8, 0, 0.99), (5, 2, 1 - 0.0014), (1, 0, 0.95), (12, 7, 0.9)]:
        ci = st.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
        assert clopper_pearson(k, n, level) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_holm_matches_the_textbook_step_down():
    from seqbench.bench.core.stats import holm, holm_divisors

    # Holm 1979 by hand: sorted 0.01, 0.03, 0.04 -> 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_divisors([0.01, 0.04, 0.03]) == [3, 1, 2]
    p = holm([0.2, math.nan, 0.01])
    assert p[0] == pytest.approx(0.2) and math.isnan(p[1]) and p[2] == pytest.approx(0.02)  # NaN not counted


def test_alpha_is_spent_over_looks_obrien_fleming_type_most_of_it_at_the_last():
    from seqbench.bench.core.stats import look_alphas, obrien_fleming_spent

    # Lan-DeMets O'Brien-Fleming-type spending 2 - 2 Phi(z_0.975 / sqrt(t)), by hand at t = 3/8 and 5/8
    assert obrien_fleming_spent(3 / 8, 0.05) == pytest.approx(2 * st.norm.sf(1.959964 / math.sqrt(3 / 8)))
    assert obrien_fleming_spent(1.0, 0.05) == pytest.approx(0.05)
    spent = look_alphas([3, 5, 8], 0.05)
    assert spent == pytest.approx([0.001372, 0.011798, 0.036830], abs=2e-6) and sum(spent) == pytest.approx(0.05)
    assert spent[-1] > 2 * 0.05 / 3  # the last look keeps most of alpha (Bonferroni gave 0.0167 to each)
    assert look_alphas([5], 0.05) == pytest.approx([0.05])  # one look spends all of it
    assert look_alphas([5, 10], 0.05)[1] > look_alphas([3, 5, 8], 0.05)[2]
    with pytest.raises(ValueError, match="increasing"):
        look_alphas([5, 3], 0.05)


# -- the sign-flip test of a mean whose seeds tie (issue 38) -------------------------------------
def _flips(d: list[float]) -> np.ndarray:
    """Every pattern of signs on |d|, enumerated by hand: the sums of the one-sample sign-flip test."""
    n = len(d)
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    return signs @ np.abs(np.asarray(d, dtype=float))


def test_a_mean_whose_seeds_tie_gets_the_exact_sign_flip_test_scipy_enumerates():
    from seqbench.bench.core.stats import Estimate

    # 7 of 8 seeds at +1, one at -1, "above 0": t says p = 0.01 (anti-conservative on a lattice); the exact
    # test counts the 1 + 8 of 256 sign patterns whose sum reaches the observed 6
    ties = Estimate((1.0,) * 7 + (-1.0,))
    assert ties.sign_flip and not ties.tied
    assert ties.p_value(0.0, "above") == pytest.approx(9 / 256)
    assert st.ttest_1samp([1.0] * 7 + [-1.0], 0.0, alternative="greater").pvalue == pytest.approx(0.00997, abs=1e-4)
    assert ties.p_value(0.0, "below") == pytest.approx(np.mean(_flips([1.0] * 7 + [-1.0]) <= 6))  # 255/256
    # by hand over every pattern, and as scipy's one-sample permutation test, on a lattice with a threshold
    acc = (0.5, 0.5, 1.0, 0.5, 1.0)  # an accuracy over 2 examples: a lattice
    for t, side in [(0.6, "above"), (0.9, "below"), (0.5, "above")]:
        d = [a - t for a in acc]
        by_hand = np.mean(_flips(d) >= sum(d) - 1e-12) if side == "above" else np.mean(_flips(d) <= sum(d) + 1e-12)
        scipy = st.permutation_test(
            (np.array(d),), np.sum, permutation_type="samples", n_resamples=np.inf,
            alternative="greater" if side == "above" else "less",
        ).pvalue  # fmt: skip
        assert Estimate(acc, "linear", (0.0, 1.0)).p_value(t, side) == pytest.approx(by_hand) == pytest.approx(scipy)
    # a log-scale mean flips the signs of log(value / threshold)
    lat = (0.01, 0.01, 0.1, 0.01)
    d = np.log(lat) - math.log(0.05)
    assert Estimate(lat, "log").p_value(0.05, "below") == pytest.approx(np.mean(_flips(list(d)) <= d.sum() + 1e-12))


def test_the_sign_flip_test_only_where_values_tie_and_not_all_and_few_seeds():
    from seqbench.bench.core.stats import EXACT_FLIPS, Estimate

    x = (0.61, 0.72, 0.58, 0.69, 0.75)  # continuous: Student-t as before
    e = Estimate(x)
    assert not e.sign_flip and e.p_value(0.6, "above") == pytest.approx(
        st.ttest_1samp(x, 0.6, alternative="greater").pvalue
    )
    # a lattice: at most n/2 distinct values; one coincidental tie among continuous seeds keeps t
    assert Estimate((0.05, 0.06, 0.04, 0.045, 0.05), "log").sign_flip is False
    assert Estimate((1.0, 1.0, 1.0, 1.0, 0.0)).sign_flip and Estimate((2.0, 1.0, 2.0, 1.0)).sign_flip
    assert not Estimate((1.0, 1.0, -1.0)).sign_flip  # 3 seeds, 2 values: t, which cannot decide them either
    same = Estimate((1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0))  # every seed tied: still untested, not 2^-8
    assert same.tied and not same.sign_flip and same.p_value(0.0, "above") == 1.0
    assert not Estimate((1.0, 1.0, 0.0), "rate").sign_flip
    many = Estimate((1.0, -1.0) * ((EXACT_FLIPS + 2) // 2))  # beyond 16 seeds the t-test, its normal limit
    assert many.n > EXACT_FLIPS and not many.sign_flip
    assert many.p_value(0.0, "above") == pytest.approx(st.ttest_1samp(many.values, 0.0, alternative="greater").pvalue)
    big = Estimate((1.0,) * (EXACT_FLIPS - 1) + (-1.0,))  # 16 seeds: 2^16 patterns, exact
    assert big.sign_flip and big.p_value(0.0, "above") == pytest.approx((1 + EXACT_FLIPS) / 2**EXACT_FLIPS)


def test_the_tested_interval_holds_exactly_the_thresholds_the_sign_flip_test_keeps():
    from seqbench.bench.core.stats import Estimate, sign_flip_interval

    rng = np.random.default_rng(3)
    for n, level in [(6, 0.95), (8, 0.95), (8, 1 - 0.0368), (10, 0.9), (12, 0.99)]:
        x = rng.integers(-2, 4, n).astype(float)  # a lattice: values tie
        lo, hi = sign_flip_interval(x, level)
        a = (1 - level) / 2
        for t in np.linspace(x.min() - 1, x.max() + 1, 97) + 1e-7:  # off the subset means' lattice
            d = x - t
            kept = np.mean(_flips(list(d)) >= d.sum()) > a and np.mean(_flips(list(d)) <= d.sum()) > a
            assert kept == (lo <= t <= hi), (n, level, t, lo, hi)
    # up to 5 seeds no threshold is rejected at 95% (p >= 1/32 > 0.025 each side): unbounded, clipped to the range
    acc = Estimate((0.5, 0.5, 1.0, 0.5, 1.0), "linear", (0.0, 1.0))
    assert (acc.tested_interval().lo, acc.tested_interval().hi) == (0.0, 1.0)
    assert sign_flip_interval(np.array([1.0, 1.0, -1.0]), 0.95) == (-math.inf, math.inf)
    cont = Estimate((0.61, 0.72, 0.58, 0.69, 0.75))  # continuous: the Student-t interval
    assert cont.tested_interval() == cont.interval()
    ties = Estimate((1.0,) * 7 + (-1.0,))  # 7 of 8 at +1: p = 9/256 > 0.025 for "above 0", so 0 stays inside
    assert (ties.tested_interval().lo, ties.tested_interval().hi) == (0.0, 1.0) and ties.interval().lo > 0.15
    log = Estimate((0.01, 0.01, 0.1, 0.01, 0.1, 0.01), "log").tested_interval()
    assert log.scale == "log" and log.lo == pytest.approx(0.01) and log.hi == pytest.approx(0.1)
