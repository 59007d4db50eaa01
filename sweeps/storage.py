"""Where studies live: a journal file by default, an RDB server for many machines.

- nothing:                ``<out_dir>/optuna.journal`` (JournalFileBackend; safe for several local processes)
- a path or journal:///p: that journal file
- postgresql:// mysql://: RDBStorage, shared by workers on many machines
- sqlite:///p:            RDBStorage too, but it loses trials under concurrent writers ("database is
                          locked" in our check): a warning says to use the journal file instead

Liveness of RUNNING trials is ``sweeps/liveness.py``.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend

from seqbench.bench.core.errors import UserError

_RDB_SCHEMES = ("postgresql", "postgres", "mysql", "sqlite")


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
