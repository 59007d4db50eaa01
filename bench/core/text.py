"""The one writer of each kind of text seqbench prints or saves: tables (terminal and markdown),
durations, and URLs with their passwords hidden. Every command and report formats through these, so a
table or an ETA looks the same wherever it appears. Standard library only (the ground imports no torch).

>>> print(text_table(["model", "acc"], [["lstm", "0.99"], ["rnn", "0.25"]], align="lr"))
model   acc
lstm   0.99
rnn    0.25
>>> print(markdown_table(["model", "acc"], [["lstm", "0.99"]], align="lr"))
| model | acc |
|---|---:|
| lstm | 0.99 |
>>> duration(4.25), duration(59), duration(61), duration(7322)
('4.2s', '59s', '1m01s', '2h02m')
"""

from __future__ import annotations

import re
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

MISSING = "–"  # a cell with no value (None, NaN)


def redact(url: str) -> str:
    """``url`` (or any text holding URLs, e.g. ``--storage=URL``) with passwords replaced by ``***``,
    safe to print and to store; a password holding an unescaped ``@`` is hidden up to its last one."""
    return re.sub(r"([A-Za-z][\w+.-]*://[^:/@\s]*):[^/\s]*@", r"\1:***@", str(url))


class Notice(UserWarning):
    """A warning a user should read (a TCN whose receptive field is shorter than the task's
    dependency): shown as one line ``warning: <message>`` on stderr, without Python's
    ``file:line: Category:`` prefix and the source line under it. It stays a warning, so
    ``warnings.simplefilter`` and ``pytest.warns`` still select it by class."""


_python_formatwarning = warnings.formatwarning


def _formatwarning(message, category, filename, lineno, line=None) -> str:
    if issubclass(category, Notice):
        return f"warning: {message}\n"
    return _python_formatwarning(message, category, filename, lineno, line)


# Installed where Notice is defined, so every process that can raise one (the CLI, sweep workers,
# a notebook) shows it as one line; other warnings keep Python's format.
warnings.formatwarning = _formatwarning


def cell(v: Any, digits: int = 4) -> str:
    """A table cell: ``–`` for None/NaN, floats to ``digits`` significant digits, else ``str``."""
    if v is None or (isinstance(v, float) and v != v) or repr(v) == "<NA>":
        return MISSING
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _cells(head: Sequence[Any], rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [[c if isinstance(c, str) else cell(c) for c in r] for r in [head, *rows]]


def _align(align: str, n: int) -> str:
    if set(align) - {"l", "r"}:
        raise ValueError(f"align: one 'l' or 'r' per column, got {align!r}")
    return align.ljust(n, "l")[:n]


def text_table(
    head: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    align: str = "",
    indent: str = "",
    sep: str = "  ",
    rule: bool = False,
    max_width: int | None = None,
    wrap: bool = False,
) -> str:
    """A fixed-width table for the terminal: a header line, then one line per row.

    ``align`` has one ``l`` or ``r`` per column (left by default); ``rule`` draws a dashed line under
    the header; a cell longer than ``max_width`` is cut with ``...``, or with ``wrap`` continued on the
    row's next lines (at spaces where it can: nothing is cut). Trailing blanks are stripped.
    """
    cells = _cells(head, rows)
    if max_width is not None and wrap:
        cells = [line for r in cells for line in _wrapped(r, max_width)]
    elif max_width is not None:
        cells = [[c if len(c) <= max_width else c[: max_width - 3] + "..." for c in r] for r in cells]
    a = _align(align, len(cells[0]))
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = [
        indent + sep.join(c.rjust(w) if al == "r" else c.ljust(w) for c, w, al in zip(r, widths, a)).rstrip()
        for r in cells
    ]
    if rule:
        lines.insert(1, indent + sep.replace(" ", "-").replace("|", "+").join("-" * w for w in widths))
    return "\n".join(lines)


def _wrapped(row: list[str], width: int) -> list[list[str]]:
    """One row as as many lines as its longest cell needs, each cell wrapped to ``width``."""
    parts = [textwrap.wrap(c, width, break_on_hyphens=False) or [""] for c in row]
    return [[p[i] if i < len(p) else "" for p in parts] for i in range(max(map(len, parts)))]


def markdown_table(head: Sequence[Any], rows: Sequence[Sequence[Any]], *, align: str = "") -> str:
    """A GitHub-flavoured markdown table; ``|`` inside a cell is escaped, ``align`` as in
    ``text_table`` (``r`` right-aligns the column: ``---:``)."""
    cells = [[c.replace("|", "\\|").replace("\n", " ") for c in r] for r in _cells(head, rows)]
    a = _align(align, len(cells[0]))
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "".join("---:|" if x == "r" else "---|" for x in a)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])


def duration(seconds: float) -> str:
    """A time span as people read it: ``4.2s`` (under 10 s), ``42s``, ``4m05s``, ``2h02m``."""
    if seconds != seconds:
        return MISSING
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f}s"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _si(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def speed_summary(results: Mapping[str, Any]) -> str:
    """The closing line's speed facts: steps over training time, samples/s, tokens/s, model FLOP/s and
    MFU where measured, and where it ran (only the keys the run recorded)."""
    parts = [
        f"{results['steps']} steps in {results['train_time_s']:.1f}s training ({results['wall_time_s']:.1f}s wall)"
    ]
    if "samples_per_s" in results:
        parts.append(f"{_si(results['samples_per_s'])} samples/s")
    if "tokens_per_s" in results:
        parts.append(f"{_si(results['tokens_per_s'])} tokens/s")
    if "model_flops_per_s" in results:
        parts.append(f"{_si(results['model_flops_per_s'])}FLOP/s")
    if "mfu" in results:
        parts.append(f"MFU {results['mfu']:.1%}")
    steady = results.get("steady_tokens_per_s")
    if steady and abs(steady / results.get("tokens_per_s", steady) - 1) > 0.1:  # warm-up (e.g. compile) weighed
        parts.append(
            f"after warm-up {_si(steady)} tokens/s"
            + (f", MFU {results['steady_mfu']:.1%}" if "steady_mfu" in results else "")
        )
    where = results.get("device_name") or results.get("device")
    if where:
        ranks = results.get("world_size", 1)
        parts.append(f"on {where}" + (f" x{ranks}" if ranks > 1 else "") + f" ({results.get('precision', '?')})")
    return ", ".join(parts)
