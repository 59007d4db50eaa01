"""Per-run diagnostics metrics a claim's rules can judge, added to its run table from each run's
``diagnostics.json`` (``diagnostics.gradients=true``; format in ``bench/core/diagnostics_format.py``)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from seqbench.bench.core.diagnostics_format import FILENAME, DiagnosticsFormatError, Record, read_diagnostics

DIAG_METRICS = (
    "diag/decay_rate@first",
    "diag/decay_rate@last",
    "diag/last_layer_grad_norm@first",
    "diag/global_grad_norm@first",
    "diag/global_grad_norm@max",
)
_LAYER = re.compile(r"\.layers\.(\d+)$")


def add_diagnostic_metrics(table: pd.DataFrame) -> pd.DataFrame:
    """Per run, from diagnostics.json (records in step order):

    - ``diag/decay_rate@first`` / ``@last``: fitted decay of ||dL/dx_t|| per step of distance at the
      first and last record with a through-time measurement (``ThroughTime.decay_rate``);
    - ``diag/last_layer_grad_norm@first``: the gradient norm of the last numbered layer group
      (``...layers.<k>``, largest k) at the first record (Xiong et al. 2020 Fig. 3: at initialisation);
    - ``diag/global_grad_norm@first`` / ``@max``: the global gradient norm (before clipping) at the first
      record and its largest over training (a non-finite norm counts as inf: it exploded)."""
    if table.empty or "run_dir" not in table.columns:
        return table
    cols: dict[str, list[float]] = {k: [] for k in DIAG_METRICS}
    for run_dir in table["run_dir"]:
        for k, v in diag_metrics(_records(run_dir)).items():
            cols[k].append(v)
    present = {k: v for k, v in cols.items() if not all(pd.isna(v))}
    return table.assign(**present) if present else table


def _records(run_dir: str) -> list[Record]:
    path = Path(str(run_dir)) / FILENAME
    if not (run_dir and path.is_file()):
        return []
    try:
        return list(read_diagnostics(path).records)
    except (OSError, DiagnosticsFormatError):
        return []


def diag_metrics(recs: list[Record]) -> dict[str, float]:
    """The per-run diagnostics metrics of :func:`add_diagnostic_metrics` from its records (NaN when absent)."""
    nan = float("nan")
    tt = [r.through_time for r in recs if r.through_time is not None]
    out = {
        "diag/decay_rate@first": tt[0].decay_rate() if tt else nan,
        "diag/decay_rate@last": tt[-1].decay_rate() if tt else nan,
        "diag/last_layer_grad_norm@first": nan,
        "diag/global_grad_norm@first": nan,
        "diag/global_grad_norm@max": nan,
    }
    if recs:
        layers = [(int(m.group(1)), v) for k, v in recs[0].layer_grad_norm.items() if (m := _LAYER.search(k))]
        if layers:
            out["diag/last_layer_grad_norm@first"] = float(max(layers)[1])
        norms = [r.global_grad_norm if math.isfinite(r.global_grad_norm) else math.inf for r in recs]
        out["diag/global_grad_norm@first"] = float(recs[0].global_grad_norm)
        out["diag/global_grad_norm@max"] = float(max(norms))
    return out
