"""The GPU-related benchmark scripts' pieces that decide what they measure (not their timings)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from seqbench.sweeps.spec import parse_spec, trial_config
from tests.helpers import REPO


def load(name: str):
    if name == "overhead_trace":  # imports benchmarks/overhead.py as the script's neighbour
        load("overhead")
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_throughput_grid_is_a_valid_spec_of_identical_trials():
    tp = load("sweep_throughput")
    spec = parse_spec(tp.grid_spec("lstm", 32, trials=5, steps=40, batch_size=16), source="throughput")
    assert spec.method == "grid" and spec.budget() == 5
    cfgs = [trial_config(spec, point, 0, {}) for point in spec.grid()]
    assert len({c.optim.lr for c in cfgs}) == 5
    assert {(c.model.name, c.model.d_model, c.train.max_steps, c.train.batch_size) for c in cfgs} == {
        ("lstm", 32, 40, 16)
    }


def test_overhead_cuda_timing_is_the_mean_over_the_window():
    oh = load("overhead")
    ends = [(0.0, 0.0), (1.0, 0.5), (1.5, 0.75), (4.5, 1.0)]  # (wall, cpu) at four step ends
    # from step 1 to step 3: two steps, wall 3.5 s, cpu 0.5 s
    assert oh.step_times(ends, 1, cuda=True) == pytest.approx((1.75, 0.25))
    assert oh.step_times(ends, 1, cuda=False) == pytest.approx((1.75, 0.25))  # median of 0.5 and 3.0
    ends.append((4.6, 1.1))
    assert oh.step_times(ends, 1, cuda=False)[0] == pytest.approx(0.5)  # median of 0.5, 3.0, 0.1
    assert oh.step_times(ends, 1, cuda=True)[0] == pytest.approx(3.6 / 3)


def test_overhead_window_synchronises_only_at_its_edges(monkeypatch):
    oh = load("overhead")
    window, ends, synced = oh.Window(cuda=True, warmup=2, steps=6), [], []
    monkeypatch.setattr(oh.torch.cuda, "synchronize", lambda: synced.append(len(ends)))  # the step it precedes
    for _ in range(6):
        window.stamp(ends)
    assert synced == [2, 5] and len(ends) == 6


def test_overhead_trace_windows_hold_their_steps_alone():
    """The profiler sees steps [warmup, warmup + n) and cProfile the next n, nothing before or after."""
    tr = load("overhead_trace")
    import torch

    traced, a = tr.Traced(warmup=2, n=3, cuda=False), torch.ones(4, 4)

    def marker() -> None:
        torch.mm(a, a)

    for step in range(10):  # a "step" ends with the hook; what runs between two hooks is inside
        (torch.mm(a, a) if 2 <= step < 5 else torch.add(a, a)) if step < 5 else marker()
        traced.on_train_batch_end(None, None, None, None, step)
    ops = tr.ops(traced.prof, 3)
    assert ops["aten::mm"][0] == 1.0 and "aten::add" not in ops  # steps 2-4 alone
    fns = tr.functions(traced.cprof, 3)
    (calls,) = [c for k, (c, _) in fns.items() if k.endswith("(marker)")]
    assert calls == 1.0  # steps 5-7: three of the five marker calls, per step
    assert set(traced.wall) == {"profiler", "cProfile"}


def test_overhead_trace_table_puts_the_largest_difference_first(capsys):
    tr = load("overhead_trace")
    tr.diff_table("t", {"a": (1.0, 10.0), "b": (1.0, 50.0)}, {"a": (1.0, 9.0), "c": (2.0, 5.0)}, top=3)
    rows = [line.split()[-1] for line in capsys.readouterr().out.splitlines()[3:]]
    assert rows == ["b", "a", "c"]  # +50, +1, -5
