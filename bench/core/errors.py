"""User-facing errors: one line per problem, naming the field, the allowed values and, for a
misspelt name or key, the one that was probably meant."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError


class UserError(Exception):
    """Bad input from the user: one or more problems, each one line (``UserError(p1, p2)``).
    The CLI prints ``error: <problem>`` for each and exits 2."""

    @property
    def problems(self) -> list[str]:
        return [str(a) for a in self.args] or [""]

    def __str__(self) -> str:
        return "\n".join(self.problems)

    def prefixed(self, prefix: str) -> UserError:
        """The same problems, each prefixed (``s.yaml: ``), as the same kind of error (callers catch kinds)."""
        return type(self)(*(prefix + p for p in self.problems))


def did_you_mean(word: Any, choices: Iterable[str], spell: Callable[[str], str] = str) -> str:
    """``" did you mean lstm?"`` for the choice closest to a misspelt ``word`` (in any case: ``LSTM``),
    else ``""``. Give only choices the caller accepts: a suggestion the command then refuses misleads."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1)
    return f" did you mean {spell(by_lower[close[0]])}?" if close else ""


# pydantic's names for the members of a union in an error location: ('train', 'devices', 'int'),
# ('train', 'devices', "literal['auto']"); a problem is about the field, not the member tried
_MEMBER = re.compile(r"^(?:int|float|str|bool|none|bytes)$|^[a-z][a-z-]*\[.*\]$")


def _field_loc(loc: tuple, tagged: frozenset[str]) -> tuple:
    parts = list(loc)
    # discriminated unions insert the tag: ('task', 'copy', 'delay') -> task.delay
    if len(parts) >= 2 and str(parts[0]) in tagged:
        parts = [parts[0]] + parts[2:]
    return tuple(p for i, p in enumerate(parts) if i == 0 or not (isinstance(p, str) and _MEMBER.match(p)))


def _quoted(text: str) -> list[str]:
    return re.findall(r"'([^']*)'", text or "")


def validation_problems(
    err: ValidationError,
    *,
    tagged=frozenset({"task", "model"}),
    prefix: str = "",
    allowed_fields: Callable[[tuple], list[str] | None] | None = None,
    foreign: Callable[[tuple, str], str | None] | None = None,
) -> list[str]:
    """Every problem of a pydantic ValidationError, one line per field (a union's members merged).

    ``allowed_fields(loc)`` names the fields of the section at ``loc`` (``('model', 'lstm')``), for
    "allowed: ..." and "did you mean ...?" after an unknown key; ``foreign(loc, key)`` may explain a
    key that other entries of a tagged union have (``for model rnn (lstm has it)``).
    """
    groups: dict[tuple, list[Any]] = {}  # pydantic's ErrorDetails, read as the dicts they are
    for e in err.errors(include_url=False):
        key = _field_loc(tuple(e["loc"]), tagged)
        groups.setdefault(key, []).append(e)
    return [_problem(loc, errs, tagged, prefix, allowed_fields, foreign) for loc, errs in groups.items()]


def _problem(loc: tuple, errs: list[dict], tagged, prefix: str, allowed_fields, foreign) -> str:
    e = errs[0]
    where = ".".join(str(p) for p in loc)
    where = f"{prefix}{where}" if where else prefix.rstrip(".")
    msgs = list(dict.fromkeys(x["msg"].removeprefix("Value error, ") for x in errs))
    msg = _merge(msgs)
    raw = tuple(e["loc"])
    if e["type"] == "extra_forbidden":
        allowed = allowed_fields(raw[:-1]) if allowed_fields else None
        note = foreign(raw[:-1], str(raw[-1])) if foreign else None
        head = where.rsplit(".", 1)[0] + "." if "." in where else ""
        hint = did_you_mean(raw[-1], allowed or (), lambda s: head + s) if not note else ""
        msg = (
            "unknown field"
            + (note or "")
            + (f"; allowed: {', '.join(allowed)}" if allowed else "")
            + (f";{hint}" if hint else "")
        )
    elif e["type"] == "union_tag_invalid":
        ctx = e.get("ctx", {})
        where = f"{where}.name" if where else "name"
        tags = ctx.get("expected_tags")
        msg = f"unknown name {ctx.get('tag')!r};{did_you_mean(ctx.get('tag'), _quoted(tags))} choose from {tags}"
    elif e["type"] == "union_tag_not_found":
        where = f"{where}.name" if where else "name"
        msg = "missing 'name'"
    else:
        literal = next((x for x in errs if x["type"] == "literal_error"), None)
        if (
            "input" in e
            and e["type"] != "missing"
            and not isinstance(e["input"], (dict, list))
            and str(e["input"]) not in msg
        ):
            msg = f"{msg} (got {e['input']!r})"
        hint = (
            did_you_mean(literal["input"], _quoted(literal.get("ctx", {}).get("expected")))
            if literal is not None and isinstance(literal.get("input"), str)
            else ""
        )
        msg += f";{hint}" if hint else ""
    # validators that name their own field ("model.n_layers: ...") keep it
    names_field = re.match(r"^[\w.@]+: ", msg) is not None and msg.split(":", 1)[0].split(".")[0] == (
        where.split(".")[0] if where else ""
    )
    line = msg if (not where or names_field or msg.startswith(f"{where}:")) else f"{where}: {msg}"
    return " ".join(line.split())


def _merge(msgs: list[str]) -> str:
    """Messages of one field's union members as one: "Input should be a valid integer or 'auto'"."""
    if len(msgs) > 1 and all(m.startswith("Input should be ") for m in msgs):
        rest = [m.removeprefix("Input should be ") for m in msgs]
        return "Input should be " + ", ".join(rest[:-1]) + " or " + rest[-1]
    return "; or ".join(msgs)


def format_validation_error(err: ValidationError, **kw: Any) -> str:
    """:func:`validation_problems` as one line (callers that raise one problem; ``UserError(*problems)``
    lists them one per line)."""
    return "; ".join(validation_problems(err, **kw))
