"""seqbench verify's measured metrics: cost metrics fitted over lengths, diagnostics per run, a trial failed
by diverged seeds, a cost claim's looks, and the plan's warning that a first look cannot decide."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqbench.bench.core.cost_format import CostPoint
from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.results import HOLDS
from seqbench.sweeps.claims.schema import Rule
from tests.sweeps.claims.judge_support import SOURCE, cost_measurement


def test_cost_metrics_fit_four_lengths_and_state_the_flop_prediction_and_fixed_share():
    from seqbench.sweeps.claims.cost import cost_metrics
    from seqbench.sweeps.claims.schema import cost_config

    cfg = cost_config({"models": ["transformer", "rnn"], "lengths": [128, 256, 512, 1024], "d_model": 32})
    rows = [
        CostPoint("transformer", T, "ok", time_ms=ms) for T, ms in zip([128, 256, 512, 1024], [10.0, 17.0, 37.8, 102.4])
    ]  # issue 19's quiet-machine times
    m = cost_metrics("transformer", rows, cfg)
    assert m["time_exponent_long"] == pytest.approx(m["time_exponent"]) and 1.0 < m["time_exponent"] < 1.3
    assert m["flops_exponent"] > m["time_exponent"] + 0.3  # the count predicts a steeper slope than timed
    assert m["fixed_share"] == pytest.approx(10.0 / 102.4)
    assert math.isnan(m["time_exponent_upper"])  # 2 points are not a fit
    short = cost_metrics("transformer", rows[:3], cfg)
    assert math.isnan(short["time_exponent"]) and math.isnan(short["flops_exponent"])
    from seqbench.sweeps.claims.judge import judge_rule

    t = pd.DataFrame(
        [
            {
                "trial": 0,
                "seed": s,
                "run_id": f"r{s}",
                "status": "completed",
                "param.model.name": "transformer",
                **{f"final.{k}": v for k, v in m.items()},
            }
            for s in range(3)
        ]
    )
    r = judge_rule(
        Rule.model_validate(
            {"name": "e", "where": {"model.name": "transformer"}, "metric": "time_exponent_long", "between": [1.5, 2.2]}
        ),
        t,
        {"model.name": ["transformer"]},
    )
    assert f"FLOP count predicts {m['flops_exponent_long']:.3g}, fixed-cost share 10%" in r.measured()
    from seqbench.reports.verify_html import verdict_figure

    fig = verdict_figure(t, [r])  # the timed exponent, its band and the FLOP count's prediction beside it
    marks = {tr.name: tr.y for tr in fig.data}
    assert marks["model.name=transformer: FLOP count"] == (pytest.approx(m["flops_exponent_long"]),)
    assert marks["e: lo 1.5"] == (1.5, 1.5) and marks["e: hi 2.2"] == (2.2, 2.2)
    with pytest.raises(UserError, match="cost.lengths: at least 4"):
        cost_config({"models": ["rnn"], "lengths": [128, 256, 512]})


def test_diagnostics_metrics_per_run():
    from seqbench.bench.core.diagnostics_format import Record
    from seqbench.sweeps.claims.diag import diag_metrics

    recs = [
        Record(
            step=0,
            global_grad_norm=2.0,
            w_hh_spectral_norm={},
            layer_grad_norm={
                "embed": 9.0,
                "backbone.stack.layers.0": 0.5,
                "backbone.stack.layers.11": 1.6,
                "backbone.stack.layers.2": 0.7,
                "head": 3.0,
            },
        ),
        Record(step=5, global_grad_norm=float("inf"), w_hh_spectral_norm={}, layer_grad_norm={}),
        Record(step=9, global_grad_norm=40.0, w_hh_spectral_norm={}, layer_grad_norm={}),
    ]
    m = diag_metrics(recs)
    assert m["diag/last_layer_grad_norm@first"] == 1.6  # layer 11, not the lexically last "2"
    assert m["diag/global_grad_norm@first"] == 2.0 and m["diag/global_grad_norm@max"] == math.inf
    assert math.isnan(m["diag/decay_rate@first"]) and all(math.isnan(v) for v in diag_metrics([]).values())


def test_a_trial_failed_only_by_diverged_seeds_is_a_result_and_any_other_failure_is_reported():
    """Read from the runs' own statuses, not the fail reason's wording."""
    import pandas as pd

    from seqbench.sweeps.claims.runner import failed_trials

    table = pd.DataFrame(
        [
            {"trial": 0, "state": "FAIL", "status": "diverged", "fail_reason": "anything at all"},
            {"trial": 0, "state": "FAIL", "status": "completed", "fail_reason": "anything at all"},
            {"trial": 1, "state": "FAIL", "status": "not-started", "fail_reason": "RuntimeError: boom"},
            {"trial": 2, "state": "COMPLETE", "status": "completed", "fail_reason": None},
        ]
    )
    assert failed_trials(table) == ["trial 1 failed: RuntimeError: boom"]


def cost_claim(**profile) -> dict:
    return {
        "question": "does time grow linearly?",
        "kind": "cost",
        "source": SOURCE,
        "figure": "cost",
        "cost": {"models": ["rnn"], "lengths": [128, 256, 512, 1024], "d_model": 8},
        "profiles": {"quick": profile, "paper": {"replicates": 2}},
        "expect": [
            {"name": "linear", "where": {"model.name": "rnn"}, "metric": "time_exponent_long", "between": [0.8, 1.2]}
        ],
    }


def test_cost_claim_looks_count_replicates_and_stop_at_the_first_deciding_look(monkeypatch, tmp_path):
    """A cost claim's looks are replicate counts: measured up to each look, judged at that look's spent alpha,
    stopped at the first look that decides; a later run reuses the cached replicates. A changed cost claim is
    a registration of its own that measures afresh (its cache is named by its digest), never a re-judging of
    the measured replicates, and the registry keeps both."""
    from seqbench.bench.commands import verify as v
    from seqbench.sweeps.claims.load import load_claim
    from seqbench.sweeps.claims.registry import REGISTRY, load_registry

    slopes = iter([0.85, 1.15, 1.0, 1.003, 1.01, 0.99, 0.998, 1.002, 1.001] + [1.0, 1.01, 0.99] * 4)  # noisy first look
    calls = []

    def fake_cost(cfg):
        e, T = next(slopes), [128, 256, 512, 1024]
        calls.append(e)
        return cost_measurement([CostPoint("rnn", t, "ok", time_ms=0.01 * t**e) for t in T])

    def claim_file(**profile) -> Path:
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(cost_claim(**profile)))
        return path

    monkeypatch.setattr("seqbench.bench.training.cost.measure_cost", fake_cost)
    monkeypatch.setattr(v, "cost_figure", lambda rows, meta: None)
    claim = load_claim(claim_file(looks=[3, 6, 9]))
    assert claim.replicates_for("quick") == 9 and claim.replicates_for("paper") == 2
    res = v.verify_claim(claim, "quick", tmp_path, 1, None)
    assert res.verdict == HOLDS and len(calls) == 6  # look 1 (0.85, 1.15, 1.0) undecided; look 2 decides
    assert res.looks == "decided at look 2 of 3, n=6 replicates, alpha 0.0157"  # O'Brien-Fleming-type share
    assert len(res.table) == 6 and res.rules[0].interval.n == 6
    again = v.verify_claim(claim, "quick", tmp_path, 1, None)  # cached: nothing measured again
    assert again.verdict == HOLDS and len(calls) == 6
    recut = v.verify_claim(load_claim(claim_file(looks=[3, 6])), "quick", tmp_path, 1, None)
    assert len(calls) > 6 and recut.rules[0].interval.n in (3, 6)  # measured afresh, not the 6 judged above
    first, second = load_registry(tmp_path / REGISTRY).registrations
    assert first.looks == [3, 6, 9] and first.replaced.endswith(f"by registration {second.digest}")
    assert second.kind == "cost" and second.seeds == list(range(6)) and not second.replaced
    with pytest.raises(UserError, match=r"cost.replicates: 5 disagrees with looks: \[3, 6\]"):
        load_claim(claim_file(looks=[3, 6], replicates=5))
