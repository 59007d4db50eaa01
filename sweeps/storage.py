"""Where studies live: a journal file by default, an RDB server for many machines.

- nothing:                ``<out_dir>/optuna.journal`` (JournalFileBackend; safe for several local processes)
- a path or journal:///p: that journal file
- postgresql:// mysql://: RDBStorage, shared by workers on many machines
- sqlite:///p:            RDBStorage too, but it loses trials under concurrent writers ("database is
                          locked" in our check): a warning says to use the journal file instead

Liveness: Optuna 5's JournalStorage has no heartbeat, and the RDB heartbeat fails a stale trial
without a way to say why, so seqbench keeps its own for every storage: a worker stamps its
RUNNING trial's ``heartbeat`` system attr every ``interval`` seconds (``Heartbeat``), and any
worker fails a RUNNING trial whose stamp is older than the grace period (``reap_stale``).
"""
from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import check_trial_attrs
from seqbench.bench.core.errors import UserError

_RDB_SCHEMES = ("postgresql", "postgres", "mysql", "sqlite")
HEARTBEAT_ATTR = "heartbeat"


def redact(url: str) -> str:
    """``url`` (or any text holding URLs, e.g. ``--storage=URL``) with passwords replaced by ``***``,
    safe to print and to store; a password holding an unescaped ``@`` is hidden up to its last one."""
    return re.sub(r"([A-Za-z][\w+.-]*://[^:/@\s]*):[^/\s]*@", r"\1:***@", str(url))


def journal_path(url: str | None, out_dir: str | Path) -> Path | None:
    """The journal file ``url`` names (None for an RDB URL)."""
    if url is None:
        return Path(out_dir) / "optuna.journal"
    if url.startswith("journal://"):
        return Path(url[len("journal://"):])
    if "://" in url:
        return None
    return Path(url)


def open_storage(url: str | None, out_dir: str | Path = "outputs") -> optuna.storages.BaseStorage:
    """An Optuna storage for ``--storage`` (see the module docstring); UserError when unusable."""
    path = journal_path(url, out_dir)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        except OSError as e:
            raise UserError(f"--storage: cannot use journal file {path} ({e.strerror})") from None
    assert url is not None
    scheme = check_scheme(url)
    if scheme == "sqlite":
        print("warning: SQLite storage loses trials with several writers ('database is locked'); "
              "prefer the default journal file for local workers", file=sys.stderr)
    url = _with_driver(url)
    last: Exception | None = None
    for attempt in range(3):  # two processes creating the tables at once can collide: retry
        try:
            return RDBStorage(url, engine_kwargs={"pool_pre_ping": True})
        except ImportError as e:
            raise UserError(f"--storage: no database driver for {scheme} ({e}); "
                            "pip install 'seqbench[postgres]' (psycopg2-binary)") from None
        except Exception as e:  # noqa: BLE001 - sqlalchemy raises many kinds; all mean "unusable"
            last = e
            if type(e).__name__ not in ("IntegrityError", "ProgrammingError"):
                break  # not the table-creation race: retrying will not help
            time.sleep(0.5 * (attempt + 1))
    first = str(last).strip().splitlines()[0] if str(last).strip() else ""
    raise UserError(f"--storage: cannot open {redact(url)} ({type(last).__name__}: {redact(first)})")


def check_scheme(url: str | None) -> str | None:
    """The RDB scheme of ``url`` (None for a journal file); UserError for a scheme seqbench cannot use."""
    if url is None or journal_path(url, ".") is not None:
        return None
    scheme = url.split("://", 1)[0].split("+", 1)[0].lower()
    if scheme not in _RDB_SCHEMES:
        raise UserError(f"--storage: unknown scheme {scheme!r}; use a journal file path, journal:///path, "
                        "postgresql://, mysql:// or sqlite:///")
    return scheme


def _with_driver(url: str) -> str:
    """SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; use psycopg2 when only it is installed."""
    scheme, rest = url.split("://", 1)
    if scheme not in ("postgresql", "postgres"):
        return url
    import importlib.util

    for module, driver in (("psycopg", "psycopg"), ("psycopg2", "psycopg2")):
        if importlib.util.find_spec(module) is not None:
            return f"postgresql+{driver}://{rest}"
    return f"postgresql://{rest}"


def describe(url: str | None, out_dir: str | Path) -> str:
    path = journal_path(url, out_dir)
    return f"journal {path}" if path is not None else redact(str(url))


# -- liveness --------------------------------------------------------------------------------

class Heartbeat:
    """Context manager: stamps the trial's ``heartbeat`` system attr every ``interval`` seconds.

    ``lost`` turns true when the stamp cannot be written because another worker already failed
    the trial as stale (it will be retried; this worker's result is dropped).
    """

    def __init__(self, storage: optuna.storages.BaseStorage, trial_id: int, interval: float):
        self.storage, self.trial_id, self.interval = storage, trial_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="seqbench-heartbeat", daemon=True)
        self.lost = False

    def _beat(self) -> None:
        try:
            self.storage.set_trial_system_attr(self.trial_id, HEARTBEAT_ATTR, time.time())
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
    return {**t.system_attrs.get("fixed_params", {}), **t.params}


def reap_stale(study: optuna.Study, grace: float, on_reaped: Callable[[FrozenTrial], None] | None = None
               ) -> list[FrozenTrial]:
    """Fail RUNNING trials with no heartbeat for ``grace`` seconds and enqueue each once again.

    Several workers may reap at once: only the one whose FAIL lands first re-enqueues
    (the storage refuses to finish a finished trial), so a configuration is retried once.
    """
    storage, now, reaped = study._storage, time.time(), []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        quiet = now - last_beat(t)
        if quiet <= grace:
            continue
        try:
            storage.set_trial_user_attr(t._trial_id, "fail_reason",
                                        f"worker lost: no heartbeat for {quiet:.0f}s (killed or stalled); retried")
            storage.set_trial_user_attr(t._trial_id, "retried", True)
            storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:
            continue  # finished meanwhile, or another worker reaped it first
        requeue(study, t)
        reaped.append(t)
        if on_reaped is not None:
            on_reaped(t)
    return reaped


def requeue(study: optuna.Study, t: FrozenTrial) -> None:
    """Enqueue a failed trial's configuration again; its runs continue from their checkpoints."""
    study.enqueue_trial(trial_params(t), user_attrs=check_trial_attrs({
        "retry_of": t.user_attrs.get("retry_of", t.number), "resume_run_ids": t.user_attrs.get("run_ids", [])}))
