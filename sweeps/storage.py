"""Where studies live: a journal file by default, an RDB server for many machines.

- nothing:                ``<out_dir>/optuna.journal`` (JournalFileBackend; safe for several local processes)
- a path or journal:///p: that journal file
- postgresql:// mysql://: RDBStorage, shared by workers on many machines
- sqlite:///p:            RDBStorage too, but it loses trials under concurrent writers ("database is
                          locked" in our check): a warning says to use the journal file instead

A journal file whose last write was torn (a crash or a full disk mid-write) is repaired when
opened (``repair_journal``). Liveness of RUNNING trials is ``sweeps/liveness.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

from seqbench.bench.core.disk import disk_full, is_disk_full
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact

_RDB_SCHEMES = ("postgresql", "postgres", "mysql", "sqlite")


def journal_path(url: str | None, out_dir: str | Path) -> Path | None:
    """The journal file ``url`` names (None for an RDB URL)."""
    if url is None:
        return Path(out_dir) / "optuna.journal"
    if url.startswith("journal://"):
        return Path(url[len("journal://") :])
    if "://" in url:
        return None
    return Path(url)


def open_storage(url: str | None, out_dir: str | Path = "outputs") -> optuna.storages.BaseStorage:
    """An Optuna storage for ``--storage`` (see the module docstring); UserError when unusable."""
    path = journal_path(url, out_dir)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            repair_journal(path)
            return JournalStorage(JournalFileBackend(str(path)))
        except OSError as e:
            raise UserError(f"--storage: cannot use journal file {path} ({e.strerror})") from None
    assert url is not None
    scheme = check_scheme(url)
    if scheme == "sqlite":
        print(
            "warning: SQLite storage loses trials with several writers ('database is locked'); "
            "prefer the default journal file for local workers",
            file=sys.stderr,
        )
    url = _with_driver(url)
    last: Exception | None = None
    for attempt in range(3):  # two processes creating the tables at once can collide: retry
        try:
            return RDBStorage(url, engine_kwargs={"pool_pre_ping": True})
        except ImportError as e:
            raise UserError(
                f"--storage: no database driver for {scheme} ({e}); pip install 'seqbench[postgres]' (psycopg2-binary)"
            ) from None
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
        raise UserError(
            f"--storage: unknown scheme {scheme!r}; use a journal file path, journal:///path, "
            "postgresql://, mysql:// or sqlite:///"
        )
    return scheme


def _with_driver(url: str) -> str:
    """SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; use psycopg2 when only it is installed."""
    scheme, rest = url.split("://", 1)
    if scheme not in ("postgresql", "postgres"):
        return url

    for module, driver in (("psycopg", "psycopg"), ("psycopg2", "psycopg2")):
        if importlib.util.find_spec(module) is not None:
            return f"postgresql+{driver}://{rest}"
    return f"postgresql://{rest}"


@contextmanager
def journal_space(url: str | None, out_dir: str | Path, need: Callable[[], float] = lambda: 0) -> Iterator[None]:
    """A full disk under the block, met by a journal write (Optuna appends each operation), becomes one
    line: the journal, the space free and ``need()`` (what the rest of the study is expected to write).
    What the journal holds stays readable: a record torn mid-write is cut when it is next opened."""
    try:
        yield
    except OSError as e:
        path = journal_path(url, out_dir)
        if path is None or not is_disk_full(e):
            raise
        raise disk_full(
            "--storage",
            e.filename or path,
            need(),
            e,
            then="free space and run the same command again; finished trials are kept and the "
            "trial cut short is retried",
        ) from None


def describe(url: str | None, out_dir: str | Path) -> str:
    path = journal_path(url, out_dir)
    return f"journal {path}" if path is not None else redact(str(url))


# -- a torn journal ---------------------------------------------------------------------------
# Optuna appends each operation as one JSON line, under a lock. A write cut short leaves a line
# without its newline; Optuna's reader skips it, but the next append glues onto it and from then
# on every reader dies with a JSONDecodeError: the study's completed trials become unreachable.

_RECORD = b'{"op_code"'  # how every record begins (json.dumps escapes quotes inside strings)


def _whole(line: bytes) -> bool:
    """A complete record: the cheap test first (one record start, a closing brace), then JSON."""
    if line.startswith(_RECORD) and line.count(_RECORD) == 1 and line.endswith(b"}"):
        return True
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _salvage(line: bytes) -> bytes | None:
    """The record glued onto a torn one (the earliest record start whose rest parses), or None."""
    start = line.find(_RECORD, 1)
    while start != -1:
        if _whole(line[start:]):
            return line[start:]
        start = line.find(_RECORD, start + 1)
    return None


def repaired(data: bytes) -> bytes | None:
    """Journal bytes ``data`` without torn records (a glued record is kept), None when none is torn."""
    lines = data.split(b"\n")
    tail = lines.pop()  # what follows the last newline: empty unless the last write was torn
    kept, changed = [], False
    for line in lines:
        if _whole(line):
            kept.append(line)
            continue
        changed = True
        rest = _salvage(line)
        if rest is not None:
            kept.append(rest)
    if tail:
        changed = True
        rest = tail if _whole(tail) else _salvage(tail)  # a record cut just before its newline is whole
        if rest is not None:
            kept.append(rest)
    return b"".join(line + b"\n" for line in kept) if changed else None


def repair_journal(path: Path) -> Path | None:
    """Cut the torn records out of journal ``path``, keeping the original beside it as
    ``<name>.torn-<UTC time>``; one warning line on stderr. Returns the backup (None: nothing torn)."""
    try:
        if not path.is_file() or repaired(path.read_bytes()) is None:
            return None
    except OSError:
        return None  # unreadable: opening it reports why
    lock = JournalFileSymlinkLock(str(path))  # Optuna's own lock: no writer appends meanwhile
    lock.acquire()
    try:
        data = path.read_bytes()
        fixed = repaired(data)  # again, under the lock: what looked torn may have been a write in flight
        if fixed is None:
            return None
        backup = path.with_name(f"{path.name}.torn-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}")
        kept = _cut(path, data, fixed, backup)
    finally:
        lock.release()
    print(
        f"warning: journal {path} had a torn record (a crash or a full disk mid-write): cut "
        f"{len(data) - len(fixed)} bytes; "
        + (f"the original is kept as {backup.name}" if kept else "no room for a copy of the original (a full disk)"),
        file=sys.stderr,
    )
    return backup if kept else None


def _cut(path: Path, data: bytes, fixed: bytes, backup: Path) -> bool:
    """Replace the journal's bytes ``data`` by ``fixed``, the original kept as ``backup`` (returns True).
    On a full disk a torn tail is still cut, without the copy (False): it is a write that never
    finished, and truncating needs no space, so the study opens and reports where it stands."""
    try:
        shutil.copyfile(path, backup)
    except OSError as e:
        backup.unlink(missing_ok=True)
        if not (is_disk_full(e) and data.startswith(fixed)):
            raise UserError(
                f"--storage: journal {path} has a torn record (a crash or a full disk mid-write) "
                f"and cannot be repaired ({e.strerror}); free space and run again"
            ) from None
        os.truncate(path, len(fixed))
        return False
    try:
        if data.startswith(fixed):
            os.truncate(path, len(fixed))  # only the tail goes: needs no free space
        else:
            tmp = path.with_name(path.name + ".repair")
            tmp.write_bytes(fixed)
            os.replace(tmp, path)
    except OSError as e:
        raise UserError(
            f"--storage: journal {path} has a torn record (a crash or a full disk mid-write) "
            f"and cannot be repaired ({e.strerror}); free space and run again"
        ) from None
    return True
