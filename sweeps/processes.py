"""Worker processes on one machine: how many, on which CUDA device, and how they start.

Each local worker is a process of its own (``seqbench sweep --workers K``); on a GPU machine each
gets its ``CUDA_VISIBLE_DEVICES`` entry round-robin (``placement``), so several workers share a
device when there are more workers than devices.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.study import Job
from seqbench.sweeps.worker import worker

JOB_ENV = "SEQBENCH_SWEEP_JOB"  # how run_workers hands a Job to its worker processes
CUDA_ENV = "CUDA_VISIBLE_DEVICES"


def visible_cuda_devices() -> list[str]:
    """This process's CUDA devices as ``CUDA_VISIBLE_DEVICES`` entries (entry i is ``cuda:i`` here).

    Entries of an inherited ``CUDA_VISIBLE_DEVICES`` (indices, UUIDs or MIG ids) are kept as they are,
    so a worker handed entry i sees the same device this process calls ``cuda:i``. [] without CUDA.
    """
    import torch

    n = torch.cuda.device_count()
    if not n:
        return []
    listed = os.environ.get(CUDA_ENV)
    if listed is None:
        return [str(i) for i in range(n)]
    return [d.strip() for d in listed.split(",")][:n]  # CUDA stops at the first entry it cannot use


def placement(n_workers: int, devices: list[int] | None, visible: list[str]) -> list[str | None]:
    """The ``CUDA_VISIBLE_DEVICES`` value of each worker: round-robin over ``devices`` (indices into
    ``visible``; None = all of them), so several workers share a GPU when there are more workers than
    GPUs. Without CUDA every worker gets None (the environment is left alone)."""
    if not visible:
        if devices:
            raise UserError("--devices: no CUDA device is visible here (torch.cuda.device_count() is 0); "
                            "drop --devices to run the workers on the CPU")
        return [None] * n_workers
    if devices is None:
        chosen = visible
    else:
        if not devices:
            raise UserError(f"--devices: give at least one CUDA device index, from 0..{len(visible) - 1}")
        bad = [i for i in devices if not 0 <= i < len(visible)]
        if bad:
            raise UserError(f"--devices: {bad[0]} is not a visible CUDA device; choose from 0..{len(visible) - 1}")
        twice = [i for i in dict.fromkeys(devices) if devices.count(i) > 1]
        if twice:
            raise UserError(f"--devices: {twice[0]} is listed twice; list each device once (several workers "
                            "share a device when --workers exceeds the devices)")
        chosen = [visible[i] for i in devices]
    return [chosen[i % len(chosen)] for i in range(n_workers)]


def run_workers(job: Job, n: int, devices: list[str | None] | None = None) -> int:
    """``n`` local worker processes on the study (already created by the caller); exit status.

    ``devices``: each worker's ``CUDA_VISIBLE_DEVICES`` (see ``placement``); None places the workers
    round-robin on every visible CUDA device, and on a machine without CUDA changes nothing.
    """
    # the job goes by environment, not argv: `ps` shows every user the arguments (storage password)
    # workers import the installed seqbench, like this process (no PYTHONPATH games)
    env = {**os.environ, JOB_ENV: json.dumps(asdict(job))}
    devices = devices if devices is not None else placement(n, None, visible_cuda_devices())
    if len(devices) != n:
        raise ValueError(f"run_workers: {len(devices)} device entries for {n} workers")
    envs = [env if d is None else {**env, CUDA_ENV: d} for d in devices]
    procs = [subprocess.Popen([sys.executable, "-m", "seqbench.sweeps.processes"], env=e) for e in envs]
    try:
        return max(p.wait() for p in procs)
    except KeyboardInterrupt:
        for p in procs:  # they got the same Ctrl-C: let them record their trials
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        raise


def _worker_main(payload: str) -> int:
    os.environ.pop(JOB_ENV, None)  # not inherited by anything the worker starts
    job = Job(**json.loads(payload))
    try:
        worker(job)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker_main(sys.argv[1] if len(sys.argv) > 1 else os.environ[JOB_ENV]))
