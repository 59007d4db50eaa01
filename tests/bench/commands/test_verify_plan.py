"""``verify --plan``'s time: each look a sweep whose trials train one configuration's seeds in a row,
taken by the workers in the study's queue order, so the longest configuration bounds it."""

from __future__ import annotations

import json

import pytest

from seqbench.bench.commands.verify_plan import ClaimPlan, makespan, plan_text, step_seconds
from seqbench.sweeps.claims.load import load_claim
from tests.helpers import REPO


def test_makespan_takes_the_jobs_in_order_on_the_first_free_worker():
    assert makespan([8, 1, 1, 1, 1], 2) == 8  # the long job first: the short ones fill the other worker
    assert makespan([1, 1, 1, 1, 8], 2) == 10  # queued last, the long job runs alone at the end
    assert makespan([3, 3, 3], 1) == 9
    assert makespan([3, 5], 8) == 5  # idle workers shorten nothing
    assert makespan([], 2) == 0


def test_each_look_is_a_sweep_of_its_own_seeds():
    plan = ClaimPlan("c", "", config_s=[1.0, 1.0], looks=[7, 10], guessed=[])
    assert plan.seconds(2) == 7 and plan.seconds(2, every_look=True) == 10
    assert plan.seconds(1) == 14 and plan.seconds(1, every_look=True) == 20


def _run(out, i: int, mixer: str, step_s: float) -> None:
    d = out / "runs" / f"r{i}"
    d.mkdir(parents=True)
    results = {
        "task": "selective_copy",
        "model": "stack",
        "config": {"model": {"name": "stack", "mixer": mixer}},
        "status": "completed",
        "steps": 100,
        "wall_time_s": 100 * step_s,
    }
    (d / "results.json").write_text(json.dumps(results))


def test_step_seconds_tell_the_mixers_of_one_model_apart(tmp_path):
    _run(tmp_path, 0, "s4d", 0.015)
    _run(tmp_path, 1, "mamba", 0.005)
    got = step_seconds(tmp_path)
    assert got[("selective_copy", "stack", "s4d")] == pytest.approx(0.015)
    assert got[("selective_copy", "stack", "mamba")] == pytest.approx(0.005)


def test_the_longest_configuration_bounds_a_claim_whatever_the_workers(tmp_path):
    """selective_copy_ssm: S4D and Mamba at 2000 and 8000 steps, 10 seeds; S4D's 8000-step seeds in a row
    (10 x 120 s) outlast the other three configurations together (400 + 300 + 100 s) on the second worker."""
    _run(tmp_path, 0, "s4d", 0.015)
    _run(tmp_path, 1, "mamba", 0.005)
    claim = load_claim(REPO / "sweeps" / "claims" / "selective_copy_ssm.yaml")
    two = plan_text([claim], "quick", tmp_path, workers=2)
    assert "time: about 20m00s, all of it one configuration's 10 seeds one after another" in two, two
    one = plan_text([claim], "quick", tmp_path, workers=1)
    assert "time: about 33m20s\n" in one + "\n" and "one after another" not in one, one
