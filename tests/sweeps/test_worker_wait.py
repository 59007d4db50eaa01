"""A worker with nothing to take waits on the trials others run: it looks again after
``worker.WAIT_FIRST`` seconds, doubling up to its poll interval, and starts over after each trial it takes
(a fake clock: nothing here sleeps)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from seqbench.sweeps import worker


@pytest.fixture
def fake(monkeypatch):
    slept: list[float] = []
    answers: list = []
    monkeypatch.setattr(worker.time, "sleep", slept.append)
    monkeypatch.setattr(worker, "reap_stale", lambda *a, **k: None)
    monkeypatch.setattr(worker, "_say_waiting", lambda *a, **k: None)
    monkeypatch.setattr(worker, "next_trial", lambda study, spec: answers.pop(0))
    monkeypatch.setattr(worker, "start_line", lambda *a: "start")
    monkeypatch.setattr(worker, "_params_or_none", lambda *a: {})
    monkeypatch.setattr(worker, "run_trial", lambda *a: None)
    study = SimpleNamespace(get_trials=lambda **k: [])
    spec = SimpleNamespace(timeout=None, budget=lambda: 4)
    return slept, answers, study, spec


def run(answers, study, spec, heartbeat: float = 10.0) -> int:
    job = SimpleNamespace(heartbeat=heartbeat, grace=3 * heartbeat)
    return worker._loop(job, study, spec, max_trials=None, timeout=None)


def test_a_waiting_worker_looks_again_soon_then_less_often(fake):
    slept, answers, study, spec = fake
    answers += [None] * 8 + [False]
    assert run(answers, study, spec) == 0
    assert slept == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]  # capped at the poll, heartbeat / 2


def test_the_wait_starts_over_after_a_trial(fake):
    slept, answers, study, spec = fake
    answers += [None, None, SimpleNamespace(number=0), None, False]
    assert run(answers, study, spec) == 1
    assert slept == [0.05, 0.1, 0.05]


def test_a_short_heartbeat_caps_the_wait_lower(fake):
    slept, answers, study, spec = fake
    answers += [None] * 4 + [False]
    run(answers, study, spec, heartbeat=0.6)
    assert slept == [0.05, 0.1, 0.2, 0.3]
