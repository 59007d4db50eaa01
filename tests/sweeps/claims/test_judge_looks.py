"""Sequential looks, with the training of each look's seeds replaced by fabricated tables: a claim stops at
the first look that decides it, one no look decides runs every look and says so, and a claim runs only under
its registration (sweeps/claims/registry.py): changed on judged seeds, it is refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as st

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.stats import look_alphas
from seqbench.sweeps.claims.load import load_claim
from seqbench.sweeps.claims.results import HOLDS, INCONCLUSIVE
from tests.sweeps.claims.judge_support import SOURCE, fake_runs


# -- sequential looks ---------------------------------------------------------------------------
def _seq_claim(
    tmp_path: Path, looks: list[int], seeds: list[int] | None = None, name: str = "seq", below: float = 0.1
) -> Path:
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
        "expect": [{"name": "gru below 0.1", "where": {"model.name": "gru"}, "metric": "val/mse", "below": below}],
    }
    if seeds is not None:
        raw["seeds"] = seeds
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _fake_runs(monkeypatch, per_seed: dict[int, float]) -> list[list[int]]:
    """Replace the training of each look's seeds by a fabricated table; return the seeds asked for."""
    return fake_runs(monkeypatch, lambda s: [({"model.name": "gru"}, {"val/mse": per_seed[s]}, {})])


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
    single = run_claim(load_claim(_seq_claim(tmp_path / "other", [3])), "quick", tmp_path / "fresh", 1, None)
    assert one == [[0, 1, 2]] and single.verdict == HOLDS  # the same 3 seeds decide a one-look claim ...
    with pytest.raises(UserError, match="changed since registration"):  # ... but not after looks [3, 5, 8]
        run_claim(load_claim(_seq_claim(tmp_path, [3])), "quick", tmp_path / "fresh", 1, None)


def test_a_claim_no_look_decides_runs_every_look_and_says_so(tmp_path, monkeypatch):
    from seqbench.sweeps.claims.runner import run_claim

    noisy = {s: v for s, v in enumerate([0.05, 0.2, 0.08, 0.15, 0.04, 0.12, 0.09, 0.11])}
    asked = _fake_runs(monkeypatch, noisy)
    res = run_claim(load_claim(_seq_claim(tmp_path, [3, 5, 8])), "quick", tmp_path, 1, None)
    assert asked == [[0, 1, 2], [3, 4], [5, 6, 7]]
    assert res.verdict == INCONCLUSIVE and "undecided after look 3 of 3, n=8" in res.verdict_text()


def test_a_claim_changed_on_judged_seeds_is_refused_and_fresh_seeds_register_it_afresh(tmp_path, monkeypatch):
    from seqbench.sweeps.claims.registry import REGISTRY, load_registry
    from seqbench.sweeps.claims.runner import run_claim

    noisy = {s: v for s, v in enumerate([0.05, 0.2, 0.08, 0.15, 0.04, 0.12, 0.09, 0.11, 0.3, 0.02] * 11)}
    asked = _fake_runs(monkeypatch, noisy)
    res = run_claim(load_claim(_seq_claim(tmp_path, [3, 5])), "quick", tmp_path, 1, None)
    assert res.verdict == INCONCLUSIVE  # undecided after its last look: the temptation to add one, or move a rule
    (first,) = load_registry(tmp_path / REGISTRY).registrations
    assert (first.claim, first.seeds, first.looks, first.replaced) == ("seq", [0, 1, 2, 3, 4], [3, 5], "")
    assert res.study.endswith(first.digest)
    asked.clear()
    for looks, seeds, below in (
        ([3, 5, 8], None, 0.1),
        ([5], None, 0.1),
        ([3, 5], [0, 1, 2, 3, 9], 0.1),
        ([3, 5], None, 0.2),
    ):
        with pytest.raises(UserError) as e:  # more looks, other looks, a seed swapped, a threshold moved
            run_claim(load_claim(_seq_claim(tmp_path, looks, seeds, below=below)), "quick", tmp_path, 1, None)
        msg = str(e.value)
        assert "\n" not in msg and f"changed since registration {first.digest} on seeds 0-4" in msg
        assert "register it afresh with seeds: values no registration of it" in msg
    assert asked == []  # refused before anything trained
    again = run_claim(load_claim(_seq_claim(tmp_path, [3, 5])), "quick", tmp_path, 1, None)  # as registered: resumes
    assert again.study == res.study and len(load_registry(tmp_path / REGISTRY).registrations) == 1
    fresh = run_claim(
        load_claim(_seq_claim(tmp_path, [3, 5, 8], list(range(100, 108)), below=0.2)), "quick", tmp_path, 1, None
    )
    assert fresh.study != res.study and fresh.rules[0].interval.n == 8
    old, new = load_registry(tmp_path / REGISTRY).registrations
    assert old.replaced == f"replaced on {new.registered} by registration {new.digest}" and not new.replaced
    assert new.seeds == list(range(100, 108)) and new.looks == [3, 5, 8]
    other = run_claim(load_claim(_seq_claim(tmp_path, [3, 5], name="other")), "quick", tmp_path, 1, None)
    assert other.study.startswith("verify-other-")  # another claim on seeds 0-4: a registration of its own
    assert [r.claim for r in load_registry(tmp_path / REGISTRY).registrations] == ["seq", "seq", "other"]


def _per_seed_claim(tmp_path: Path, looks: list[int], name: str = "acc") -> Path:
    """A rule and its control, both on an accuracy (judged per seed, a sign test; Holm over the two)."""
    raw = yaml.safe_load(_seq_claim(tmp_path, looks, name=name).read_text())
    raw["controls"] = [{"name": "gru learns", "where": {"model.name": "gru"}, "metric": "val/acc", "above": 0.5}]
    raw["expect"] = [
        {
            "name": "gru at 0.33",
            "where": {"model.name": "gru"},
            "metric": "val/acc",
            "above": 0.33,
            "control": "gru learns",
        }
    ]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_claim_whose_looks_cannot_decide_it_is_refused_before_training_with_the_smallest_n(tmp_path, monkeypatch):
    """Issue 38 item 4: n=6 with a rule and a control judged per seed cannot decide even at 0.997 against 0.330
    on every seed (6 of 6: p = 2/64, 0.0625 after Holm); verify refuses it before anything trains and says
    that 7 seeds could. A look before the last that cannot decide refuses a new registration too (it only
    spends alpha); a registration made before the check keeps its looks (they are locked with its seeds)."""
    from seqbench.bench.commands.verify_plan import plan_text
    from seqbench.sweeps.claims.looks import smallest_deciding_n
    from seqbench.sweeps.claims.registry import REGISTRY, Registration, Registry
    from seqbench.sweeps.claims.runner import run_claim

    asked = _fake_runs(monkeypatch, {s: 0.997 for s in range(20)})
    for looks, says in (([6], "look 1 (n=6) cannot decide"), ([3, 8], "look 1 (n=3) cannot decide")):
        claim = load_claim(_per_seed_claim(tmp_path, looks))
        assert smallest_deciding_n(claim, "quick") == 7
        with pytest.raises(UserError) as e:
            run_claim(claim, "quick", tmp_path, 1, None)
        msg = str(e.value)
        assert "\n" not in msg and says in msg and "the smallest n that could decide" in msg and "is 7 seeds" in msg
        assert "REFUSED: " in plan_text([claim], "quick", tmp_path, 1)
    assert asked == [] and not (tmp_path / REGISTRY).exists()  # nothing trained, nothing registered
    claim = load_claim(_per_seed_claim(tmp_path, [3, 8]))  # registered before the check: keeps its first look
    Registry(
        tmp_path / REGISTRY, [Registration("acc", "quick", claim.digest("quick"), list(range(8)), [3, 8], "2026-11-26")]
    ).save()
    plan = plan_text([claim], "quick", tmp_path, 1)
    assert (
        "REFUSED" not in plan
        and "note: look 1 (n=3) cannot decide" in plan
        and "smallest n that could decide it at one look: 7" in plan
    )
    run_claim(claim, "quick", tmp_path, 1, None)
    assert asked[0] == [0, 1, 2]
