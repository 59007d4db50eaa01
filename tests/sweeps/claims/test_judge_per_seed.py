"""The claim judge on per-seed outcomes (fabricated seed tables): the exact binomial bound on the share of
seeds, solved flags, ratios per seed, an exploded seed as a value, and a swept null selected."""

from __future__ import annotations

import math

import pytest
from scipy import stats as st

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge_rule
from seqbench.sweeps.claims.results import FAILS, HOLDS, INCONCLUSIVE
from seqbench.sweeps.claims.schema import Rule
from tests.sweeps.claims.judge_support import GRU_LEARNS, SWEPT, _scores, claim, eight, table


# -- per-seed outcomes: exact binomial -----------------------------------------------------------
def test_a_bimodal_outcome_is_judged_per_seed_with_the_exact_binomial_bound():
    # 4 of 5 seeds solved it, one never trained: the t interval of the mean MSE is wide and straddles,
    # the share of seeds that solved it has an exact Clopper-Pearson interval
    mse = [2e-5, 3e-5, 0.17, 1e-5, 2e-5]
    t = table({"gru": mse, "rnn": [0.17] * 5})
    on_mean = judge_rule(
        Rule.model_validate({"name": "m", "where": {"model.name": "gru"}, "metric": "val/mse", "below": 0.01}), t, SWEPT
    )
    assert on_mean.verdict == INCONCLUSIVE
    rate = judge_rule(
        Rule.model_validate(
            {
                "name": "r",
                "where": {"model.name": "gru"},
                "metric": "val/mse",
                "success": {"below": 0.01},
                "above": 0.25,
            }
        ),
        t,
        SWEPT,
    )
    ci = st.binomtest(4, 5).proportion_ci(confidence_level=0.95, method="exact")
    assert (rate.interval.mean, rate.interval.lo, rate.interval.hi) == (
        0.8,
        pytest.approx(ci.low),
        pytest.approx(ci.high),
    )
    assert rate.verdict == HOLDS and ci.low > 0.25 and rate.interval.fmt().startswith("4/5 seeds")
    too_much = judge_rule(
        Rule.model_validate(
            {"name": "r", "where": {"model.name": "gru"}, "metric": "val/mse", "success": {"below": 0.01}, "above": 0.5}
        ),
        t,
        SWEPT,
    )
    assert too_much.verdict == INCONCLUSIVE  # 4/5 cannot show a rate above one half: lower bound 0.28


def test_the_solved_flag_is_a_per_seed_outcome():
    t = table({"gru": [True] * 8, "rnn": [False] * 8})
    solved = judge_rule(
        Rule.model_validate({"name": "s", "where": {"model.name": "gru"}, "metric": "solved", "above": 0.5}), t, SWEPT
    )
    assert solved.verdict == HOLDS and solved.interval.lo == pytest.approx(0.025 ** (1 / 8))
    unsolved = judge_rule(
        Rule.model_validate({"name": "s", "where": {"model.name": "rnn"}, "metric": "solved", "above": 0.5}), t, SWEPT
    )
    assert unsolved.verdict == FAILS and unsolved.interval.hi < 0.5
    from seqbench.reports.verify_html import verdict_figure

    titles = [a.text for a in verdict_figure(t, [solved, unsolved]).layout.annotations]
    assert titles == ["share of seeds solved"]


def test_success_on_a_ratio_judges_each_seeds_ratio_and_shows_a_share_of_seeds():
    """scale: log on a minus: rule pairs seeds as ratios; success: then asks each seed's ratio to pass, and
    the estimate is a share of seeds (never exponentiated as if it were a log ratio)."""
    rule = {
        "name": "r",
        "where": {"model.name": "gru"},
        "minus": {"model.name": "rnn"},
        "metric": "score",
        "scale": "log",
        "success": {"below": 0.64},
        "above": 0.5,
        "no_control": "test",
    }
    t = _scores({"gru": eight(0.5, 0.55, 0.45), "rnn": [1.0] * 8})
    r = judge_rule(Rule.model_validate(rule), t, SWEPT)
    assert r.ratio and not r.log_ratio and r.cut == {"below": pytest.approx(math.log(0.64))}
    assert r.verdict == HOLDS and r.measured().startswith("8/8 seeds") and r.interval.hi == 1.0
    assert r.threshold_text() == "share of seeds with ratio of score < 0.64: > 0.5"
    from seqbench.reports.verify_html import verdict_figure

    fig = verdict_figure(t, [r])
    share = [a.text for a in fig.layout.annotations].index("share of seeds with ratio of score < 0.64")
    assert fig.layout[f"yaxis{share + 1 if share else ''}"].type != "log"
    mean = judge_rule(Rule.model_validate({**rule, "success": None, "above": None, "below": 0.64}), t, SWEPT)
    assert mean.log_ratio and mean.measured().startswith("ratio 0.5")  # the geometric mean ratio, judged by t


def test_an_accuracy_of_1_on_every_seed_is_a_count_of_seeds_not_certainty():
    """Issue 27: 5 seeds at accuracy 1.0 were a tied mean, p = 0, holds. Accuracy is bounded (a seed
    clicks or stays on a plateau), so it is judged per seed: 5 of 5 is p = 1/32 one-sided, undecided at
    95% two-sided; 8 of 8 holds. A claim that says why a mean fits (by_mean:) gets the t-test, and tied
    seeds leave it untested rather than certain."""
    acc = {"name": "a", "where": {"model.name": "gru"}, "metric": "val/acc", "above": 0.95}
    five = judge_rule(Rule.model_validate(acc), table({"gru": [1.0] * 5, "rnn": [0.2] * 5}, "val/acc"), SWEPT)
    assert five.verdict == INCONCLUSIVE and five.p_alone == pytest.approx(2 / 32)
    assert five.per_seed.startswith("val/acc is bounded") and five.cut == {"above": 0.95}
    assert five.threshold_text() == "share of seeds with val/acc > 0.95: > 0.5"
    eight = judge_rule(Rule.model_validate(acc), table({"gru": [1.0] * 8, "rnn": [0.2] * 8}, "val/acc"), SWEPT)
    assert eight.verdict == HOLDS and eight.p_alone == pytest.approx(2 / 256)
    from seqbench.reports.verify_html import verdict_figure

    titles = [
        a.text
        for a in verdict_figure(table({"gru": [1.0] * 8, "rnn": [0.2] * 8}, "val/acc"), [eight]).layout.annotations
    ]
    assert titles == ["share of seeds with val/acc > 0.95"]
    by_mean = judge_rule(
        Rule.model_validate({**acc, "by_mean": "a test"}), table({"gru": [1.0] * 5, "rnn": [0.2] * 5}, "val/acc"), SWEPT
    )
    assert by_mean.verdict == INCONCLUSIVE and by_mean.estimate.tied and "zero spread over 5 seeds" in by_mean.why
    with pytest.raises(UserError, match="by_mean: val/mse is judged on its mean already"):
        claim([{**GRU_LEARNS, "below": 0.01, "by_mean": "not needed"}])


def test_an_exploded_seed_is_a_value_judged_per_seed_and_a_swept_null_is_selected():
    t = table(
        {"gru": [math.inf, 1e4, math.inf], "rnn": [3.0, 2.0, 4.0]}, metric="diag/global_grad_norm@max", baseline=None
    )
    on_mean = judge_rule(
        Rule.model_validate(
            {"name": "m", "where": {"model.name": "gru"}, "metric": "diag/global_grad_norm@max", "above": 100}
        ),
        t,
        SWEPT,
    )
    assert on_mean.verdict == INCONCLUSIVE and "2 seed(s) measured an infinite" in on_mean.why
    per_seed = judge_rule(
        Rule.model_validate(
            {
                "name": "s",
                "where": {"model.name": "gru"},
                "metric": "diag/global_grad_norm@max",
                "success": {"above": 100},
                "above": 0.2,
            }
        ),
        t,
        SWEPT,
    )
    assert per_seed.interval.mean == 1.0 and per_seed.verdict == HOLDS
    clip = t.assign(**{"param.optim.grad_clip": [None, None, None, 1.0, 1.0, 1.0]})
    swept = {"model.name": ["rnn", "gru"], "optim.grad_clip": [None, 1.0]}
    off = judge_rule(
        Rule.model_validate(
            {
                "name": "c",
                "where": {"model.name": "gru", "optim.grad_clip": None},
                "metric": "diag/global_grad_norm@max",
                "success": {"above": 100},
                "above": 0.2,
            }
        ),
        clip,
        swept,
    )
    assert off.interval.n == 3 and off.config == "model.name=gru, optim.grad_clip=None"
