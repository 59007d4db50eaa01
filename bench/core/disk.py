"""A full disk, said in one line: which path, how much is free, about how much the write needed.

Every writer that can meet a full disk (run files, the study journal, a report) turns the OSError
into ``disk_full(field, path, need)``, a UserError the CLI prints as ``error: ...`` (exit 2); what
was written before stays (run files and reports are written atomically, a torn journal record is
cut when the journal is next opened). Standard library only.

>>> size_text(0), size_text(1536), size_text(5 * 2**20)
('0 B', '1.5 KB', '5.0 MB')
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from seqbench.bench.core.errors import UserError

# no space left, a quota exceeded, a file-size limit (RLIMIT_FSIZE, a small filesystem's file limit)
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
MIN_NEED = 64 * 1024  # what any write needs at least (the writability probe's size)


def is_disk_full(e: BaseException) -> bool:
    """An OSError that a full disk (or quota, or file-size limit) raised, here or in its causes."""
    return full_error(e) is not None


def size_text(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def free_bytes(path: Path | str) -> int | None:
    """Free bytes on the filesystem holding ``path`` (its nearest existing parent); None if unknown."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def tree_size(path: Path | str) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                continue
    return total


def full_error(e: BaseException) -> OSError | None:
    """The full-disk OSError in ``e`` or its causes (see ``is_disk_full``)."""
    while e is not None:
        if isinstance(e, OSError) and e.errno in FULL_ERRNOS:
            return e
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return None


def disk_full(
    field: str,
    path: Path | str,
    need: float,
    e: BaseException | None = None,
    then: str = "free space and run the same command again",
) -> UserError:
    """``<field>: cannot write <path>: No space left on device (<free> free, about <need> needed); <then>``."""
    err = full_error(e) if e is not None else None
    why = (err.strerror if err is not None and err.strerror else None) or "No space left on device"
    free = free_bytes(path)
    have = f"{size_text(free)} free, " if free is not None else ""
    return UserError(
        f"{field}: cannot write {path}: {why} ({have}about {size_text(max(need, MIN_NEED))} needed); {then}"
    )
