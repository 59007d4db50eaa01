"""Stop signals, one process-wide policy: SIGINT and SIGTERM stop work like Ctrl-C; a signal that
repeats one within ``REPEAT_S`` is the same request delivered twice, not a user insisting.

The same stop often arrives twice: Ctrl-C reaches a sweep's whole process group and the sweep's parent
passes it on to its workers as well; a scheduler signals every process of a job and the parent
forwards. Counting that second copy as "stop at once" would lose the step a worker was about to save.
A process that passes stops on (a sweep's parent) registers a ``forward`` hook; it is called once per
stop, on its first signal, wherever that signal is handled (``GracefulStop`` during training, the CLI's
handler otherwise). Standard library only.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

REPEAT_S = 2.0  # a stop signal this soon after the first of a burst is the same stop
STOPS = (signal.SIGINT, signal.SIGTERM)

_first: list[float] = []  # when the current burst of stop signals began (monotonic); empty: none yet
_forward: list[Callable[[int], None]] = []  # called with the signal number on the first signal of a burst


def noted(signum: int) -> bool:
    """Note a stop signal; True when it is new (the first of a burst: forwarded to the hooks), False when
    it repeats one that arrived less than ``REPEAT_S`` ago."""
    now = time.monotonic()
    if _first and now - _first[0] < REPEAT_S:
        return False
    _first[:] = [now]
    for fn in list(_forward):
        fn(signum)
    return True


def _stop(signum: int, frame: Any) -> None:
    if noted(signum):
        raise KeyboardInterrupt


def install() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt (a checkpointed run resumes with resume=true), a
    repeat within ``REPEAT_S`` is ignored. Main thread only (elsewhere Python cannot set handlers)."""
    _first.clear()  # a new command: an earlier stop (a notebook, a test) is over
    if threading.current_thread() is threading.main_thread():
        for s in STOPS:
            signal.signal(s, _stop)


def forward(fn: Callable[[int], None] | None) -> None:
    """Call ``fn(signum)`` on every new stop signal from now on (None: stop forwarding)."""
    _forward[:] = [fn] if fn is not None else []


def reset() -> None:
    """A new process (a forked worker): no burst under way, nothing to forward."""
    _first.clear()
    _forward.clear()
