"""Calibration of the claim judge (issues 27 and 38): simulated seed tables at the null boundary of every
rule kind, and claims that put several kinds under Holm, judged look by look as ``seqbench verify`` does
(looks [3, 5, 8]; a cost claim's [5, 10, 15] replicates). At the null both holds and fails are wrong, so
the judge may say either, together, no more often than alpha plus three Monte-Carlo standard errors
(1000 studies per row: 0.0707; 10000 for the discrete kinds: 0.0565). The kinds and their generators
are ``benchmarks/judge_calibration.py``, whose calibration table in docs/claims.md is these very rows
(same reps, same streams).

On the judge before issue 27 this file fails: tied seeds were "certain" (discrete ties, largest:, an
imputed diverged seed) and a mean t-test read seeds that click or stay on a plateau as a tight
interval (bimodal accuracy and loss). Bounding holds and fails each by 0.05 + 3 SE at 200 studies, as
this file did before issue 38, let a judge without the two-sided doubling (10.5% wrong) or without
alpha spending (13.5%) pass: tests/sweeps/claims/test_judge_calibration_broken.py keeps those judges, and two more,
failing this file's check. A judge that never decides would pass calibration, so the last tests ask
for power where the effect is plain.
"""

from __future__ import annotations

import pytest

from tests.helpers import benchmark_script

CAL = benchmark_script("judge_calibration")
REPS = 1000  # per kind and per procedure: bound 0.0707; discrete kinds, whose tables repeat and are judged once
# each (``seen``), run 10x as many studies (Kind.reps_scale): bound 0.0565, where t on +-1 seeds (6.5%) fails


@pytest.mark.slow
@pytest.mark.parametrize("kind", CAL.KINDS, ids=lambda k: k.key)
def test_at_its_null_a_rule_kind_is_wrong_holds_or_fails_at_most_alpha(kind):
    r = CAL.kind_rates(kind, REPS)  # discrete kinds (reps_scale): 10x the studies, a tighter bound
    assert r.wrong <= CAL.bound(r.reps), (
        f"{kind.name}: wrong {r.wrong:.3f} (holds {r.holds:.3f}, fails {r.fails:.3f}) > {CAL.bound(r.reps):.4f}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CAL.PROCEDURES))
def test_a_claims_holm_procedure_over_every_look_wrongs_no_member_more_than_alpha(name):
    """A control and three rules, all at their null: how often any of the four holds or fails."""
    members = [(k, k.null) for k in CAL.procedure(name)]
    r = CAL.rates(members, REPS, seed=100 + list(CAL.PROCEDURES).index(name))
    assert r.wrong <= CAL.bound(REPS), f"{name}: some member held or failed in {r.wrong:.3f} of studies"


@pytest.mark.parametrize("kind", [k for k in CAL.KINDS if not k.name.startswith("discrete ties")], ids=lambda k: k.key)
def test_where_the_effect_is_plain_a_rule_kind_holds_on_most_studies(kind):
    """Every seed passes (per-seed kinds) or the mean is 2 sd past the threshold: by the last look the rule
    holds in most studies (a judge that never decides is calibrated, and useless). Not discrete ties:
    seeds that all measured +1 leave a mean untested, by design (tests/bench/core/test_stats.py)."""
    r = CAL.rates([(kind, kind.effects[-1])], 30, seed=1000 + CAL.KINDS.index(kind))
    assert r.holds >= 0.8 and r.fails == 0.0, f"{kind.name}: holds {r.holds:.2f}, fails {r.fails:.2f}"


def test_the_new_kinds_are_judged_as_claims_state_them():
    """Issue 38's kinds reach the judge's own branch: a per-seed band, two best_of picks paired, a mean on
    a bounded metric that says why, and a cost claim's replicates in the table sweeps/claims/cost.py builds."""
    import numpy as np

    from seqbench.sweeps.claims.judge import judge_all

    def judged(key, effect):
        k = CAL.by_key(key)
        values = {k.rule["metric"]: k.draw(np.random.default_rng(0), k.looks[-1], effect)}
        if k.cost:
            claim, table, swept = CAL.cost_claim(k.rule), CAL.cost_study_table(values, {}), CAL.COST_SWEPT
        else:
            claim, table, swept = CAL.claim_of([k.rule]), CAL.study_table(values, k.baseline), CAL.SWEPT
        _, (rule,), _, _ = judge_all(claim, table, swept, "quick")
        return rule

    band = judged("between", 1.0)
    assert band.per_seed and band.estimate.scale == "rate" and band.verdict == "holds"
    best = judged("best_of_minus", 2.0)
    assert best.ratio and " minus " in best.config and "best of optim.lr" in best.config and best.verdict == "holds"
    acc = judged("by_mean", 2.0)
    assert not acc.per_seed and acc.estimate.scale == "linear" and acc.estimate.bounds == (0.0, 1.0)
    cost = judged("cost", 2.0)
    assert cost.estimate.n == 15 and set(cost.thresholds) == {"lo", "hi"} and cost.verdict == "holds"


def test_kinds_picks_rows_that_match_the_full_tables_and_refuses_an_unknown_kind_in_one_line():
    """``--kinds versus`` reruns one kind's rows of the docs' table: its stream is seeded by its place in KINDS, so
    the row is the one the full table gives. An unknown key names every allowed one."""
    (versus,) = CAL.kinds_of("versus")
    assert versus.name.startswith("versus:") and [k.key for k in CAL.kinds_of("versus,minus")] == ["minus", "versus"]
    r = CAL.rates([(versus, versus.null)], 20, seed=7 + CAL.KINDS.index(versus))
    assert CAL.calibration_rows(20, 7, [versus]) == [
        [versus.name, CAL._pct(r.holds, r), CAL._pct(r.fails, r), CAL._pct(r.wrong, r)]
    ]
    assert r.wrong == pytest.approx(r.holds + r.fails)  # one rule: never both
    with pytest.raises(SystemExit) as e:
        CAL.kinds_of("versus,difference")
    text = str(e.value)
    assert "\n" not in text and "'difference'" in text and all(k.key in text for k in CAL.KINDS)
