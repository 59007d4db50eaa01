"""The claim judge on a difference in differences (``versus:``, fabricated seed tables): per seed
(where - minus) - (versus.where - versus.minus), so a fall that every model shows by construction (exact
match falling as p^L with length) is taken out and only the interaction is judged."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge_rule
from seqbench.sweeps.claims.results import FAILS, HOLDS
from seqbench.sweeps.claims.schema import Rule
from tests.sweeps.claims.judge_support import SOURCE, run_row

SWEPT = {"model.attention": ["none", "bahdanau"], "task.length": [5, 20]}


def table(acc: dict[tuple[str, int], list[float]], metric: str = "val/token_acc") -> pd.DataFrame:
    """(attention, length) -> the seeds' values (seed i is the i-th value), one row per run."""
    rows = []
    for (attn, length), seeds in acc.items():
        for seed, v in enumerate(seeds):
            rows.append(run_row(len(rows), seed, {"model.attention": attn, "task.length": length}, {metric: v}))
    return pd.DataFrame(rows)


def did(above: float) -> Rule:
    return Rule.model_validate(
        {
            "name": "the fall with length is larger without attention",
            "where": {"model.attention": "none", "task.length": "min"},
            "minus": {"model.attention": "none", "task.length": "max"},
            "versus": {
                "where": {"model.attention": "bahdanau", "task.length": "min"},
                "minus": {"model.attention": "bahdanau", "task.length": "max"},
            },
            "metric": "val/token_acc",
            "above": above,
            "no_control": "a test",
        }
    )


N = 8


def test_the_difference_in_differences_is_paired_by_seed():
    # without attention 0.99 -> 0.50 (a fall of 0.49); with it 1.0 -> 0.90 + seed/100 (a fall of 0.10 - seed/100):
    # the difference in differences is 0.39 + seed/100 on every seed
    t = table(
        {
            ("none", 5): [0.99] * N,
            ("none", 20): [0.50] * N,
            ("bahdanau", 5): [1.0] * N,
            ("bahdanau", 20): [0.90 + s / 100 for s in range(N)],
        }
    )
    res = judge_rule(did(0.3), t, SWEPT)
    assert res.per_seed and res.verdict == HOLDS  # token accuracy is bounded: judged per seed, 8 of 8 pass
    assert res.config == (
        "(model.attention=none, task.length=5 minus model.attention=none, task.length=20) minus "
        "(model.attention=bahdanau, task.length=5 minus model.attention=bahdanau, task.length=20)"
    )
    assert len(res.sides) == 4 and res.threshold_text().startswith("share of seeds with difference in differences")
    # a fall the same with and without attention (both 0.49): every seed's difference in differences is 0
    same = table({(a, n): [0.99 if n == 5 else 0.5] * N for a in ("none", "bahdanau") for n in (5, 20)})
    assert judge_rule(did(0.3), same, SWEPT).verdict == FAILS
    # while the plain difference (the fall without attention) would hold: the construction, not the claim
    plain = Rule.model_validate({**did(0.3).model_dump(exclude={"versus"}), "name": "fall"})
    assert judge_rule(plain, same, SWEPT).verdict == HOLDS


def test_a_seed_missing_from_a_side_is_left_out_of_the_pairs():
    t = table(
        {
            ("none", 5): [0.99] * N,
            ("none", 20): [0.50] * N,
            ("bahdanau", 5): [1.0] * N,
            ("bahdanau", 20): [0.95] * (N - 1),  # seed 7 has no run here
        }
    )
    res = judge_rule(did(0.3), t, SWEPT)
    assert res.estimate is not None and res.estimate.n == N - 1


def test_versus_needs_a_minus_and_the_linear_scale():
    base = did(0.3).model_dump(exclude_none=True)
    with pytest.raises(ValidationError, match="versus: is the second difference of a minus: rule"):
        Rule.model_validate({k: v for k, v in base.items() if k != "minus"})
    with pytest.raises(ValidationError, match="judged on the linear scale"):
        Rule.model_validate({**base, "scale": "log"})


def test_a_versus_configuration_that_is_not_swept_is_refused_at_load():
    from seqbench.sweeps.claims.load import parse_claim

    rule = did(0.3).model_dump(exclude_none=True, by_alias=True)
    rule["versus"]["where"] = {"model.attention": "dot", "task.length": "min"}
    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "factors",
        "base": {"task": {"name": "reverse", "vocab": 16}, "model": {"name": "seq2seq", "cell": "gru"}},
        "parameters": {"model.attention": {"values": ["none", "bahdanau"]}, "task.length": {"values": [5, 20]}},
        "seeds": 8,
        "profiles": {"quick": {}, "paper": {}},
        "expect": [rule],
    }
    with pytest.raises(UserError, match="dot"):
        parse_claim(raw, "c")
