"""User-facing errors: one line, naming the field and the allowed values."""
from __future__ import annotations

import re

from pydantic import ValidationError


class UserError(Exception):
    """Bad input from the user. The CLI prints ``error: <message>`` and exits 2."""


def _loc(loc: tuple, tagged: frozenset[str]) -> str:
    parts = [str(p) for p in loc]
    # discriminated unions insert the tag: ('task', 'copy', 'delay') -> task.delay
    if len(parts) >= 2 and parts[0] in tagged:
        parts = [parts[0]] + parts[2:]
    return ".".join(parts)


def format_validation_error(err: ValidationError, *, tagged=frozenset({"task", "model"}),
                            prefix: str = "", allowed_fields=None) -> str:
    """The first error of a pydantic ValidationError as one line."""
    errors = err.errors(include_url=False)
    e = errors[0]
    where = _loc(tuple(e["loc"]), tagged)
    where = f"{prefix}{where}" if where else prefix.rstrip(".")
    msg = e["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if e["type"] == "extra_forbidden":
        allowed = allowed_fields(tuple(e["loc"])[:-1]) if allowed_fields else None
        msg = "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    elif e["type"] == "union_tag_invalid":
        ctx = e.get("ctx", {})
        where = f"{where}.name" if where else "name"
        msg = f"unknown name {ctx.get('tag')!r}; choose from {ctx.get('expected_tags')}"
    elif e["type"] == "union_tag_not_found":
        where = f"{where}.name" if where else "name"
        msg = "missing 'name'"
    elif ("input" in e and e["type"] not in ("missing",) and not isinstance(e["input"], (dict, list))
          and str(e["input"]) not in msg):
        msg = f"{msg} (got {e['input']!r})"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    # validators that name their own field ("model.n_layers: ...") keep it
    names_field = re.match(r"^[\w.@]+: ", msg) is not None and msg.split(":", 1)[0].split(".")[0] == \
        (where.split(".")[0] if where else "")
    line = f"{msg}{more}" if (not where or names_field or msg.startswith(f"{where}:")) else f"{where}: {msg}{more}"
    return " ".join(line.split())
