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
    p = paired(X, Y)
    want = (
        f"lstm vs rnn at task.delay=40: {p.diff.mean:+.3g} val/acc, 95% CI [{p.diff.lo:.3g}, {p.diff.hi:.3g}], "
        f"p={p.p_t:.2g} (Wilcoxon p={p.p_wilcoxon:.2g}), d={p.effect_size:.2g}, n=5"
    )
    assert want in md and "task.delay=10 vs 40 at model.name=lstm: +0.2 val/acc on each of n=5" in md
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
