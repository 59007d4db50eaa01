"""``same_value``: how the judge, the ladders, ``exclude:`` and the card's frontiers match a run's recorded
setting to a swept value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from seqbench.bench.core.settings import same_value


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.1 + 0.2, 0.3),  # a value read back through float rounding
        (np.float64(1e-3), 0.001),
        (np.int64(3), 3),
        (4000, 4000.0),
        (None, None),
        (math.nan, None),  # a table's missing value is a swept null
        (True, True),
        (np.bool_(False), False),  # a table's bool column
        ("mamba", "mamba"),
    ],
)
def test_the_same_setting(a, b):
    assert same_value(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (True, 1),  # a bool is not the number 1, either way round
        (1, True),
        (np.bool_(True), 1),
        (0.0, False),
        (np.int64(0), np.bool_(False)),
        (0.0, None),
        (None, 0),
        (3, 4),
        (True, False),
        ("mamba", "mamba2"),
    ],
)
def test_not_the_same_setting(a, b):
    assert not same_value(a, b)


def test_a_tables_bool_column_matches_the_swept_bool():
    col = pd.Series([True, False, True])
    assert col.map(lambda v: same_value(v, True)).tolist() == [True, False, True]
    assert not col.map(lambda v: same_value(v, 1)).any()
