"""The answer a report opens with (``reports.headline``), from fabricated run tables whose numbers
are known: the winner, the configurations at the memoryless baseline, the winner against each rival
(by the judge's test for the metric: a sign test for an accuracy, the ratio for a loss), a winner below
the baseline, one seed, and ties."""

from __future__ import annotations

import pandas as pd
import pytest

from seqbench.reports.comparisons import ranked, versus_baseline
from seqbench.reports.headline import headline
from seqbench.sweeps.table import Objective
from tests.report_support import model_delay_table

ACC = Objective("val/acc", "maximize")
LOSS = Objective("val/loss", "minimize")


def table(values: dict[tuple[str, int], list[float]], baseline: float = 0.25, metric: str = "val/acc") -> pd.DataFrame:
    """One trial per (model, delay), one run per seed value, the same baseline everywhere."""
    return model_delay_table(values, metric, baseline)


DEMO = {
    ("rnn", 12): [0.24, 0.25, 0.23],
    ("rnn", 40): [0.26, 0.26, 0.27],
    ("lstm", 12): [0.97, 0.98, 0.99],
    ("lstm", 40): [0.90, 0.94, 0.92],
    ("transformer", 12): [0.99, 1.0, 0.98],
    ("transformer", 40): [1.0, 1.0, 0.99],
}


def test_the_demo_answer_names_the_winner_the_baseline_model_and_the_paired_gaps():
    lines = headline(table(DEMO), ACC)
    assert lines[0] == "Best: transformer at task.delay=40, val/acc 0.997 [0.982, 1] n=3."  # an accuracy stays <= 1
    assert lines[1] == (
        "rnn stays at the memoryless baseline at every task.delay "
        "(0.24 at task.delay=12, 0.263 at task.delay=40 vs 0.25)."
    )
    assert lines[2] == (
        "Above the baseline: transformer 0.99 at task.delay=12, 0.997 at task.delay=40; "
        "lstm 0.98 at task.delay=12, 0.92 at task.delay=40."
    )
    paired = lines[3]
    # an accuracy is judged per seed, as seqbench verify judges it: the seeds ahead and an exact sign test
    assert paired.startswith(
        "Paired on the same seeds (val/acc, winner against rival, per seed: sign test): transformer vs lstm "
        "at task.delay=12 ahead on 2 of 3 seeds (+0.01, sign test p=1); "
    )
    # transformer vs rnn at delay 40: differences 0.74, 0.74, 0.72 -> mean 0.733, every seed ahead
    assert "transformer vs rnn at task.delay=40 ahead on 3 of 3 seeds (+0.733, sign test p=0.25)" in paired
    assert "transformer vs lstm at task.delay=40 ahead on 3 of 3 seeds (+0.0767, sign test p=0.25)" in paired
    assert "[" not in paired and "d=" not in paired  # no t interval, no Cohen's d on an accuracy
    assert paired.endswith(
        "A sign test over 3 seeds cannot decide at 5%: 3 of 3 give p=0.25 at best; 6 untied seeds can."
    )
    assert len(lines) == 4


def test_a_winner_below_the_baseline_is_not_called_a_winner():
    lines = headline(table({("lstm", 5): [0.107], ("gru", 5): [0.09]}, baseline=0.125), ACC)
    assert lines[0] == (
        "No configuration beats the memoryless baseline of val/acc 0.125: the best, lstm, "
        "reaches 0.107 (n=1, no interval)."
    )
    assert lines[1] == "Paired on the same seeds (val/acc, winner minus rival): lstm vs gru +0.017 (n=1: no interval)."


def test_one_seed_states_no_interval_and_every_configuration_above_the_baseline():
    lines = headline(table({("lstm", 5): [0.9], ("gru", 5): [0.8]}), ACC)
    assert lines == [
        "Best: lstm, val/acc 0.9 (n=1, no interval).",
        "Every configuration is above the memoryless baseline (val/acc 0.25).",
        "Above the baseline: gru 0.8.",
        "Paired on the same seeds (val/acc, winner minus rival): lstm vs gru +0.1 (n=1: no interval).",
    ]


def test_ties_are_named_together_and_their_difference_is_exactly_zero():
    lines = headline(table({("lstm", 5): [1.0, 1.0], ("transformer", 5): [1.0, 1.0], ("rnn", 5): [0.25, 0.26]}), ACC)
    assert lines[0] == "Best (tied): lstm and transformer, val/acc 1 on all 2 seeds."  # no zero-width [1, 1]
    assert lines[1] == "rnn stays at the memoryless baseline (0.255 vs 0.25)."
    assert "lstm vs transformer the same on each of 2 seeds" in lines[2]
    assert "lstm vs rnn ahead on 2 of 2 seeds (+0.745, sign test p=0.5)" in lines[2]


def test_a_minimised_metric_reads_lower_as_better():
    lines = headline(
        table({("lstm", 5): [0.1, 0.2, 0.15], ("rnn", 5): [1.38, 1.39, 1.37]}, baseline=1.386, metric="val/loss"), LOSS
    )
    # a loss as the judge states it: the geometric mean, its interval from t on the logs (above 0)
    assert lines[0].startswith("Best: lstm, val/loss geo-mean 0.144 [")
    assert lines[1] == "rnn stays at the memoryless baseline (1.38 vs 1.39)."
    # and a pair as the geometric mean of the per-seed ratios lstm / rnn (0.1/1.38, 0.2/1.39, 0.15/1.37), t on logs
    assert lines[2] == (
        "Paired on the same seeds (val/loss, winner over rival: ratio, t on logs): "
        "lstm vs rnn x0.105 [0.0443, 0.246] n=3."
    )


def test_part_of_an_architecture_at_the_baseline_and_none_without_a_baseline():
    t = table(
        {("rnn", 12): [0.9, 0.92], ("rnn", 40): [0.25, 0.26], ("lstm", 12): [0.95, 0.96], ("lstm", 40): [0.9, 0.91]}
    )
    assert headline(t, ACC)[1] == (
        "rnn is at the memoryless baseline (0.255 at task.delay=40 vs 0.25) and above it elsewhere."
    )
    no_base = headline(t.drop(columns=["baseline.val/acc"]), ACC)
    assert not any("baseline" in line for line in no_base)
    assert no_base[1] == (
        "The others: lstm 0.955 at task.delay=12, 0.905 at task.delay=40; "
        "rnn 0.91 at task.delay=12, 0.255 at task.delay=40."
    )
    assert headline(t.iloc[0:0], ACC) == []


@pytest.mark.parametrize(
    "mean, lo, hi, expected",
    [
        (0.26, 0.255, 0.265, "at"),  # within 5% of the baseline
        (0.30, 0.20, 0.40, "at"),  # the interval reaches it
        (0.30, 0.29, 0.31, "above"),
        (0.10, 0.09, 0.11, "below"),
        (float("nan"), 0, 0, None),
    ],
)
def test_versus_baseline(mean, lo, hi, expected):
    assert versus_baseline(mean, lo, hi, 0.25, maximize=True) == expected


def test_the_ranked_table_marks_rows_at_or_below_the_baseline():
    t = ranked(table(DEMO), ACC)
    marks = dict(zip(zip(t["model.name"], t["task.delay"]), t["baseline"]))
    assert marks[("rnn", 12)] == "at 0.25" and marks[("rnn", 40)] == "at 0.25"
    assert marks[("lstm", 40)] == "" and marks[("transformer", 12)] == ""
