"""seqbench verify: judging on synthetic study tables, and the verdict figure that shows it. Claim files
and the command end to end are in test_verify_claims.py, the cost and diagnostics metrics in
test_verify_metrics.py."""

from __future__ import annotations

import pytest

from seqbench.sweeps.claims.judge import judge, judge_rule
from seqbench.sweeps.claims.load import parse_claim
from seqbench.sweeps.claims.results import FAILS, HOLDS, INCONCLUSIVE, MISSING
from tests.sweeps.claims.judge_support import SOURCE
from tests.sweeps.claims.verify_support import GOOD, SWEPT, rule, table


def test_holds_fails_and_inconclusive_from_the_interval():
    t = table(GOOD)
    held = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, below=0.01), t, SWEPT)
    assert held.verdict == HOLDS and held.interval.n == 3 and held.interval.hi < 0.01
    failed = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, below=0.01), t, SWEPT)
    assert failed.verdict == FAILS and failed.interval.lo > 0.01
    # rnn at 100: mean 0.113, wide interval across 0.1
    unsure = judge_rule(rule(where={"model.name": "rnn", "task.length": "max"}, above=0.1), t, SWEPT)
    assert unsure.verdict == INCONCLUSIVE and unsure.interval.lo < 0.1 < unsure.interval.hi
    assert "contains the threshold" in unsure.why and unsure.config == "model.name=rnn, task.length=100"


def test_baseline_thresholds_and_paired_differences():
    t = table(GOOD)
    # a baseline multiple asks, per seed, whether a run left the plateau: 3 of 3 seeds is p = 1/8, undecided
    at_base = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, above={"baseline": 0.9}), t, SWEPT)
    assert at_base.cut["above"] == pytest.approx(0.15) and at_base.thresholds == {"above": 0.5}
    assert at_base.verdict == INCONCLUSIVE and at_base.interval.fmt().startswith("3/3 seeds")
    eight = table({**GOOD, ("rnn", 50): [0.16, 0.17, 0.165] * 2 + [0.16, 0.17]})
    at_base = judge_rule(rule(where={"model.name": "rnn", "task.length": 50}, above={"baseline": 0.9}), eight, SWEPT)
    assert at_base.verdict == HOLDS and at_base.p_alone == pytest.approx(2 * 0.5**8)  # 8 of 8: a sign test
    pair = {"where": {"model.name": "rnn", "task.length": 50}, "minus": {"model.name": "gru", "task.length": 50}}
    diff = judge_rule(rule(**pair, above=0.1, scale="linear"), t, SWEPT)  # a difference in MSE units
    assert diff.verdict == HOLDS and diff.interval.mean == pytest.approx(0.165 - 0.0015)
    ratio = judge_rule(rule(**pair, above=10.0), t, SWEPT)  # an MSE's minus: is a ratio by default (issue 38)
    assert ratio.verdict == HOLDS and ratio.ratio and ratio.measured().startswith("ratio ")


def test_one_replicate_is_inconclusive_not_judged_on_a_point():
    t = table({**GOOD, ("gru", 50): [0.001]})
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, below=0.01), t, SWEPT)
    assert r.verdict == INCONCLUSIVE and "fewer than 2 replicates" in r.why


def test_missing_configuration_and_missing_metric_are_named():
    t = table({k: v for k, v in GOOD.items() if k != ("gru", 100)})
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 100}, below=0.01), t, SWEPT)
    assert r.verdict == MISSING and r.why == "no completed run of model.name=gru, task.length=100"
    r = judge_rule(rule(where={"model.name": "gru", "task.length": 50}, metric="val/acc", below=0.5), t, SWEPT)
    assert r.verdict == MISSING and "val/acc was not recorded" in r.why


def test_diverged_seed_is_inconclusive_unless_the_rule_says_what_it_counts_as():
    t = table({**GOOD, ("gru", 50): [0.001, None, 0.002, 0.0015, 0.001, 0.002, 0.0012, 0.0018, 0.0011]})
    where = {"model.name": "gru", "task.length": 50}
    default = judge_rule(rule(where=where, below=0.01), t, SWEPT)
    assert default.verdict == INCONCLUSIVE and default.n_diverged == 1 and "diverged" in default.why
    left_out = judge_rule(rule(where=where, below=0.01, diverged="exclude"), t, SWEPT)
    assert left_out.verdict == HOLDS and left_out.interval.n == 8 and "1 diverged, left out" in left_out.measured()
    assert left_out.estimate.scale == "log"  # nothing imputed: the geometric mean
    # an imputed seed is a point mass (every diverged seed the same value): judged per seed, 8 of 9 pass
    as_base = judge_rule(rule(where=where, below=0.01, diverged="baseline"), t, SWEPT)
    assert as_base.per_seed.startswith("diverged seeds are imputed") and as_base.interval.n == 9
    assert as_base.verdict == HOLDS and as_base.p_alone == pytest.approx(2 * 10 / 2**9)  # P(>= 8 of 9 | 1/2)
    as_base_above = judge_rule(rule(where=where, above=0.5, diverged="baseline"), t, SWEPT)
    assert as_base_above.verdict == FAILS and as_base_above.interval.mean == 0.0


def test_claim_verdict_combines_rules():
    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "length",
        "base": {"task": {"name": "adding"}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}, "task.length": {"values": [50, 100]}},
        "profiles": {"quick": {}, "paper": {}},
        "expect": [
            {
                "name": "gru solves",
                "where": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "below": 0.01,
            },
            {
                "name": "rnn at baseline",
                "where": {"model.name": "rnn", "task.length": 100},
                "metric": "val/mse",
                "above": 0.1,
            },
        ],
    }
    claim = parse_claim(raw, "c")
    assert judge(claim, table(GOOD), SWEPT, "quick")[0] == INCONCLUSIVE
    strong = {**GOOD, ("rnn", 100): [0.16, 0.17, 0.165]}
    assert judge(claim, table(strong), SWEPT, "quick")[0] == HOLDS
    weak = {**strong, ("gru", 50): [0.1, 0.12, 0.11]}
    assert judge(claim, table(weak), SWEPT, "quick")[0] == FAILS


# -- figures that show the verdict, cost metrics ---------------------------------------------------
def test_the_verdict_figure_draws_each_compared_configuration_and_the_thresholds():
    from seqbench.reports.verify_html import claim_figure
    from seqbench.sweeps.claims.judge import judge_all
    from seqbench.sweeps.table import Objective

    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "length",
        "base": {"task": {"name": "adding"}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}, "task.length": {"values": [50, 100]}},
        "profiles": {"quick": {}, "paper": {}},
        "controls": [
            {
                "name": "gru learns",
                "where": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "below": 0.01,
            }
        ],
        "expect": [
            {
                "name": "rnn worse",
                "where": {"model.name": "rnn", "task.length": 50},
                "minus": {"model.name": "gru", "task.length": 50},
                "metric": "val/mse",
                "above": 0.1,
                "scale": "linear",  # a difference in MSE units (an MSE's minus: is a ratio by default)
                "control": "gru learns",
            }
        ],
    }
    claim = parse_claim(raw, "c")
    t = table(GOOD).assign(**{"objective:val/mse": lambda d: d["final.val/mse"], "diverged": False})
    verdict, rules, controls, _ = judge_all(claim, t, SWEPT, "quick")
    assert verdict == HOLDS
    figs = claim_figure("length", t, Objective("val/mse", "minimize"), [*controls, *rules])
    verdict_fig, named = figs
    names = [tr.name for tr in verdict_fig.data]
    # both sides of the difference, separately, and the difference with its threshold
    assert "model.name=rnn, task.length=50" in names and "model.name=gru, task.length=50" in names
    assert "model.name=rnn, task.length=50 minus model.name=gru, task.length=50" in names
    assert "rnn worse: above 0.1" in names and "gru learns: below 0.01" in names
    assert [a.text for a in verdict_fig.layout.annotations][:2] == ["val/mse", "difference of val/mse"]
    # the named figure: one line per configuration (here per model; two swept keys -> a label of both)
    assert sorted(tr.name for tr in named.data if tr.mode == "lines+markers") == ["gru", "rnn"]
