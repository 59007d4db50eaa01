"""``largest:`` rules on fabricated seed tables: per seed, the grid step of the largest learning rate at
which a run trained (issue 19: "the largest learning rate at which post-LN trains falls with depth").
Grid steps tie, so the rule is judged per seed (issue 27: a sign test on the share of seeds whose step
goes the claimed way, never a mean that 3 tied seeds made "certain"); it can hold, can fail, needs a
control, and refuses a where: that fixes the key it ranges over."""

from __future__ import annotations

import pandas as pd
import pytest

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge_all
from seqbench.sweeps.claims.load import parse_claim
from seqbench.sweeps.claims.results import FAILS, HOLDS, INCONCLUSIVE, INVALID, ClaimResult, verdict_table

SOURCE = {
    "cite": "Test 2024 Fig. 1",
    "paper": "A. Test 2024",
    "where": "Figure 1",
    "metric": "bpc",
    "published": [{"what": "post-LN depth", "value": 18, "unit": "layers"}],
}
LRS = [0.003, 0.01, 0.03]
SWEPT = {"model.norm_position": ["post", "pre"], "model.n_layers": [2, 6], "optim.lr": LRS}
UNIGRAM = 4.8
TRAINED, STUCK = 3.6, 4.78  # below / above 0.85 x unigram (4.08)


def table(largest: dict[tuple[str, int], list[int]]) -> pd.DataFrame:
    """Runs of every (norm, depth, lr, seed): a seed trains (bpc 3.6) at every rate up to the grid step
    ``largest[(norm, depth)][seed]`` (0: at none) and stays at the unigram above it; a diverged run past it."""
    rows = []
    for (norm, depth), per_seed in largest.items():
        for seed, top in enumerate(per_seed):
            for step, lr in enumerate(LRS, start=1):
                rows.append(
                    {
                        "seed": seed,
                        "run_id": f"{norm}{depth}{lr}s{seed}",
                        "param.model.norm_position": norm,
                        "param.model.n_layers": depth,
                        "param.optim.lr": lr,
                        "baseline.val/bpc": UNIGRAM,
                        "status": "diverged" if step == top + 2 else "completed",
                        "final.val/bpc": TRAINED if step <= top else STUCK,
                    }
                )
    return pd.DataFrame(rows)


TRAINS = {"below": {"baseline": 0.85}}
FALLS = {
    "name": "post-LN's largest trainable rate is a step lower at depth 6",
    "where": {"model.norm_position": "post", "model.n_layers": 6},
    "minus": {"model.norm_position": "post", "model.n_layers": 2},
    "metric": "val/bpc",
    "largest": {"over": "optim.lr", **TRAINS},
    "success": {"below": -0.5},
    "above": 0.5,
    "diverged": "baseline",
    "control": "deep post-LN trains at the smallest rate",
}
CONTROL = {
    "name": "deep post-LN trains at the smallest rate",
    "metric": "val/bpc",
    "below": {"baseline": 0.85},
    "where": {"model.norm_position": "post", "model.n_layers": 6, "optim.lr": "min"},
    "diverged": "baseline",
}


def claim(expect: list[dict], controls: list[dict] | None = None):
    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "heatmap",
        "seeds": 8,
        "base": {"task": {"name": "lm", "length": 8, "sample_tokens": 0}, "model": {"name": "transformer"}},
        "parameters": {k: {"values": v} for k, v in SWEPT.items()},
        "profiles": {"quick": {}, "paper": {}},
        "expect": expect,
        "controls": [CONTROL] if controls is None else controls,
    }
    return parse_claim(raw, "c")


def test_a_largest_rate_that_falls_with_depth_holds_on_most_seeds_and_a_tie_fails():
    c = claim([FALLS])
    t = table({("post", 2): [2] * 8, ("post", 6): [1] * 8})
    verdict, rules, controls, _ = judge_all(c, t, SWEPT, "quick")
    assert controls[0].verdict == HOLDS and rules[0].verdict == HOLDS and verdict == HOLDS
    assert rules[0].interval.fmt().startswith("8/8 seeds")
    assert rules[0].n_diverged == 8  # deep: 3e-2 diverged on every seed (as did not train)
    row = verdict_table([ClaimResult(c, "quick", verdict, rules, controls=controls)])
    assert "grid step of the largest optim.lr" in row["measured (mean [95% CI] n)"].iloc[-1]
    assert row["needs"].iloc[-1] == (
        "share of seeds with difference of grid step of the largest optim.lr per seed "
        "with val/bpc < 0.85 x baseline < -0.5: > 0.5"
    )
    # the same largest rate at both depths on every seed: no seed one step lower, an exact test says fails
    verdict, rules, _, _ = judge_all(c, table({("post", 2): [2] * 8, ("post", 6): [2] * 8}), SWEPT, "quick")
    assert rules[0].verdict == FAILS and verdict == FAILS
    # a deep model that trains at no rate: the control fails and the claim says nothing (invalid)
    verdict, _, controls, why = judge_all(c, table({("post", 2): [2] * 8, ("post", 6): [0] * 8}), SWEPT, "quick")
    assert controls[0].verdict == FAILS and verdict == INVALID and "deep post-LN" in why


def test_three_tied_seeds_decide_nothing_as_written_before_issue_27():
    """The rule as postln_lr_depth wrote it (below: -0.5 on the difference, no success:) is judged per seed
    too: 3 of 3 seeds one step lower is p = 1/8 for a sign test, not the p = 0 a tied mean gave."""
    old = {**FALLS, "success": None, "above": None, "below": -0.5}
    verdict, rules, _, _ = judge_all(claim([old]), table({("post", 2): [2] * 3, ("post", 6): [1] * 3}), SWEPT, "quick")
    assert rules[0].per_seed == "grid steps are discrete and tie" and rules[0].p_alone == pytest.approx(0.25)
    assert rules[0].verdict == INCONCLUSIVE and verdict == INCONCLUSIVE
    _, rules, _, _ = judge_all(claim([old]), table({("post", 2): [2] * 8, ("post", 6): [1] * 8}), SWEPT, "quick")
    assert rules[0].verdict == HOLDS


def test_a_seed_without_a_run_at_every_rate_is_left_out():
    c = claim([FALLS])
    t = table({("post", 2): [2] * 9, ("post", 6): [1] * 8 + [3]})
    t = t[~((t["seed"] == 8) & (t["param.optim.lr"] == 0.003))]  # seed 8 lacks a rate: its largest is unknown
    _, rules, _, _ = judge_all(c, t, SWEPT, "quick")
    assert rules[0].interval.n == 8 and rules[0].verdict == HOLDS


@pytest.mark.parametrize(
    "change, message",
    [
        ({"where": {"model.norm_position": "post", "model.n_layers": 6, "optim.lr": 0.01}}, "drop it from where"),
        ({"below": {"baseline": 0.5}, "minus": None, "success": None, "above": None}, "numeric thresholds"),
        ({"success": {"below": {"baseline": 0.5}}}, "success: on a difference or a grid step takes a number"),
        ({"by_mean": "steps are fine", "success": None, "above": None, "below": -0.5}, "tie: judged per seed"),
        ({"metric": "solved", "success": None, "minus": None}, "largest: needs a metric"),
        ({"control": None}, "no control"),
        (
            {"best_of": "model.norm_position", "where": {"model.n_layers": 6}, "minus": {"model.n_layers": 2}},
            "drop best_of",
        ),
        (
            {
                "largest": {"over": "model.n_layers", **TRAINS},
                "where": {"model.norm_position": "post", "optim.lr": 0.01},
                "minus": {"model.norm_position": "pre", "optim.lr": 0.01},
                "control": None,
                "no_control": "x",
            },
            None,
        ),
        (
            {
                "largest": {"over": "model.norm_position", **TRAINS},
                "where": {"model.n_layers": 6, "optim.lr": 0.01},
                "minus": {"model.n_layers": 2, "optim.lr": 0.01},
            },
            "at least 2 numbers",
        ),
    ],
)
def test_largest_rules_are_checked_when_the_claim_loads(change, message):
    rule = {**FALLS, **change}
    if message is None:  # any numeric swept key can be ranged over
        claim([rule])
        return
    if message == "no control":
        verdict, rules, _, _ = judge_all(
            claim([rule]), table({("post", 2): [2] * 8, ("post", 6): [1] * 8}), SWEPT, "quick"
        )
        assert verdict == INVALID and "no control" in rules[0].why
        return
    with pytest.raises(UserError, match=message):
        claim([rule])


def test_the_verdict_figure_shows_each_sides_largest_rate_and_the_step_threshold():
    from seqbench.reports.verify_html import verdict_figure

    c = claim([FALLS])
    t = table({("post", 2): [2] * 8, ("post", 6): [1] * 8})
    _, rules, controls, _ = judge_all(c, t, SWEPT, "quick")
    fig = verdict_figure(t, [*controls, *rules])
    titles = [a.text for a in fig.layout.annotations]
    side = "grid step of the largest optim.lr per seed with val/bpc < 0.85 x baseline"
    assert side in titles and f"share of seeds with difference of {side} < -0.5" in titles
    by_name = {tr.name: tr for tr in fig.data}
    # each compared configuration on its own, with its per-seed grid steps (not a learning rate, not bpc)
    assert list(by_name["model.norm_position=post, model.n_layers=2: seeds"].y) == [2] * 8
    assert list(by_name["model.norm_position=post, model.n_layers=6: seeds"].y) == [1] * 8
    assert f"{FALLS['name']}: above 0.5" in by_name  # the share of seeds one step lower must pass one half
