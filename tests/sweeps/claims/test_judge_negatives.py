"""Negatives that survive a bigger budget (issue 38 item 5, sweeps/claims/negatives.py): a rule saying a model
did not learn is judged at two budgets (``budget:``), or beside a positive control of the same model at an
easier setting; a new registration with a negative that is neither is refused before anything trains, and a
registered one is marked budget-bound on its verdict line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge_all
from seqbench.sweeps.claims.load import load_claim, parse_claim
from seqbench.sweeps.claims.negatives import BOUND, is_negative, robustness
from seqbench.sweeps.claims.results import FAILS, HOLDS
from seqbench.sweeps.claims.rules import Rule
from seqbench.sweeps.claims.runner import run_claim
from tests.sweeps.claims.judge_support import SOURCE, fake_runs

BASE = 1 / 6  # the adding task's memoryless MSE
AT_BASE = {"between": [{"baseline": 0.8}, {"baseline": 1.2}]}
LEARNS = {"name": "gru learns", "where": {"model.name": "gru"}, "metric": "val/mse", "below": {"baseline": 0.5}}


def _rule(**kw) -> Rule:
    return Rule.model_validate({"name": "r", "where": {"model.name": "rnn"}, **kw})


@pytest.mark.parametrize(
    ("kw", "negative"),
    [
        ({"metric": "val/mse", **AT_BASE}, True),  # at the baseline
        ({"metric": "val/mse", "above": {"baseline": 0.9}}, True),
        ({"metric": "val/acc", "below": 0.9}, True),  # an accuracy that stays low
        ({"metric": "val/bpc", "above": 4.0}, True),  # a loss that stays high
        ({"metric": "val/acc", "above": 0.9}, False),
        ({"metric": "val/mse", "below": 0.01}, False),
        ({"metric": "val/acc", "success": {"above": 0.9}, "below": 0.5}, True),  # most seeds do not reach 0.9
        ({"metric": "val/acc", "success": {"above": 0.9}, "above": 0.5}, False),
        ({"metric": "score", "below": 0.0}, False),  # no known direction
        ({"metric": "val/acc", "below": 0.0, "minus": {"model.name": "gru"}, "no_control": "x"}, False),
    ],
)
def test_a_negative_is_a_rule_that_says_the_model_did_not_learn(kw, negative):
    assert is_negative(_rule(**kw)) is negative


def _raw(rules: list[dict], controls: list[dict], budgets: list[int] | None = None, seeds: int = 8) -> dict:
    params = {"model.name": {"values": ["rnn", "gru"]}}
    if budgets:
        params["train.max_steps"] = {"values": budgets}
    return {
        "question": "q?",
        "source": SOURCE,
        "figure": "factors",
        "base": {"task": {"name": "adding", "length": 8}, "tracking": {"wandb": "off"}, "eval": {"test": False}},
        "metric": {"name": "val/mse", "goal": "minimize"},
        "parameters": params,
        "seeds": seeds,
        "profiles": {"quick": {}, "paper": {}},
        "expect": rules,
        "controls": controls,
    }


def _table(values: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    rows = []
    for (model, steps), per_seed in values.items():
        for seed, v in enumerate(per_seed):
            rows.append(
                {
                    "trial": len(rows),
                    "state": "COMPLETE",
                    "seed": seed,
                    "run_id": f"{model}{steps}s{seed}",
                    "status": "completed",
                    "param.model.name": model,
                    "param.train.max_steps": steps,
                    "final.val/mse": v,
                    "baseline.val/mse": BASE,
                }
            )
    return pd.DataFrame(rows)


def test_a_budget_rule_is_judged_at_each_budget_and_fails_where_the_model_learns_at_4x():
    rnn_at_base = {"name": "rnn at the baseline", "where": {"model.name": "rnn"}, "metric": "val/mse", **AT_BASE}
    raw = _raw(
        [{**rnn_at_base, "budget": "train.max_steps", "control": "gru learns"}],
        [{**LEARNS, "where": {"model.name": "gru", "train.max_steps": "min"}}],
        budgets=[100, 400],
    )
    claim = parse_claim(raw, "c")
    swept = {"model.name": ["rnn", "gru"], "train.max_steps": [100, 400]}
    at_base, learned, gru = [BASE * (1 + 0.01 * i) for i in range(8)], [0.01 + 0.001 * i for i in range(8)], [0.005] * 8
    stays = _table({("rnn", 100): at_base, ("rnn", 400): at_base, ("gru", 100): gru, ("gru", 400): gru})
    verdict, rules, _, _ = judge_all(claim, stays, swept, "quick")
    assert verdict == HOLDS and [r.rule.name for r in rules] == [
        "rnn at the baseline [train.max_steps=100]",
        "rnn at the baseline [train.max_steps=400]",
    ]
    assert all("a negative judged at every train.max_steps" in r.robust for r in rules)
    learns = _table({("rnn", 100): at_base, ("rnn", 400): learned, ("gru", 100): gru, ("gru", 400): gru})
    verdict, rules, _, _ = judge_all(claim, learns, swept, "quick")
    assert verdict == FAILS and [r.verdict for r in rules] == [HOLDS, FAILS]  # a bigger budget changed it
    with pytest.raises(UserError, match=r"budget: train.max_steps must be swept .* at least 4x the smallest"):
        parse_claim({**raw, "parameters": {**raw["parameters"], "train.max_steps": {"values": [100, 200]}}}, "c")


def _fake(monkeypatch) -> list[list[int]]:
    """Every look's runs fabricated: the rnn at the baseline, the gru far below it."""

    def runs(s: int) -> list:
        rnn, gru = BASE * (1 + 0.01 * s), 0.005 + 0.001 * s
        base = {"baseline.val/mse": BASE}
        return [({"model.name": "rnn"}, {"val/mse": rnn}, base), ({"model.name": "gru"}, {"val/mse": gru}, base)]

    return fake_runs(monkeypatch, runs)


def test_a_new_registration_with_a_budget_bound_negative_is_refused_and_a_registered_one_is_marked(
    tmp_path: Path, monkeypatch
):
    from seqbench.sweeps.claims.registry import REGISTRY, Registration, Registry

    rnn_at_base = {"name": "rnn at the baseline", "where": {"model.name": "rnn"}, "metric": "val/mse", **AT_BASE}
    path = tmp_path / "neg.yaml"
    path.write_text(yaml.safe_dump(_raw([{**rnn_at_base, "control": "gru learns"}], [LEARNS], seeds=10)))
    claim = load_claim(path)
    asked = _fake(monkeypatch)
    with pytest.raises(UserError) as e:
        run_claim(claim, "quick", tmp_path, 1, None)
    msg = str(e.value)
    assert "\n" not in msg and "rule 'rnn at the baseline' says the model did not learn" in msg
    assert "budget: train.max_steps" in msg and asked == []
    (r,) = claim.rules("quick")
    assert robustness(claim, "quick", r) == ""  # the control is another model
    Registry(
        tmp_path / REGISTRY, [Registration("neg", "quick", claim.digest("quick"), list(range(10)), [], "2026-11-26")]
    ).save()
    res = run_claim(claim, "quick", tmp_path, 1, None)  # registered before the check: judged, and marked
    assert res.verdict == HOLDS and res.rules[0].robust == BOUND
    from seqbench.sweeps.claims.results import verdict_table

    assert BOUND in verdict_table([res]).set_index("rule").loc["rnn at the baseline", "needs"]
    within = tmp_path / "within"
    within.mkdir()
    easier = {**LEARNS, "name": "rnn learns a short sum", "where": {"model.name": "rnn"}, "metric": "val/mse@8"}
    raw = _raw([{**rnn_at_base, "control": "rnn learns a short sum"}], [LEARNS, easier], seeds=10)
    (within / "neg.yaml").write_text(yaml.safe_dump(raw))
    claim = load_claim(within / "neg.yaml")
    assert "positive control of the same model" in robustness(claim, "quick", claim.rules("quick")[0])
