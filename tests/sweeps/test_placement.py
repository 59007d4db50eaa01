"""Sweep workers on GPUs: round-robin CUDA_VISIBLE_DEVICES per worker process; CPU unchanged."""

from __future__ import annotations

import json

import pytest
import torch

from seqbench.bench.cli import main
from seqbench.bench.core.errors import UserError
from seqbench.sweeps import processes as runner
from tests.helpers import run_cli


class FakePopen:
    """Records each worker's environment instead of starting it."""

    started: list[dict[str, str]] = []

    def __init__(self, args, env=None, **kw):
        FakePopen.started.append(dict(env or {}))
        self.pid = 2**22 + len(FakePopen.started)  # above Linux's largest pid_max: no process a stop reaches

    def wait(self, timeout=None):
        return 0


@pytest.fixture
def popen(monkeypatch):
    FakePopen.started = []
    monkeypatch.setattr(runner.subprocess, "Popen", FakePopen)
    return FakePopen.started


def job(tmp_path) -> runner.Job:
    return runner.Job(spec={}, spec_path="x.yaml", study="s", storage=None, out_dir=str(tmp_path))


@pytest.mark.parametrize(
    "n, devices, visible, expected",
    [
        (4, None, ["0", "1"], ["0", "1", "0", "1"]),  # every visible GPU, two workers each
        (3, None, ["0"], ["0", "0", "0"]),  # three workers share one GPU
        (3, [1], ["0", "1"], ["1", "1", "1"]),
        (5, [2, 0], ["0", "1", "2"], ["2", "0", "2", "0", "2"]),  # the order given is the order used
        # an inherited CUDA_VISIBLE_DEVICES: index i means this process's cuda:i, i.e. the i-th entry
        (2, [0, 1], ["5", "GPU-8f3c"], ["5", "GPU-8f3c"]),
        (1, [1], ["0", "1"], ["1"]),
    ],
)
def test_round_robin_placement(n, devices, visible, expected):
    assert runner.placement(n, devices, visible) == expected


def test_cpu_placement_leaves_workers_alone():
    assert runner.placement(3, None, []) == [None, None, None]


@pytest.mark.parametrize(
    "devices, visible, message",
    [
        ([0], [], r"--devices: no CUDA device is visible here \(torch.cuda.device_count\(\) is 0\); drop --devices"),
        ([2], ["0", "1"], r"--devices: 2 is not a visible CUDA device; choose from 0..1"),
        ([-1], ["0", "1"], r"--devices: -1 is not a visible CUDA device; choose from 0..1"),
        ([0, 0], ["0", "1"], r"--devices: 0 is listed twice"),
    ],
)
def test_bad_devices_are_refused(devices, visible, message):
    with pytest.raises(UserError, match=message):
        runner.placement(2, devices, visible)


def test_each_worker_process_gets_its_device(popen, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,7")  # what the sweep itself was given
    monkeypatch.setattr(runner, "visible_cuda_devices", lambda: ["3", "7"])
    assert runner.run_workers(job(tmp_path), 3) == 0
    assert [e["CUDA_VISIBLE_DEVICES"] for e in popen] == ["3", "7", "3"]
    assert all(runner.Job(**json.loads(e[runner.JOB_ENV])).study == "s" for e in popen)


def test_explicit_placement_reaches_the_workers(popen, tmp_path):
    assert runner.run_workers(job(tmp_path), 2, ["1", "1"]) == 0
    assert [e["CUDA_VISIBLE_DEVICES"] for e in popen] == ["1", "1"]


def test_cpu_workers_are_forked_from_this_process_not_started_afresh(popen, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "visible_cuda_devices", lambda: [])
    forked = []
    monkeypatch.setattr(runner, "fork_workers", lambda job, n: forked.append(n) or 0)
    monkeypatch.setattr(runner, "can_fork", lambda: True)
    assert runner.run_workers(job(tmp_path), 2) == 0
    assert forked == [2] and popen == []  # no interpreter started: nobody imports torch again


def test_cpu_workers_started_afresh_inherit_the_environment_unchanged(popen, tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(runner, "visible_cuda_devices", lambda: [])
    monkeypatch.setattr(runner, "can_fork", lambda: False)  # e.g. another thread runs here
    assert runner.run_workers(job(tmp_path), 2) == 0
    assert len(popen) == 2 and all("CUDA_VISIBLE_DEVICES" not in e for e in popen)


def test_visible_devices_keep_inherited_entries(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5,9")
    assert runner.visible_cuda_devices() == ["2", "5"]  # CUDA uses as many entries as it found devices
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runner.visible_cuda_devices() == ["0", "1"]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert runner.visible_cuda_devices() == []


def test_malformed_devices_flag_is_one_line(capsys):
    assert main(["sweep", "sweeps/demo.yaml", "--devices", "0,x"]) == 2
    assert capsys.readouterr().err.strip() == ("error: --devices: '0,x' is not a list of device indices; give e.g. 0,1")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_devices_without_cuda_exits_2_before_any_work(tmp_path):
    r = run_cli("sweep", "sweeps/demo.yaml", "--workers", "2", "--devices", "0", "--out-dir", str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: --devices: no CUDA device is visible here (torch.cuda.device_count() is 0); "
        "drop --devices to run the workers on the CPU"
    ]
    assert not (tmp_path / "optuna.journal").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_worker_sees_only_its_gpu(tmp_path):
    """On a real GPU: a sweep with --devices 0 runs its worker on cuda with one visible device."""
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "base: {task: {name: copy, n_symbols: 2, alphabet: 3, delay: 4}, model: {name: lstm, "
        "d_model: 16}, train: {max_steps: 2, val_every: 2, val_batches: 1, batch_size: 4}, "
        "eval: {test: false}, tracking: {wandb: 'off'}}\nmethod: grid\n"
        "metric: {name: val/acc, goal: maximize}\nparameters: {optim.lr: {values: [0.001, 0.002]}}\n"
    )
    r = run_cli("sweep", str(spec), "--workers", "2", "--devices", "0", "--out-dir", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert "CUDA_VISIBLE_DEVICES per worker: " in r.stdout
    results = [json.loads(p.read_text()) for p in (tmp_path / "o" / "runs").glob("*/results.json")]
    assert len(results) == 2 and all(res["device"].startswith("cuda") for res in results)
