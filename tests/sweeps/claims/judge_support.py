"""Shared by the judge's tests (tests/sweeps/claims/test_judge*.py): a fabricated seed table as ``sweeps.table`` builds
it, a parsed claim over rnn and gru, and the rules most of them judge."""

from __future__ import annotations

import pandas as pd

from seqbench.bench.core.cost_format import CostMeasurement, CostMeta, CostPoint, CostSummary
from seqbench.sweeps.claims.load import parse_claim

SOURCE = {
    "cite": "Test 2024 Tab. 1",
    "paper": "A. Test 2024",
    "where": "Table 1",
    "metric": "MSE",
    "published": [{"what": "gru", "value": 5.3e-5, "unit": "MSE"}],
}
SWEPT = {"model.name": ["rnn", "gru"]}
BASE = 1 / 6


def run_row(n: int, seed: int, params: dict[str, object], finals: dict[str, float], **extra: object) -> dict:
    """Row ``n`` of a study table as ``sweeps.table`` builds it: a completed trial of ``seed`` at ``params``
    (``param.<key>`` columns) with ``finals`` (``final.<metric>`` columns); ``extra`` adds or replaces columns."""
    return {
        "trial": n,
        "state": "COMPLETE",
        "seed": seed,
        "run_id": f"r{n}",
        "status": "completed",
        **{f"param.{k}": v for k, v in params.items()},
        **{f"final.{k}": v for k, v in finals.items()},
        **extra,
    }


def table(values: dict[str, list], metric: str = "val/mse", baseline: float | None = BASE) -> pd.DataFrame:
    """One row per run as sweeps.table builds it; a value True/False also fills the solved flag."""
    rows = []
    for model, per_seed in values.items():
        for seed, v in enumerate(per_seed):
            row = {
                "trial": len(rows),
                "state": "COMPLETE",
                "seed": seed,
                "run_id": f"{model}s{seed}",
                "status": "completed",
                "param.model.name": model,
                f"final.{metric}": float(v),
                "solved": bool(v) if isinstance(v, bool) else False,
            }
            if baseline is not None:
                row[f"baseline.{metric}"] = baseline
            rows.append(row)
    return pd.DataFrame(rows)


def claim(expect: list[dict], controls: list[dict] | None = None, **extra) -> object:
    raw = {
        "question": "q?",
        "source": SOURCE,
        "figure": "factors",
        "base": {"task": {"name": "adding", "length": 8}},
        "parameters": {"model.name": {"values": ["rnn", "gru"]}},
        "seeds": 3,
        "profiles": {"quick": {}, "paper": {}},
        "expect": expect,
        **extra,
    }
    if "looks" in extra and "seeds" not in extra:
        del raw["seeds"]  # range(last look)
    if controls is not None:
        raw["controls"] = controls
    return parse_claim(raw, "c")


GRU_LEARNS = {"name": "gru learns", "where": {"model.name": "gru"}, "metric": "val/mse", "below": {"baseline": 0.1}}


def eight(*values: float) -> list[float]:
    """8 seeds cycling ``values``: a baseline multiple is judged per seed, and a sign test needs 6 or more
    seeds to decide at 95% (8 of 8: p = 0.0039; 3 of 3: 0.125)."""
    return [values[i % len(values)] for i in range(8)]


RNN_AT_BASE = {
    "name": "rnn at the baseline",
    "where": {"model.name": "rnn"},
    "metric": "val/mse",
    "between": [{"baseline": 0.9}, {"baseline": 1.1}],
    "control": "gru learns",
}


def _scores(values: dict[str, list[float]]) -> pd.DataFrame:
    return table(values, metric="score", baseline=None)


def fake_runs(monkeypatch, runs_of) -> list[list[int]]:
    """Replace the training of each look's seeds (``sweeps.claims.runner._run_seeds``) by a fabricated table:
    ``runs_of(seed)`` gives that seed's runs as (params, finals, extra columns); returns the seeds asked for,
    one list per look (an empty list: nothing trained)."""
    import seqbench.sweeps.claims.runner as runner

    asked: list[list[int]] = []

    def fake(claim, profile, out_dir, workers, storage, study, seeds, look):
        asked.append(list(seeds))
        rows = [
            run_row(look, s, params, finals, run_id=f"{study}-{s}-{i}", **extra)
            for s in seeds
            for i, (params, finals, extra) in enumerate(runs_of(s))
        ]
        return pd.DataFrame(rows), []

    monkeypatch.setattr(runner, "_run_seeds", fake)
    return asked


def cost_measurement(points: list[CostPoint]) -> CostMeasurement:
    """``points`` as ``bench.training.cost.measure_cost`` returns them (for a fake measurement in a cost claim's
    test): the sizes and fits, which a claim does not judge, are placeholders."""
    meta = CostMeta(32, 1, 16, 1, 0, "cpu", 1, "not measured (a test's points)", "test")
    fit = CostSummary("?", None, None, None, None, None, None)
    return CostMeasurement({}, meta, points, {m: fit for m in dict.fromkeys(p.model for p in points)})
