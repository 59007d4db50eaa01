"""One statistic per quantity (``bench.core.seed_tests``): compare, the report and verify state a metric's
seeds by the same procedure, checked against scipy and against what the judge would say: an accuracy per
seed (share of seeds ahead, exact interval, exact sign test, "cannot decide" where n cannot), a loss by
its ratio (t on the logs), any other metric by the paired t; tied seeds never a zero-width interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from seqbench.bench.core.seed_tests import (
    BOUNDED,
    LINEAR,
    LOG,
    NO_TEST,
    PAIRED_T,
    RATIO,
    SIGN,
    SIGN_FLIP,
    metric_kind,
    pair_test,
    seeds_to_decide,
    smallest_sign_p,
    summarize,
)
from seqbench.bench.core.stats import Estimate, clopper_pearson
from seqbench.reports import aggregate as A
from seqbench.reports import figures as F
from seqbench.reports.comparisons import comparisons, comparisons_table, ranked
from seqbench.reports.headline import ranked_text
from seqbench.reports.html import paired_section
from seqbench.sweeps.table import Objective
from tests.report_support import model_delay_table

ACC = Objective("val/acc", "maximize")
LOSS = Objective("val/loss", "minimize")


@pytest.mark.parametrize(
    "metric, kind",
    [
        ("val/acc", BOUNDED),
        ("objective:val/acc", BOUNDED),
        ("final.test@400/acc", BOUNDED),
        ("val/exact_match", BOUNDED),
        ("solved", BOUNDED),
        ("val/loss", LOG),
        ("objective:val/mse", LOG),
        ("val/bpc", LOG),
        ("time_exponent", LINEAR),
        ("tokens_per_s", LINEAR),
    ],
)
def test_the_kind_of_a_metric_is_the_judges(metric, kind):
    assert metric_kind(metric) == kind


def test_a_bounded_metric_with_tied_seeds_has_no_zero_width_interval_and_no_t():
    one = summarize("val/acc", [1.0, 1.0, 1.0])
    assert one.form == "tied" and math.isnan(one.lo) and math.isnan(one.hi) and one.fmt() == "1 on all 3 seeds"
    # the pair: every seed ahead by the same 0.75, which a t-test cannot take (zero spread); per seed it is
    # the share of seeds ahead with its exact interval, never [0.75, 0.75]
    r = pair_test("val/acc", [1.0, 1.0, 1.0], [0.25, 0.25, 0.25])
    assert r.test == SIGN and math.isnan(r.effect_size) and math.isnan(r.diff.lo)
    assert (r.share.lo, r.share.hi) == pytest.approx(clopper_pearson(3, 3)) and r.share.hi - r.share.lo > 0.5
    assert r.p == pytest.approx(st.binomtest(3, 3).pvalue) == pytest.approx(0.25)
    # an accuracy is judged per seed even when its seeds spread: the sign test's p, not the paired t's
    spread = pair_test("val/acc", [0.9, 0.95, 0.97], [0.2, 0.3, 0.25])
    assert spread.test == SIGN and spread.p == pytest.approx(0.25)
    assert spread.p != pytest.approx(st.ttest_rel([0.9, 0.95, 0.97], [0.2, 0.3, 0.25]).pvalue)


def test_three_agreeing_seeds_cannot_decide_and_say_so():
    r = pair_test("val/acc", [1.0, 1.0, 0.98], [0.25, 0.22, 0.24])
    assert (r.ahead, r.behind, r.tied, r.n) == (3, 0, 0, 3)
    assert r.best_p == pytest.approx(0.25) and not r.can_decide
    text = r.sentence("transformer vs rnn at task.delay=12", "transformer", "val/acc")
    assert text == (
        "transformer vs rnn at task.delay=12: transformer ahead on 3 of 3 seeds (share [0.292, 1], +0.757 val/acc), "
        "sign test p=0.25: n=3 cannot decide at 5%"
    )
    assert "d=" not in text and "CI" not in text


def test_ten_agreeing_seeds_give_the_sign_tests_p_0002():
    r = pair_test("val/acc", [0.9 + 0.001 * i for i in range(10)], [0.5] * 10)
    assert r.p == pytest.approx(2 * 0.5**10) and r.can_decide and r.undecidable() == ""
    assert "sign test p=0.002" in r.sentence("a vs b", "a", "val/acc") and "cannot decide" not in r.sentence(
        "a vs b", "a", "val/acc"
    )
    assert seeds_to_decide() == 6 and smallest_sign_p(5) == pytest.approx(0.0625) and smallest_sign_p(6) < 0.05


def test_ties_are_counted_as_ties_and_said():
    r = pair_test("val/acc", [1.0, 1.0, 0.9], [1.0, 0.5, 0.95])
    assert (r.ahead, r.behind, r.tied, r.untied) == (1, 1, 1, 2)
    assert r.p == pytest.approx(st.binomtest(1, 2).pvalue) and r.best_p == pytest.approx(0.5)
    assert (r.share.lo, r.share.hi) == pytest.approx(clopper_pearson(1, 3))  # the share over every seed
    text = r.sentence("a vs b", "a", "val/acc")
    assert "ahead on 1 of 3 seeds, 1 tied" in text and "sign test over the 2 untied seeds p=1" in text
    assert text.endswith("too few to decide at 5% (2 of 2 seeds would give p=0.5)")
    same = pair_test("val/acc", [1.0, 1.0], [1.0, 1.0])
    assert same.test == SIGN and same.tied == 2 and math.isnan(same.p)
    assert (
        same.sentence("a vs b", "a", "val/acc")
        == "a vs b: the same val/acc on each of 2 seeds (no seed ahead: nothing to test)"
    )


def test_a_loss_is_compared_by_its_ratio_with_t_on_the_logs():
    a, b = [0.10, 0.12, 0.09, 0.2], [1.0, 1.1, 1.3, 1.0]
    r = pair_test("val/loss", a, b, maximize=False)
    lr = np.log(a) - np.log(b)
    assert r.test == RATIO and r.ratio.mean == pytest.approx(st.gmean(np.divide(a, b)))
    assert r.p == pytest.approx(st.ttest_rel(np.log(a), np.log(b)).pvalue)
    lo, hi = st.t.interval(0.95, 3, loc=lr.mean(), scale=st.sem(lr))
    assert (r.ratio.lo, r.ratio.hi) == (pytest.approx(math.exp(lo)), pytest.approx(math.exp(hi))) and r.ratio.lo > 0
    assert r.ahead == 4 and r.best_p == 0.0 and r.can_decide  # ahead = lower, for a minimised metric
    assert "x0.111 val/loss (geometric mean of the per-seed ratios)" in r.sentence("a vs b", "a", "val/loss")
    # every seed at the same ratio: no spread on the logs, so the exact test
    assert pair_test("val/loss", [0.1, 0.2, 0.3], [1.0, 2.0, 3.0], maximize=False).test == SIGN


def test_another_metric_gets_the_paired_t_with_cohens_d():
    x, y = [0.61, 0.72, 0.58, 0.69, 0.75], [0.52, 0.70, 0.49, 0.60, 0.61]
    r = pair_test("time_exponent", x, y)
    d = np.subtract(x, y)
    assert r.test == PAIRED_T and r.p == pytest.approx(st.ttest_rel(x, y).pvalue)
    assert r.effect_size == pytest.approx(d.mean() / d.std(ddof=1)) and r.diff.lo < d.mean() < r.diff.hi
    assert pair_test("time_exponent", [2.5, 3.5], [2.0, 3.0]).test == SIGN  # the same +0.5 on each: no spread


def test_a_mean_difference_is_tested_as_the_judge_tests_a_mean():
    """Differences on a lattice (+-1 steps, 7 of 8 seeds ahead): whatever ``Estimate.p_value`` does with such
    a mean (exact sign flips where bench.core.stats has them, else t), the pair says the same p."""
    a, b = [1.0] * 7 + [0.0], [0.0] * 7 + [1.0]
    r = pair_test("grid_step", a, b)
    est = Estimate(tuple(np.subtract(a, b)))
    assert r.p == pytest.approx(min(1.0, 2 * min(est.p_value(0.0, "above"), est.p_value(0.0, "below"))))
    flips = bool(getattr(est, "sign_flip", False))
    assert r.test == (SIGN_FLIP if flips else PAIRED_T) and (r.best_p > 0) == flips
    assert ("d=" in r.sentence("a vs b", "a", "grid_step")) == (not flips)  # Cohen's d only beside a t-test
    one = pair_test("val/acc", [0.7, math.nan], [0.5, 0.4])  # a diverged seed leaves one pair
    assert one.test == NO_TEST and one.n == 1
    assert one.sentence("a vs b", "a", "val/acc") == "a vs b: +0.2 val/acc (n=1 shared seed: no interval, no test)"
    with pytest.raises(ValueError, match="equal lengths"):
        pair_test("val/acc", [1.0], [1.0, 0.5])


def test_one_configuration_as_the_judge_states_it():
    assert summarize("val/acc", [0.25, 0.375]).fmt() == "0.312 [0, 1] n=2"  # a t interval kept in [0, 1]
    flags = summarize("solved", [1.0, 0.0, 1.0])
    assert flags.form == "share" and (flags.lo, flags.hi) == pytest.approx(clopper_pearson(2, 3))
    assert flags.fmt().startswith("2/3 seeds at 1 [0.0943, 0.992]")
    loss = summarize("val/loss", [0.1, 0.13, 0.238])
    assert loss.form == "log" and loss.value == pytest.approx(st.gmean([0.1, 0.13, 0.238])) and loss.lo > 0
    assert loss.fmt().startswith("geo-mean 0.146 [")
    assert summarize("val/acc", [0.81]).fmt() == "0.81 (n=1, no interval)"


def _table(values: dict[tuple[str, int], list[float]], metric: str = "val/acc") -> pd.DataFrame:
    return model_delay_table(values, metric)


DEMO = {
    ("rnn", 12): [0.22, 0.2, 0.24],
    ("lstm", 12): [0.99, 1.0, 1.0],
    ("transformer", 12): [1.0, 1.0, 1.0],
    ("rnn", 40): [0.24, 0.24, 0.25],
    ("lstm", 40): [0.5, 0.6, 0.75],
    ("transformer", 40): [1.0, 1.0, 1.0],
}


def test_the_report_never_shows_tied_seeds_as_a_zero_width_interval():
    df = _table(DEMO)
    cells = ranked(df, ACC)["mean [95% CI]"].tolist()
    assert cells[:2] == ["1 on all 3 seeds", "1 on all 3 seeds"] and not any("[1, 1]" in c for c in cells)
    summary = A.summary_table(df, ACC)
    assert set(summary.loc[summary["best mean"] == 1.0, "best form"]) == {"tied"}
    heat = F.fig_heatmap(df, ACC, "param.model.name", "param.task.delay")
    texts = [c for row in heat.data[0].text for c in row]
    assert "1 on all 3 seeds" in texts and not any("[1, 1]" in c for c in texts)
    assert F._error_bars([A.cell_stats(df[df["trial"] == 2], ACC.column)])["array"] == [0.0]  # tied: a bare point


def test_the_demo_comparisons_are_per_seed_and_say_n3_cannot_decide():
    df = _table(DEMO)
    comps = comparisons(df, ACC)
    assert {c.result.test for c in comps} == {SIGN}
    line = next(c.sentence() for c in comps if (c.a, c.b, c.context) == ("transformer", "rnn", (("task.delay", 12),)))
    assert line == (
        "transformer vs rnn at task.delay=12: transformer ahead on 3 of 3 seeds (share [0.292, 1], +0.78 val/acc), "
        "sign test p=0.25: n=3 cannot decide at 5%"
    )
    t = comparisons_table(comps)
    assert list(t.columns[:3]) == ["statement", "test", "measure"]
    assert (t["ci high"] - t["ci low"] > 0).all()  # the share's exact interval is never zero-width
    # 3 seeds, or fewer untied (transformer vs lstm at 12: one untied seed; at 40 delay vs delay: all tied)
    assert list(t["smallest p at n"].fillna(-1)) == pytest.approx([1, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, -1])
    assert "d_z" not in t.columns and (t["p"].dropna() >= 0.25).all()
    text = ranked_text(df, ACC)
    assert "A sign test over 3 seeds cannot decide at 5%: 3 of 3 give p=0.25 at best; 6 untied seeds can." in text
    assert "Best (tied): transformer at every task.delay, val/acc 1 on all 3 seeds." in text
    section = paired_section(df, ACC)
    assert "cannot decide at 5%" in section.caption and "sign test" in section.caption


def test_a_loss_study_compares_ratios_and_ranks_by_geometric_mean():
    df = _table(
        {("rnn", 12): [1.3, 1.35, 1.38], ("lstm", 12): [0.1, 0.2, 0.15], ("transformer", 12): [0.05, 0.02, 0.03]},
        "val/loss",
    )
    comps = comparisons(df, LOSS)
    assert {c.result.test for c in comps} == {RATIO} and comps[0].a == "transformer"
    assert "d=" not in comps[0].sentence() and "paired t on log ratios" in comps[0].sentence()
    assert ranked(df, LOSS)["mean [95% CI]"].iloc[0].startswith("geo-mean 0.0311 [")
