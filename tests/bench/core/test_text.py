"""The one table writer and the one duration formatter (``bench.core.text``) every command and
report prints through."""

from __future__ import annotations

import doctest
import math

import pytest

from seqbench.bench.core import text
from seqbench.bench.core.text import duration, markdown_table, text_table


def test_the_module_examples_hold():
    assert doctest.testmod(text).failed == 0


def test_terminal_table_pads_aligns_rules_cuts_and_strips():
    out = text_table(
        ["a", "long head", "n"],
        [["xyz", "1", 3], [None, math.nan, 2.5]],
        align="llr",
        indent="  ",
        sep=" | ",
        rule=True,
    )
    assert out.splitlines() == [
        "  a   | long head |   n",
        "  ----+-----------+----",
        "  xyz | 1         |   3",
        "  –   | –         | 2.5",
    ]
    assert text_table(["c"], [["x" * 80]], max_width=10).splitlines()[1] == "xxxxxxx..."


def test_terminal_table_wraps_long_cells_onto_the_rows_next_lines():
    out = text_table(
        ["rule", "v"],
        [["best of optim.lr per seed: 0.001 x2, 0.003 x1", "holds"], ["short", "fails"]],
        sep=" | ",
        max_width=20,
        wrap=True,
    )
    assert out.splitlines() == [
        "rule                 | v",
        "best of optim.lr per | holds",
        "seed: 0.001 x2,      |",
        "0.003 x1             |",
        "short                | fails",
    ]


def test_markdown_table_escapes_pipes_and_right_aligns():
    assert markdown_table(["k", "v"], [["a|b", 0.123456]], align="lr") == "| k | v |\n|---|---:|\n| a\\|b | 0.1235 |"
    with pytest.raises(ValueError, match="align"):
        markdown_table(["k"], [], align="c")


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (0.04, "0.0s"),
        (4.25, "4.2s"),
        (9.96, "10s"),
        (59.4, "59s"),
        (59.6, "1m00s"),
        (61, "1m01s"),
        (3599.6, "1h00m"),
        (7322, "2h02m"),
        (math.nan, "–"),
    ],
)
def test_duration(seconds, shown):
    assert duration(seconds) == shown


def test_a_notice_is_one_line_on_stderr_other_warnings_keep_their_format():
    import subprocess
    import sys

    code = (
        "import warnings\nfrom seqbench.bench.core.text import Notice\n"
        "warnings.warn('tcn: receptive field 7 < task dependency 50', Notice)\n"
        "warnings.warn('plain', UserWarning)\n"
    )
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    lines = err.splitlines()
    assert lines[0] == "warning: tcn: receptive field 7 < task dependency 50"
    assert "UserWarning: plain" in lines[1]  # Python's own format, file and line included
