"""The claim judge on fabricated seed tables: controls, Holm, intervals in the metric's range, and the
claim schema's checks (broken rules, looks, source parameter counts). Per-seed outcomes are in
test_judge_per_seed.py, sequential looks in test_judge_looks.py, claims trained for real in
test_judge_end_to_end.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge_all, judge_rule
from seqbench.sweeps.claims.load import parse_claim
from seqbench.sweeps.claims.results import FAILS, HOLDS, INCONCLUSIVE, INVALID
from seqbench.sweeps.claims.schema import Rule
from tests.sweeps.claims.judge_support import BASE, GRU_LEARNS, RNN_AT_BASE, SOURCE, SWEPT, _scores, claim, eight, table


# -- controls -----------------------------------------------------------------------------------
def test_a_failed_control_makes_the_claim_invalid_never_holds_or_fails():
    c = claim([RNN_AT_BASE], [GRU_LEARNS], seeds=8)
    rnn = eight(0.165, 0.168, 0.166)  # at the baseline: the rule alone would hold
    verdict, rules, controls, why = judge_all(c, table({"rnn": rnn, "gru": eight(0.16, 0.17, 0.165)}), SWEPT, "quick")
    assert controls[0].verdict == FAILS and verdict == INVALID and why == "control: gru learns"
    assert rules[0].verdict == INVALID and "control: gru learns failed" in rules[0].why
    # the same rnn seeds with a comparator that trains: the rule is judged, and holds
    verdict, rules, controls, _ = judge_all(c, table({"rnn": rnn, "gru": eight(1e-3, 2e-3, 1.5e-3)}), SWEPT, "quick")
    assert (controls[0].verdict, rules[0].verdict, verdict) == (HOLDS, HOLDS, HOLDS)
    # ... and an rnn far below the baseline (it learned) fails the two-sided band
    verdict, rules, _, _ = judge_all(
        c, table({"rnn": eight(0.01, 0.012, 0.011), "gru": eight(1e-3, 2e-3, 1.5e-3)}), SWEPT, "quick"
    )
    assert rules[0].verdict == FAILS and verdict == FAILS
    # with 3 seeds nothing is decided: 3 of 3 seeds at the baseline is p = 1/8 (a tie of 3 was "certain")
    three = judge_all(
        claim([RNN_AT_BASE], [GRU_LEARNS]), table({"rnn": rnn[:3], "gru": [1e-3, 2e-3, 1.5e-3]}), SWEPT, "quick"
    )
    assert three[0] == INCONCLUSIVE and three[2][0].p_alone == pytest.approx(0.25)


def test_an_at_the_baseline_rule_without_a_control_cannot_hold():
    c = claim([{**RNN_AT_BASE, "control": None}])
    t = table({"rnn": eight(0.165, 0.168, 0.166), "gru": [1e-3] * 8})
    verdict, rules, _, _ = judge_all(c, t, SWEPT, "quick")
    assert verdict == INVALID and rules[0].verdict == INVALID and "no control" in rules[0].why
    # unless the rule says why none is needed (e.g. measured at initialisation), and that reason is shown
    c = claim([{**RNN_AT_BASE, "control": None, "no_control": "measured at initialisation"}], seeds=8)
    verdict, rules, _, _ = judge_all(c, t, SWEPT, "quick")
    assert verdict == HOLDS and rules[0].verdict == HOLDS


def test_a_model_worse_than_the_baseline_is_not_at_the_baseline():
    # issue 19: "above 0.8 x baseline" passed an LSTM at 0.067 against a 0.0495 baseline; a band does not
    c = claim([RNN_AT_BASE], [GRU_LEARNS], seeds=8)
    verdict, rules, _, _ = judge_all(c, table({"rnn": eight(0.30, 0.32, 0.31), "gru": [1e-3] * 8}), SWEPT, "quick")
    assert rules[0].verdict == FAILS and rules[0].interval.fmt().startswith("0/8 seeds")
    assert rules[0].cut == {"lo": pytest.approx(0.9 * BASE), "hi": pytest.approx(1.1 * BASE)}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"control": "nobody"}, "control 'nobody' is not in controls"),
        ({"between": [0.2, 0.1], "control": None}, r"lo < hi"),
        ({"between": [0.1, 0.2], "below": 0.3}, "between: is a band of its own"),
        ({"metric": "solved", "between": None, "above": 1.5}, r"in \(0, 1\)"),
        ({"scale": "log", "between": None, "below": 0.0}, "scale: log needs thresholds > 0"),
        ({"no_control": "at init"}, "control: and no_control: contradict"),
    ],
)
def test_broken_rules_are_refused_with_the_field_named(change, message):
    with pytest.raises(UserError, match=message):
        claim([{**RNN_AT_BASE, **change}], [GRU_LEARNS])


def test_the_digest_covers_settings_seeds_looks_rules_thresholds_and_controls_and_nothing_that_only_explains():
    """Claim.digest names a registration (sweeps/claims/registry.py): every change that could move a verdict
    changes it; a rule's name, the paper's number and the note do not."""
    c = claim([GRU_LEARNS], looks=[3, 5, 8])
    assert c.looks_for("quick") == [3, 5, 8] and c.seeds_for("quick")[:3] == [0, 1, 2]
    d = c.digest("quick")
    changed = {
        "looks": claim([GRU_LEARNS], looks=[3, 5, 8, 12]),
        "seeds": claim([GRU_LEARNS], looks=[3, 5, 8], seeds=list(range(100, 108))),
        "threshold": claim([{**GRU_LEARNS, "below": {"baseline": 0.2}}], looks=[3, 5, 8]),
        "metric": claim([{**GRU_LEARNS, "metric": "val/loss"}], looks=[3, 5, 8]),
        "setting": claim([GRU_LEARNS], looks=[3, 5, 8], base={"task": {"name": "adding", "length": 9}}),
        "control": claim([RNN_AT_BASE], [GRU_LEARNS], looks=[3, 5, 8]),
    }
    assert all(x.digest("quick") != d for x in changed.values()), [
        k for k, x in changed.items() if x.digest("quick") == d
    ]
    with_control = changed["control"].digest("quick")
    tighter_control = claim([RNN_AT_BASE], [{**GRU_LEARNS, "below": {"baseline": 0.05}}], looks=[3, 5, 8])
    assert tighter_control.digest("quick") != with_control
    same = claim([{**GRU_LEARNS, "name": "the GRU learns", "paper": "5.3e-5 MSE"}], looks=[3, 5, 8], note="pilot: ...")
    assert same.digest("quick") == d
    with pytest.raises(UserError, match="increasing seed counts"):
        claim([GRU_LEARNS], looks=[5, 3])
    with pytest.raises(UserError, match="the last look needs 8 seeds"):
        claim([GRU_LEARNS], looks=[3, 8], seeds=[0, 1, 2, 3])


# -- Holm ---------------------------------------------------------------------------------------


def _score_rule(model: str) -> dict:
    return {"name": f"{model} positive", "where": {"model.name": model}, "metric": "score", "above": 0.0}


def test_holm_turns_two_borderline_holds_into_inconclusive_and_spares_one_beside_a_clear_one():
    x = [0.1, 0.5, 0.9, 1.3, 1.7]
    y = [v - 0.05 for v in x]
    px, py = (st.ttest_1samp(v, 0.0).pvalue for v in (x, y))  # two-sided p of each rule alone
    assert 0.025 < px < py < 0.05  # each holds alone at 95%; both fail Holm's first step (0.05 / 2)
    c = claim([_score_rule("rnn"), _score_rule("gru")])
    alone = [judge_rule(r, _scores({"rnn": x, "gru": y}), SWEPT) for r in c.expect]
    assert [r.verdict for r in alone] == [HOLDS, HOLDS]
    verdict, rules, _, _ = judge_all(c, _scores({"rnn": x, "gru": y}), SWEPT, "quick")
    assert [r.verdict for r in rules] == [INCONCLUSIVE, INCONCLUSIVE] and verdict == INCONCLUSIVE
    assert "Holm" in rules[0].why and rules[0].p_adjusted == pytest.approx(min(1, 2 * px))
    # step-down: beside a clear rule the borderline one is tested at the full 0.05 (Bonferroni would not)
    clear = [5.0, 5.1, 5.2, 5.05, 5.15]
    verdict, rules, _, _ = judge_all(c, _scores({"rnn": x, "gru": clear}), SWEPT, "quick")
    assert [r.verdict for r in rules] == [HOLDS, HOLDS] and verdict == HOLDS
    assert rules[0].interval.level == pytest.approx(0.95) and rules[1].interval.level == pytest.approx(0.975)


# -- intervals stay in the metric's range --------------------------------------------------------
def test_an_interval_never_leaves_the_metrics_range():
    mse = [0.1, 0.13, 0.238]  # issue 19: a t interval on these MSEs reached below zero
    lo, _ = st.t.interval(0.95, 2, loc=np.mean(mse), scale=st.sem(mse))
    assert lo < 0
    r = judge_rule(
        Rule.model_validate({"name": "m", "where": {"model.name": "gru"}, "metric": "val/mse", "above": 0.01}),
        table({"gru": mse, "rnn": mse}),
        SWEPT,
    )
    assert r.interval.lo > 0 and r.interval.scale == "log"
    assert r.interval.mean == pytest.approx(math.exp(np.mean(np.log(mse))))
    acc = [0.99, 1.0, 0.97]
    a = judge_rule(
        Rule.model_validate(
            {
                "name": "a",
                "where": {"model.name": "gru"},
                "metric": "val/acc",
                "above": 0.5,
                "by_mean": "the clipped t interval is what is tested",
            }
        ),
        table({"gru": acc, "rnn": acc}, metric="val/acc"),
        SWEPT,
    )
    assert st.t.interval(0.95, 2, loc=np.mean(acc), scale=st.sem(acc))[1] > 1 and a.interval.hi == 1.0
    rates = judge_rule(
        Rule.model_validate({"name": "s", "where": {"model.name": "gru"}, "metric": "solved", "above": 0.1}),
        table({"gru": [True] * 3, "rnn": [False] * 3}),
        SWEPT,
    )
    assert 0 <= rates.interval.lo <= rates.interval.hi <= 1


def test_source_params_state_the_papers_count_beside_seqbenchs():
    c = claim([GRU_LEARNS])
    raw = {
        "question": "q?",
        "source": {
            **SOURCE,
            "params": [
                {"where": {"model.name": "gru"}, "paper": 70000, "seqbench": 70367, "from": "Table 1 size column"},
                {"where": {}, "paper": None, "seqbench": 5000, "from": "not comparable: tied embeddings"},
            ],
        },
        "figure": "factors",
        "base": {"task": {"name": "adding", "length": 8}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}},
        "seeds": 3,
        "profiles": {"quick": {}, "paper": {}},
        "expect": [GRU_LEARNS],
    }
    parsed = parse_claim(raw, "c")
    assert parsed.source.params[0].paper == 70000 and parsed.source.params[1].from_.startswith("not comparable")
    assert c.source.params == []  # optional
    raw["source"]["params"][0]["seqbench"] = 0
    with pytest.raises(UserError, match="source.params"):
        parse_claim(raw, "c")
