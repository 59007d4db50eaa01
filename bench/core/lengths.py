"""Length generalisation of one run: the test metric at each evaluated length, which lengths the
task counts as solved, and the longest length up to which every evaluated length is solved.

Delétang et al. 2023 (Sec. 3, Fig. 2) train on lengths 1-40 and plot accuracy against test lengths
41-500; Press et al. 2022 (Fig. 1) plot perplexity against the inference length. A run with
``eval.lengths`` records the same curve in results.json (``length_generalisation``) and says, in its
closing line, how far it generalises: a phrase decided by the task's own ``solved`` criterion at each
length, so "generalises up to 200" means solved at the training lengths and at every evaluated length
up to 200 (an unevaluated length in between is not vouched for). Standard library only.

>>> curve = length_curve({"test/acc": 1.0, "test@60/acc": 0.99, "test@100/acc": 0.62},
...                      "acc", (1, 40), [60, 100], lambda m, split: m[f"{split}/acc"] >= 0.95)
>>> curve["generalises_up_to"], [p["solved"] for p in curve["per_length"]]
(60, [True, True, False])
>>> length_phrase(curve)
'generalises up to length 60 (trained on 1-40): acc 1.00 at 1-40, 0.99 @60, 0.62 @100'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict


class LengthPoint(TypedDict):
    length: int | None  # None: the training lengths (test/<metric>)
    value: float
    solved: bool  # the task's own criterion at this length


class LengthCurve(TypedDict):
    metric: str  # the task's primary metric, e.g. "acc"
    trained: list[int]  # [shortest, longest] training length (equal when trained at one length)
    per_length: list[LengthPoint]  # the training lengths first, then each evaluated length ascending
    # the longest evaluated length up to which every length (training included) is solved; the longest
    # training length when the first longer one fails; None when the training lengths are not solved
    generalises_up_to: int | None


def length_curve(
    final: dict[str, float],
    metric: str,
    trained: tuple[int, int],
    lengths: Sequence[int],
    solved: Callable[[dict[str, float], str], bool],
) -> LengthCurve | None:
    """The curve of ``final``'s ``test/<metric>`` and ``test@<L>/<metric>`` (``solved(final, split)``
    is the task's criterion for a split prefix, e.g. ``test@60``); None without test metrics."""
    if f"test/{metric}" not in final:
        return None
    points: list[LengthPoint] = [{"length": None, "value": final[f"test/{metric}"], "solved": solved(final, "test")}]
    for n in sorted(set(lengths)):
        key = f"test@{n}/{metric}"
        if key in final:
            points.append({"length": n, "value": final[key], "solved": solved(final, f"test@{n}")})
    up_to: int | None = None
    if points[0]["solved"]:
        up_to = trained[1]
        for p in points[1:]:
            if not p["solved"]:
                break
            up_to = max(up_to, p["length"] or 0)
    return {"metric": metric, "trained": list(trained), "per_length": points, "generalises_up_to": up_to}


def _span(trained: Sequence[int]) -> str:
    lo, hi = trained
    return str(hi) if lo == hi else f"{lo}-{hi}"


def length_phrase(curve: LengthCurve) -> str:
    """One line: how far the run generalises, and the metric at each length."""
    span = _span(curve["trained"])
    up = curve["generalises_up_to"]
    evaluated = [p for p in curve["per_length"] if p["length"] is not None]
    if up is None:
        head = f"not solved at its training lengths ({span})"
    elif evaluated and up >= max(p["length"] or 0 for p in evaluated):
        head = f"generalises up to length {up}, the longest evaluated (trained on {span})"
    elif up == curve["trained"][1]:
        head = f"generalises up to its training length {up} only (trained on {span})"
    else:
        head = f"generalises up to length {up} (trained on {span})"
    values = [f"{curve['metric']} {curve['per_length'][0]['value']:.2f} at {span}"]
    values += [f"{p['value']:.2f} @{p['length']}" for p in evaluated]
    return f"{head}: {', '.join(values)}"
