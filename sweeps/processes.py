"""Worker processes on one machine: how many, on which CUDA device, and how they start.

``seqbench sweep --workers K`` runs K worker processes on the study. How they start:

- CPU (no CUDA device placed): this process imports torch and Lightning once (~4 s on 2 quiet
  cores), forks K-1 copies of itself and works as the K-th (``fork_workers``): no worker pays the
  import again. The fork happens before any trial, so no heartbeat thread, torch intra-op pool or
  W&B service exists yet to be copied half-way; each child opens the storage afresh.
- GPU: each worker is a fresh interpreter (``exec_workers``) with its own ``CUDA_VISIBLE_DEVICES``
  entry, round-robin over the devices (``placement``): a forked child would inherit this process's
  CUDA driver state, which is not fork-safe and fixes the visible devices. Each pays the imports:
  13-17 s on an H200 machine whose image also has torchvision and transformers (Lightning's import
  pulls them in through torchmetrics), which a sweep of short trials feels (docs/gpu.md: a grid of
  16 trials of 40 steps was mostly start-up) and one of long trials does not.

Workers die with the command: each asks the kernel for SIGTERM when its parent dies (Linux
``prctl(PR_SET_PDEATHSIG)``; elsewhere a thread watches the parent), so a ``kill -9`` of the command
leaves no worker training on. A stop signal the command gets (Ctrl-C, ``kill``, a scheduler's SIGTERM)
is passed on to every worker at once (``bench.core.signals``), and each stops as a single run does:
the step it is on is checkpointed, its trial recorded as interrupted and queued again.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import overload

import torch

from seqbench.bench.core import signals
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
            raise UserError(
                "--devices: no CUDA device is visible here (torch.cuda.device_count() is 0); "
                "drop --devices to run the workers on the CPU"
            )
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
            raise UserError(
                f"--devices: {twice[0]} is listed twice; list each device once (several workers "
                "share a device when --workers exceeds the devices)"
            )
        chosen = [visible[i] for i in devices]
    return [chosen[i % len(chosen)] for i in range(n_workers)]


def run_workers(job: Job, n: int, devices: list[str | None] | None = None) -> int:
    """``n`` local workers on the study (already created by the caller); their exit status.

    ``devices``: each worker's ``CUDA_VISIBLE_DEVICES`` (see ``placement``); None places the workers
    round-robin on every visible CUDA device, and on a machine without CUDA changes nothing.
    """
    devices = devices if devices is not None else placement(n, None, visible_cuda_devices())
    if len(devices) != n:
        raise ValueError(f"run_workers: {len(devices)} device entries for {n} workers")
    if all(d is None for d in devices) and can_fork():
        return fork_workers(job, n)
    return exec_workers(job, devices)


def can_fork() -> bool:
    """Forking copies one thread only: safe while this process runs no other Python thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


def exec_workers(job: Job, devices: list[str | None]) -> int:
    """One fresh interpreter per entry of ``devices`` (its ``CUDA_VISIBLE_DEVICES``; None: unchanged)."""
    # the job goes by environment, not argv: `ps` shows every user the arguments (storage password)
    # workers import the installed seqbench, like this process (no PYTHONPATH games)
    env = {**os.environ, JOB_ENV: json.dumps(asdict(job))}
    envs = [env if d is None else {**env, CUDA_ENV: d} for d in devices]
    parent = os.getpid()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "seqbench.sweeps.processes"], env=e, preexec_fn=lambda: die_with_parent(parent)
        )
        for e in envs
    ]
    signals.forward(_passer([p.pid for p in procs]))
    try:
        return _worst([p.wait() for p in procs])
    except KeyboardInterrupt:
        for p in procs:  # each got the stop (forwarded): let them record their trials
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        raise
    finally:
        signals.forward(None)


def fork_workers(job: Job, n: int) -> int:
    """``n - 1`` forked copies of this process and this process itself work on the study."""
    # what a trial needs (training, torch, Lightning) is imported at this module's top, through
    # sweeps.worker -> sweeps.trial: every copy shares it instead of paying the ~4 s import again
    sys.stdout.flush()  # a buffer not yet written would be written once by each copy
    sys.stderr.flush()
    children: list[int] = []
    parent = os.getpid()
    for _ in range(n - 1):
        pid = os.fork()
        if pid == 0:  # the copy: work, then leave without running this process's exit handlers
            code = 1
            try:
                signals.reset()
                signals.install()  # stops raise KeyboardInterrupt here too (a notebook's sweep installed none)
                die_with_parent(parent)
                code = _work(job)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    signals.forward(_passer(children))  # a stop this process gets reaches every worker at once
    try:
        mine = _work(job, interrupt=True)
        return _worst([mine, *(_wait(pid) for pid in children)])
    except KeyboardInterrupt:
        for pid in children:  # each got the stop: let them record their trials
            if _wait(pid, timeout=30) is None:
                os.kill(pid, signal.SIGKILL)
                _wait(pid)
        raise
    finally:
        signals.forward(None)


def _passer(pids: list[int]) -> Callable[[int], None]:
    """Pass a stop signal on to the worker processes ``pids`` (those already gone are skipped)."""

    def pass_on(signum: int) -> None:
        for pid in pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                continue

    return pass_on


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """In a worker: get SIGTERM when process ``parent`` dies, so no worker outlives the command (even
    after its ``kill -9``). Linux asks the kernel (``prctl``); elsewhere a thread polls the parent."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            _watch_parent(parent)
    else:
        _watch_parent(parent)
    if os.getppid() != parent:  # it died before the request took hold
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_parent(parent: int, every: float = 1.0) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="seqbench-parent-watch", daemon=True).start()


@overload
def _wait(pid: int) -> int: ...
@overload
def _wait(pid: int, timeout: float) -> int | None: ...
def _wait(pid: int, timeout: float | None = None) -> int | None:
    """The exit status of child ``pid``; None past ``timeout``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)  # -N when killed by signal N
        if time.monotonic() > deadline:  # type: ignore[operator]
            return None
        time.sleep(0.2)


def _worst(codes: list[int]) -> int:
    """The first non-zero exit status (0 when every worker finished cleanly; killed by signal N: 128 + N)."""
    return next((128 - c if c < 0 else c for c in codes if c), 0)


def _work(job: Job, *, interrupt: bool = False) -> int:
    """Run ``worker(job)`` as a worker process does: a UserError is one line and status 2; Ctrl-C
    is status 130, or raised again when ``interrupt`` (this process still has children to wait for)."""
    try:
        worker(job)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        if interrupt:
            raise
        return 130
    return 0


def _worker_main(payload: str) -> int:
    os.environ.pop(JOB_ENV, None)  # not inherited by anything the worker starts
    signals.install()  # a stop (forwarded by the command) is a KeyboardInterrupt, as in the command itself
    return _work(Job(**json.loads(payload)))


if __name__ == "__main__":
    raise SystemExit(_worker_main(sys.argv[1] if len(sys.argv) > 1 else os.environ[JOB_ENV]))
