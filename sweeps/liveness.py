"""Liveness of RUNNING trials, for every storage.

Optuna 5's JournalStorage has no heartbeat, and the RDB heartbeat fails a stale trial without a
way to say why, so seqbench keeps its own: a worker stamps its RUNNING trial's ``heartbeat``
system attr every ``interval`` seconds (``Heartbeat``), and any worker fails a RUNNING trial whose
stamp is older than the grace period and enqueues its configuration again (``reap_stale``).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Iterable

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import check_trial_attrs
from seqbench.sweeps.optuna_adapter import enqueued_params, fail_trial, set_trial_flag

HEARTBEAT_ATTR = "heartbeat"


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

    def __enter__(self) -> "Heartbeat":
        self._beat()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def last_beat(t: FrozenTrial) -> float:
    stamp = t.system_attrs.get(HEARTBEAT_ATTR)
    if stamp is not None:
        return float(stamp)
    return t.datetime_start.timestamp() if t.datetime_start else time.time()


def trial_params(t: FrozenTrial) -> dict[str, Any]:
    """A trial's parameters, including enqueued ones it had not suggested yet when it died."""
    return {**enqueued_params(t), **t.params}


def reap_stale(study: optuna.Study, grace: float, on_reaped: Callable[[FrozenTrial], None] | None = None
               ) -> list[FrozenTrial]:
    """Fail RUNNING trials with no heartbeat for ``grace`` seconds and enqueue each once again.

    Several workers may reap at once: only the one whose FAIL lands first re-enqueues
    (the storage refuses to finish a finished trial), so a configuration is retried once.
    """
    now, reaped = time.time(), []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        quiet = now - last_beat(t)
        if quiet <= grace:
            continue
        why = f"worker lost: no heartbeat for {quiet:.0f}s (killed or stalled); retried"
        if not fail_trial(study, t, {"fail_reason": why, "retried": True}):
            continue  # finished meanwhile, or another worker reaped it first
        requeue(study, t)
        reaped.append(t)
        if on_reaped is not None:
            on_reaped(t)
    return reaped


def requeue(study: optuna.Study, t: FrozenTrial) -> None:
    """Enqueue a failed trial's configuration again; its runs continue from their checkpoints.
    ``retry_of`` names the trial it redoes (so ``study.superseded`` knows ``t`` is replaced)."""
    study.enqueue_trial(trial_params(t), user_attrs=check_trial_attrs({
        "retry_of": t.number, "resume_run_ids": t.user_attrs.get("run_ids", [])}))


def superseded(trials: Iterable[FrozenTrial]) -> set[int]:
    """Numbers of the FAIL trials whose configuration was queued again: marked ``retried`` when
    they failed (dead worker, Ctrl-C), or named by a later trial's ``retry_of`` (``--retry-failed``
    re-enqueues a trial already finished, which Optuna no longer lets anyone mark)."""
    trials = list(trials)
    gone = {t.number for t in trials if t.state == TrialState.FAIL and t.user_attrs.get("retried")}
    return gone | {t.user_attrs["retry_of"] for t in trials if "retry_of" in t.user_attrs}
