"""``seqbench runs``'s table (``reports/runs.py: listing``): settings read as they were typed."""

from __future__ import annotations

import math

import pandas as pd

from seqbench.reports.runs import listing


def test_a_whole_number_setting_reads_whole_though_pandas_made_its_column_float():
    runs = pd.DataFrame(
        [
            {"run_id": "a", "task": "copy", "model": "tcn", "config.model.kernel_size": 8, "config.optim.lr": 0.001},
            {
                "run_id": "b",
                "task": "copy",
                "model": "lstm",
                "config.model.kernel_size": math.nan,
                "config.optim.lr": 0.5,
            },
        ]
    ).assign(status="completed", seed=0, steps=10, train_time_s=1.0, primary_metric="val/acc", **{"final.val/acc": 0.5})
    assert runs["config.model.kernel_size"].dtype == float  # the missing value made it float
    text = listing(runs, runs, None)
    assert "kernel_size=8 " in text and "kernel_size=8.0" not in text
    assert "lr=0.001" in text and "lr=0.5" in text
