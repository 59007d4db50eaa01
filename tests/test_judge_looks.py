"""Sequential looks, with the training of each look's seeds replaced by fabricated tables: a claim stops at
the first look that decides it, one no look decides runs every look and says so, and judged seeds and
looks are locked."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as st

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.stats import look_alphas
from seqbench.sweeps.claims.judge import HOLDS, INCONCLUSIVE
from seqbench.sweeps.claims.load import load_claim
from tests.judge_support import SOURCE


# -- sequential looks ---------------------------------------------------------------------------
def _seq_claim(tmp_path: Path, looks: list[int], seeds: list[int] | None = None) -> Path:
    raw = {
        "question": "Does the gru learn?",
        "source": SOURCE,
        "figure": "factors",
        "base": {
            "task": {"name": "adding", "length": 8},
            "train": {"max_steps": 2},
            "tracking": {"wandb": "off"},
            "eval": {"test": False},
        },
        "metric": {"name": "val/mse", "goal": "minimize"},
        "parameters": {"model.name": {"values": ["gru"]}},
        "looks": looks,
        "profiles": {"quick": {}, "paper": {}},
        "expect": [{"name": "gru below 0.1", "where": {"model.name": "gru"}, "metric": "val/mse", "below": 0.1}],
    }
    if seeds is not None:
        raw["seeds"] = seeds
    path = tmp_path / "seq.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _fake_runs(monkeypatch, per_seed: dict[int, float]) -> list[list[int]]:
    """Replace the training of each look's seeds by a fabricated table; return the seeds asked for."""
    import seqbench.sweeps.claims.runner as runner

    asked: list[list[int]] = []

    def fake(claim, profile, out_dir, workers, storage, study, seeds, look):
        asked.append(list(seeds))
        rows = [
            {
                "trial": look,
                "state": "COMPLETE",
                "seed": s,
                "run_id": f"{study}-{s}",
                "status": "completed",
                "param.model.name": "gru",
                "final.val/mse": per_seed[s],
            }
            for s in seeds
        ]
        return pd.DataFrame(rows), []

    monkeypatch.setattr(runner, "_run_seeds", fake)
    return asked


# 0.05 +- noise: below 0.1 on the log scale; clear enough at n=5 but not at n=3 with alpha 0.05 / 3
SEQ = {0: 0.05, 1: 0.06, 2: 0.04, 3: 0.045, 4: 0.05, 5: 0.05, 6: 0.05, 7: 0.05}


def test_a_sequential_claim_stops_at_the_first_look_that_decides_it(tmp_path, monkeypatch):
    from seqbench.sweeps.claims.runner import run_claim

    logs = np.log([SEQ[s] for s in range(3)])
    p3 = st.ttest_1samp(logs, math.log(0.1), alternative="less").pvalue
    first = look_alphas([3, 5, 8], 0.05)[0]  # O'Brien-Fleming-type: 0.0014 at look 1, most alpha kept for later
    assert first / 2 < p3 < 0.05 / 2  # n=3 would hold at 95% with one look, not at look 1 of 3
    asked = _fake_runs(monkeypatch, SEQ)
    res = run_claim(load_claim(_seq_claim(tmp_path, [3, 5, 8])), "quick", tmp_path, 1, None)
    assert asked == [[0, 1, 2], [3, 4]]  # seeds appended in order; seeds 5-7 never trained
    assert res.verdict == HOLDS and res.verdict_text() == "holds (decided at look 2 of 3, n=5, alpha 0.0118)"
    assert res.rules[0].interval.n == 5
    one = _fake_runs(monkeypatch, SEQ)
    single = run_claim(load_claim(_seq_claim(tmp_path, [3])), "quick", tmp_path / "fresh", 1, None)
    assert one == [[0, 1, 2]] and single.verdict == HOLDS  # the same 3 seeds decide a one-look claim ...
    with pytest.raises(UserError, match="looks are locked once judged"):  # ... but not after looks [3, 5, 8]
        run_claim(load_claim(_seq_claim(tmp_path, [3])), "quick", tmp_path, 1, None)


def test_a_claim_no_look_decides_runs_every_look_and_says_so(tmp_path, monkeypatch):
    from seqbench.sweeps.claims.runner import run_claim

    noisy = {s: v for s, v in enumerate([0.05, 0.2, 0.08, 0.15, 0.04, 0.12, 0.09, 0.11])}
    asked = _fake_runs(monkeypatch, noisy)
    res = run_claim(load_claim(_seq_claim(tmp_path, [3, 5, 8])), "quick", tmp_path, 1, None)
    assert asked == [[0, 1, 2], [3, 4], [5, 6, 7]]
    assert res.verdict == INCONCLUSIVE and "undecided after look 3 of 3, n=8" in res.verdict_text()


def test_seeds_and_looks_are_locked_once_judged_and_fresh_seeds_start_a_fresh_study(tmp_path, monkeypatch):
    from seqbench.sweeps.claims.runner import run_claim

    noisy = {s: v for s, v in enumerate([0.05, 0.2, 0.08, 0.15, 0.04, 0.12, 0.09, 0.11, 0.3, 0.02] * 11)}
    _fake_runs(monkeypatch, noisy)
    res = run_claim(load_claim(_seq_claim(tmp_path, [3, 5])), "quick", tmp_path, 1, None)
    assert res.verdict == INCONCLUSIVE  # undecided after its last look: the temptation to add one
    lock = json.loads(next((tmp_path / "verify" / "seq").glob("quick-*-looks.json")).read_text())
    assert lock["studies"] == [{"study": res.study, "seeds": [0, 1, 2, 3, 4], "looks": [3, 5]}]
    for looks, seeds in (([3, 5, 8], None), ([5], None), ([3, 5], [0, 1, 2, 3, 9])):
        with pytest.raises(UserError) as e:  # more looks, other looks, a seed swapped: one line, the fix named
            run_claim(load_claim(_seq_claim(tmp_path, looks, seeds)), "quick", tmp_path, 1, None)
        msg = str(e.value)
        assert "\n" not in msg and "looks are locked once judged" in msg and f"at looks {looks}" in msg
        assert "start a fresh study with fresh seeds" in msg and "judged seeds 0-4 at looks [3, 5]" in msg
    again = run_claim(load_claim(_seq_claim(tmp_path, [3, 5])), "quick", tmp_path, 1, None)  # as locked: resumes
    assert again.study == res.study
    fresh = run_claim(load_claim(_seq_claim(tmp_path, [3, 5, 8], list(range(100, 108)))), "quick", tmp_path, 1, None)
    assert fresh.study.startswith(res.study + "-") and fresh.rules[0].interval.n == 8
