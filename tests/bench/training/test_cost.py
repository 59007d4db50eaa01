"""seqbench cost: settings, exponent fit, the sweep's files, clean stops, and the ordering of exponents."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import pytest

from seqbench.bench.cli import main
from seqbench.bench.core.cost_format import CostMeasurement, CostMeta, CostPoint, CostSummary
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS
from seqbench.bench.training.cost import CostConfig, fit_exponent, measure_cost, parse_cost_config
from seqbench.reports.cost import write_outputs
from tests.helpers import run_cli


def test_settings_parse_and_validate():
    c = parse_cost_config(["models=rnn,lstm", "lengths=256,64,128", "d_model=32", "isolate=false"])
    assert c.models == ["rnn", "lstm"] and c.lengths == [64, 128, 256] and c.d_model == 32 and not c.isolate
    with pytest.raises(UserError, match=r"models: unknown model 'nope'; choose from .*rnn"):
        parse_cost_config(["models=rnn,nope"])
    with pytest.raises(UserError, match="repeat: unknown field; allowed: models, lengths"):
        parse_cost_config(["repeat=3"])
    with pytest.raises(UserError, match="key=value"):
        parse_cost_config(["lengths"])


def test_default_models_are_those_that_declare_a_complexity_class():
    declared = [e.name for e in MODELS if e.config_cls.complexity is not None]
    assert CostConfig().models == declared
    assert {"rnn", "lstm", "gru", "transformer", "tcn"} <= set(declared)  # the shipped families' table
    assert MODELS.get("transformer").config_cls.complexity == ("O(T²·d + T·d²)", 2)


def test_n_layers_is_refused_for_a_model_without_layers():
    assert parse_cost_config(["models=lstm,tcn", "n_layers=1"]).n_layers == 1
    assert parse_cost_config(["models=lstm,gru", "n_layers=2"]).n_layers == 2
    with pytest.raises(
        UserError,
        match=r"^n_layers: tcn has no n_layers \(its fields: name, d_model, .*n_levels.*\); "
        r"leave n_layers at 1 or leave tcn out of models$",
    ):
        parse_cost_config(["models=lstm,tcn", "n_layers=2"])


def test_unknown_model_is_a_one_line_cli_error(tmp_path, capsys):
    assert main(["cost", "models=rnn,transformerr", "lengths=8,16", f"out_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and err.startswith("error: models: unknown model 'transformerr'")


def test_fit_exponent_recovers_power_laws():
    ts = [64, 128, 256, 512]
    assert fit_exponent(ts, [3 * t**2 for t in ts]) == pytest.approx(2.0)
    assert fit_exponent(ts, [5 + 0.0 * t for t in ts]) == pytest.approx(0.0)
    assert fit_exponent([64], [1.0]) is None


def test_sweep_writes_table_and_figures(tmp_path):
    c = CostConfig(
        models=["rnn", "gru"],
        lengths=[8, 32],
        d_model=8,
        batch_size=2,
        repeats=2,
        warmup=1,
        device="cpu",
        isolate=False,
        out_dir=tmp_path,
    )
    result = measure_cost(c, progress=lambda s: None)
    paths = write_outputs(result, tmp_path)
    assert {p.name for p in paths} == {"cost.csv", "cost.md", "cost.json", "cost_time.html"}  # no CPU memory in-process
    rows = list(csv.DictReader((tmp_path / "cost.csv").open()))
    assert [(r["model"], int(r["length"]), r["status"]) for r in rows] == [
        ("rnn", 8, "ok"),
        ("rnn", 32, "ok"),
        ("gru", 8, "ok"),
        ("gru", 32, "ok"),
    ]
    assert all(float(r["time_ms"]) > 0 for r in rows)
    md = (tmp_path / "cost.md").read_text()
    assert "O(T·d²)" in md and "| rnn | 8 | ok |" in md
    assert json.loads((tmp_path / "cost.json").read_text())["summary"]["gru"]["time_exponent"] is not None


def test_time_bound_stops_a_model_sweep_cleanly(tmp_path):
    c = CostConfig(
        models=["lstm"],
        lengths=[8, 16, 32],
        d_model=8,
        batch_size=2,
        repeats=1,
        warmup=0,
        device="cpu",
        isolate=False,
        max_step_s=1e-9,
        out_dir=tmp_path,
    )
    rows = measure_cost(c, progress=lambda s: None).rows
    assert [r.status for r in rows] == ["ok", "skipped", "skipped"]
    assert "max_step_s" in (rows[1].detail or "")


@pytest.mark.slow
def test_isolated_cpu_memory_grows_with_length(tmp_path):
    p = run_cli(
        "cost",
        "models=lstm",
        "lengths=128,2048",
        "d_model=64",
        "batch_size=8",
        "repeats=1",
        "warmup=0",
        "device=cpu",
        f"out_dir={tmp_path}",
    )
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader((tmp_path / "cost.csv").open()))
    mem = [float(r["peak_mem_mib"]) for r in rows]
    assert all(r["status"] == "ok" for r in rows) and mem[1] > 4 * max(mem[0], 1.0)
    assert (tmp_path / "cost_memory.html").exists()


def test_attention_cost_grows_faster_in_length_than_rnn_on_a_counted_clock(tmp_path, monkeypatch):
    """The sweep's timing path with a clock that counts instead of timing (a busy CI machine cannot bend it):
    ``perf_counter`` reads the FLOPs torch's FlopCounterMode has counted so far, so a step's "time" is the work
    it did. Attention's quadratic term must show in the fitted exponent, the RNN's work stays linear in T.
    Wall times are a benchmark's (``seqbench cost``, the complexity_exponents claim), never a test's."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from seqbench.bench.training import cost

    counter = FlopCounterMode(display=False)
    monkeypatch.setattr(cost.time, "perf_counter", lambda: counter.get_total_flops() * 1e-12)  # 1 TFLOP "a second"
    c = CostConfig(
        models=["rnn", "transformer"],
        lengths=[256, 1024],
        d_model=16,
        batch_size=2,
        repeats=2,
        warmup=0,
        device="cpu",
        isolate=False,
        out_dir=tmp_path,
    )
    with (
        counter,
        sdpa_kernel(SDPBackend.MATH),
    ):  # the CPU's fused attention kernel has no FLOP formula; its math form does
        rows = measure_cost(c, progress=lambda s: None).rows
    exp = {
        m: fit_exponent([r.length for r in rows if r.model == m], [r.time_ms_min or 0.0 for r in rows if r.model == m])
        for m in c.models
    }
    assert all(r.status == "ok" and (r.time_ms_min or 0) > 0 for r in rows), rows
    assert exp["rnn"] == pytest.approx(1.0, abs=0.02) and exp["transformer"] > 1.5, exp


def test_an_in_process_out_of_memory_is_a_point_status_and_other_errors_propagate(monkeypatch):
    import torch

    from seqbench.bench.training import cost

    def oom(model, length, c):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(cost, "measure_point", oom)
    setup = cost.PointSetup(d_model=8, n_layers=1, batch_size=2, repeats=1, warmup=0, device="cuda", threads=1)
    point = cost.run_point("lstm", 64, setup, isolate=True, timeout_s=1.0)
    assert point.status == "oom" and "Tried to allocate" in (point.detail or "") and point.length == 64

    def broken(model, length, c):
        raise RuntimeError("out of memory, says a message that is not the allocator's")

    monkeypatch.setattr(cost, "measure_point", broken)
    with pytest.raises(RuntimeError, match="not the allocator"):
        cost.run_point("lstm", 64, replace(setup, device="cpu"), isolate=False, timeout_s=1.0)


def test_cost_json_keeps_its_shape_and_reads_back():
    """cost.json (and a cost claim's cached replicate) is ``{config, meta, rows, summary}`` with rows as they
    always were: an ok point its numbers (peak_mem_mib null when unmeasured), any other point its detail."""
    meta = CostMeta(8, 1, 2, 1, 0, "cpu", 1, "not measured (isolate=false)", "2.x")
    m = CostMeasurement(
        {"models": ["lstm"], "lengths": [8, 16]},
        meta,
        [
            CostPoint("lstm", 8, "ok", time_ms=1.5, time_ms_min=1.25, tokens_per_s=10.0),
            CostPoint("lstm", 16, "skipped", detail="after oom at T=8"),
        ],
        {"lstm": CostSummary("O(T·d²)", 1, None, None, None, None, "after oom at T=8")},
    )
    d = m.to_json()
    assert list(d) == ["config", "meta", "rows", "summary"]
    assert list(d["meta"]) == [
        "d_model", "n_layers", "batch_size", "repeats", "warmup", "device", "threads", "memory_method", "torch"
    ]  # fmt: skip
    assert d["rows"] == [
        {"model": "lstm", "length": 8, "status": "ok", "time_ms": 1.5, "time_ms_min": 1.25, "peak_mem_mib": None,
         "tokens_per_s": 10.0},
        {"model": "lstm", "length": 16, "status": "skipped", "detail": "after oom at T=8"},
    ]  # fmt: skip
    assert list(d["summary"]["lstm"]) == [
        "complexity", "expected_time_exponent", "time_exponent", "time_exponent_upper", "memory_exponent",
        "memory_exponent_upper", "stopped",
    ]  # fmt: skip
    assert CostMeasurement.from_json(json.loads(json.dumps(d))) == m
