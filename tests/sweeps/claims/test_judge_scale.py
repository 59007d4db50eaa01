"""A rule's scale comes from its metric (issue 38 item 1): a ``minus:`` rule on a log-scale metric (loss,
mse, bpc) judges the seed-paired ratio where/minus unless it says ``scale: linear``, and a rule whose
thresholds or name read as a ratio while it would be judged as a difference is refused when it loads.

Before: scheduled_sampling's "teacher-forced val loss below 0.97x scheduled sampling's" was a ``minus:``
rule without ``scale: log``, so it was tested as a difference below 0.97 nats, and a teacher-forced loss
0.5 nats WORSE held with p ~ 1e-13. The first test is that case."""

from __future__ import annotations

import pytest

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.judge import judge
from seqbench.sweeps.claims.results import FAILS, HOLDS
from tests.sweeps.claims.judge_support import SWEPT, claim, table

RNN = [0.70, 0.72, 0.69, 0.71, 0.73, 0.70, 0.72, 0.71, 0.69, 0.70]
JITTER = [0.004, -0.006, 0.001, 0.007, -0.003, 0.0, -0.005, 0.002, 0.006, -0.004]  # seeds never pair exactly


def _loss_rule(**over) -> dict:
    return {
        "name": "gru's val loss below that of rnn (3% lower or more)",
        "where": {"model.name": "gru"},
        "minus": {"model.name": "rnn"},
        "metric": "val/loss",
        "below": 0.97,
        "no_control": "both arms are the claim's own models",
        **over,
    }


def _judge(rule: dict, gru: list[float]) -> tuple[str, object]:
    c = claim([rule], seeds=10)
    verdict, (r,) = judge(c, table({"rnn": RNN, "gru": gru}, metric="val/loss", baseline=None), SWEPT, "quick")
    return verdict, r


def test_a_log_metrics_minus_rule_is_a_ratio_so_half_a_nat_worse_fails_below_097():
    worse = [v + 0.5 + j for v, j in zip(RNN, JITTER)]
    verdict, r = _judge(_loss_rule(), worse)
    assert verdict == FAILS and r.verdict == FAILS and r.ratio
    assert (
        r.measured().startswith("ratio ") and "< 0.97" in r.threshold_text()
    )  # shown as where/minus, not as a difference in nats
    better = [0.9 * v + j for v, j in zip(RNN, JITTER)]
    assert _judge(_loss_rule(), better)[0] == HOLDS


def test_scale_linear_keeps_a_difference_in_nats_and_judges_it_so():
    worse = [
        v + 0.076 + j for v, j in zip(RNN, JITTER)
    ]  # the reproduction's +0.076 nats: a difference below 0.1 nats holds
    rule = _loss_rule(name="gru's val loss at most 0.1 nats above rnn's", below=0.1, scale="linear")
    verdict, r = _judge(rule, worse)
    assert verdict == HOLDS and not r.ratio


@pytest.mark.parametrize(
    ("over", "says"),
    [
        ({"below": 0.0}, "thresholds are ratios > 0 (got 0.0); for a difference say scale: linear"),
        (
            {"scale": "linear", "name": "teacher forcing's loss below 0.97x scheduled sampling's"},
            "the name reads as a ratio ('below 0.97x')",
        ),
        (
            {"versus": {"where": {"model.name": "gru"}, "minus": {"model.name": "rnn"}}},
            "versus: val/loss is a log-scale metric",
        ),
    ],
)
def test_a_threshold_or_name_that_reads_as_a_ratio_on_a_difference_is_refused_at_load(over, says):
    rule = _loss_rule(**over)
    with pytest.raises(UserError) as e:
        claim([rule], seeds=10)
    assert says in str(e.value) and "\n" not in str(e.value)
