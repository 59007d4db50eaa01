"""Liveness of RUNNING trials, for every storage.

Optuna 5's JournalStorage has no heartbeat, and the RDB heartbeat fails a stale trial without a
way to say why, so seqbench keeps its own: a worker stamps its RUNNING trial's ``heartbeat``
system attr every ``interval`` seconds (``Heartbeat``), and any worker fails a RUNNING trial whose
stamp is older than the grace period and enqueues its configuration again (``reap_stale``).

A trial also records its worker (``worker`` user attr: host, boot id, pid, process start time), so a
worker on the same machine knows at once when that process is gone (killed, crashed, a full disk
that stopped the command) and retries its trial without waiting out the grace period; only a
worker on another machine is judged by its heartbeat (``waiting_line`` says so while it waits).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import optuna
import psutil
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import check_trial_attrs
from seqbench.sweeps.optuna_adapter import enqueued_params, fail_trial, set_trial_flag, trial_id

HEARTBEAT_ATTR = "heartbeat"
_running_here: set[int] = set()  # storage ids of the trials this process runs now (a Heartbeat is open)


def this_worker() -> dict[str, Any]:
    """This process as a trial's ``worker`` attr: host, boot id (a reboot or another machine of the same
    name is not this one), pid and the process's start time (a pid used again is another process)."""
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": os.getpid(), "started": _started(os.getpid())}


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _started(pid: Any) -> float | None:
    try:
        return round(psutil.Process(int(pid)).create_time(), 2)
    except (psutil.Error, TypeError, ValueError):
        return None


def gone_here(t: FrozenTrial) -> str | None:
    """Why the worker of RUNNING trial ``t`` is known to be gone, when it ran on this machine: its process
    exited, its pid is another process now, or it is this process and no longer runs the trial (a
    storage write that failed). None when that cannot be known here (another machine) or it is alive."""
    w = t.user_attrs.get("worker")
    me = this_worker()
    if not isinstance(w, dict) or (w.get("host"), w.get("boot")) != (me["host"], me["boot"]):
        return None
    who = f"{w.get('host')}:{w.get('pid')}"
    if w.get("pid") == me["pid"] and w.get("started") == me["started"]:
        return None if trial_id(t) in _running_here else f"its worker {who} (this process) no longer runs it"
    started = _started(w.get("pid"))
    if started is None:
        return f"its worker {who} on this machine has exited"
    if w.get("started") is not None and abs(started - float(w["started"])) > 1:
        return f"its worker {who} on this machine has exited (the pid is another process now)"
    return None


def waiting_line(t: FrozenTrial, grace: float) -> str:
    """What a worker waiting on RUNNING trial ``t`` (of another worker) says, once."""
    w = t.user_attrs.get("worker") or {}
    who = f"{w.get('host', '?')}:{w.get('pid', '?')}" if isinstance(w, dict) else "?"
    quiet = time.time() - last_beat(t)
    if isinstance(w, dict) and w.get("host") == socket.gethostname():
        return f"waiting for trial {t.number}: its worker {who} runs on this machine"
    return (
        f"waiting for trial {t.number}: its worker {who} is on another machine (last heartbeat {quiet:.0f}s "
        f"ago); if it stopped, the trial is retried after {grace:.0f}s without a heartbeat"
    )


class Heartbeat:
    """Context manager: stamps the trial's ``heartbeat`` system attr every ``interval`` seconds.

    ``lost`` turns true when the stamp cannot be written because another worker already failed
    the trial as stale (it will be retried; this worker's result is dropped).
    """

    def __init__(self, study: optuna.Study, trial: optuna.Trial, interval: float):
        self.study, self.trial, self.interval = study, trial, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="seqbench-heartbeat", daemon=True)
        self.lost = False

    def _beat(self) -> None:
        try:
            set_trial_flag(self.study, self.trial, HEARTBEAT_ATTR, time.time())
        except UpdateFinishedTrialError:
            self.lost = True
            self._stop.set()
        except Exception as e:  # noqa: BLE001 - a storage hiccup must not kill the trial; retry next beat
            print(f"warning: heartbeat failed: {type(e).__name__}: {e}", file=sys.stderr)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._beat()

    def __enter__(self) -> Heartbeat:
        _running_here.add(trial_id(self.trial))
        self._beat()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        _running_here.discard(trial_id(self.trial))


def last_beat(t: FrozenTrial) -> float:
    stamp = t.system_attrs.get(HEARTBEAT_ATTR)
    if stamp is not None:
        return float(stamp)
    return t.datetime_start.timestamp() if t.datetime_start else time.time()


def trial_params(t: FrozenTrial) -> dict[str, Any]:
    """A trial's parameters, including enqueued ones it had not suggested yet when it died."""
    return {**enqueued_params(t), **t.params}


def reap_stale(
    study: optuna.Study, grace: float, on_reaped: Callable[[FrozenTrial, str], None] | None = None
) -> list[FrozenTrial]:
    """Fail the RUNNING trials whose worker is gone (known at once on this machine, ``gone_here``;
    elsewhere: no heartbeat for ``grace`` seconds) and enqueue each once again.

    Several workers may reap at once: only the one whose FAIL lands first re-enqueues
    (the storage refuses to finish a finished trial), so a configuration is retried once.
    """
    now, reaped = time.time(), []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        quiet = now - last_beat(t)
        gone = gone_here(t)
        if gone is None and quiet <= grace:
            continue
        why = f"worker lost: {gone or f'no heartbeat for {quiet:.0f}s (killed or stalled)'}; retried"
        if not fail_trial(study, t, {"fail_reason": why, "retried": True}):
            continue  # finished meanwhile, or another worker reaped it first
        requeue(study, t)
        reaped.append(t)
        if on_reaped is not None:
            on_reaped(t, why)
    return reaped


def requeue(study: optuna.Study, t: FrozenTrial) -> None:
    """Enqueue a failed trial's configuration again; its runs continue from their checkpoints.
    ``retry_of`` names the trial it redoes (so ``study.superseded`` knows ``t`` is replaced)."""
    study.enqueue_trial(
        trial_params(t),
        user_attrs=dict(check_trial_attrs({"retry_of": t.number, "resume_run_ids": t.user_attrs.get("run_ids", [])})),
    )


def superseded(trials: Iterable[FrozenTrial]) -> set[int]:
    """Numbers of the FAIL trials whose configuration was queued again: marked ``retried`` when
    they failed (dead worker, Ctrl-C), or named by a later trial's ``retry_of`` (``--retry-failed``
    re-enqueues a trial already finished, which Optuna no longer lets anyone mark)."""
    trials = list(trials)
    gone = {t.number for t in trials if t.state == TrialState.FAIL and t.user_attrs.get("retried")}
    return gone | {t.user_attrs["retry_of"] for t in trials if "retry_of" in t.user_attrs}
