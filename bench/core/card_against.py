"""One's own models beside another card's, without retraining that card's: ``seqbench probe ... --against``.

The card shipped with seqbench (``reports/baseline/card.json``, made by ``make card``: eight shipped models
at the quick profile, seeds 0-2) is the usual other card; ``--against PATH`` takes any ``card.json``. Two
cards sit side by side only where they measured the same thing: the same profile, seeds, learning rates and
weight decays, and for every probe of one's own run the same task, ladder (key, rungs, reference rung),
settings and steps. ``check`` compares one's plan to the other card before anything trains and refuses the
first difference in one line; ``beside`` appends the other card's models (a label one's own run measured
stays one's own) with their entries, and records where they came from in the card's ``against`` field, which
every face of the card states.

Standard library only, like ``bench.core.card_format``: ``probe`` checks before it imports the training stack.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from seqbench.bench.core.card_format import CARD, Card, read_card
from seqbench.bench.core.errors import UserError

BASELINE = "baseline"  # --against baseline: the card shipped in seqbench.reports
# what must agree between the two cards' headers, and how a refusal names it
_HEADER = {"profile": "profile", "seeds": "seeds", "lrs": "learning rates", "weight_decays": "weight decays"}
_PROBE = ("task", "key", "rungs", "reference", "settings", "steps")


def baseline_path() -> Path:
    """The shipped baseline card (package data of ``seqbench.reports``, so it is there in an installed seqbench)."""
    return Path(str(resources.files("seqbench.reports") / BASELINE / CARD))


def load(against: str) -> tuple[Card, str]:
    """The card ``--against`` names (``baseline`` or a path to a card.json or its folder) and how to cite it."""
    path = baseline_path() if against == BASELINE else Path(against)
    if path.is_dir():
        path = path / CARD
    if not path.is_file():
        raise UserError(f"--against: no card at {path} (give 'baseline' or the path of a card.json)")
    try:
        card = read_card(path)
    except ValueError as e:
        raise UserError(f"--against: {e}") from None
    where = "the shipped baseline card" if against == BASELINE else str(path)
    return card, where


def check(own: Card, other: Card, where: str) -> None:
    """Refuse, in one line, the first thing one's card (its header and probes, entries not needed) measures
    differently from ``other``: the two would not be comparable cell by cell."""
    for key, words in _HEADER.items():
        if own.get(key) != other.get(key):
            raise UserError(
                f"--against: {words} differ (yours {own.get(key)}, {where}'s {other.get(key)}); probe with "
                f"the other card's {words} to put your models beside it"
            )
    theirs = {p["name"]: p for p in other.get("probes", [])}
    for p in own.get("probes", []):
        if p["name"] not in theirs:
            raise UserError(
                f"--against: probe {p['name']!r} is not on {where} (it has {', '.join(theirs) or 'none'}); "
                "choose --probes among those"
            )
        for key in _PROBE:
            if p.get(key) != theirs[p["name"]].get(key):
                raise UserError(
                    f"--against: probe {p['name']} differs in {key} (yours {p.get(key)}, {where}'s "
                    f"{theirs[p['name']].get(key)}); probe with the other card's {key} (drop --rungs or the "
                    "override that changed it)"
                )


def beside(own: Card, other: Card, where: str) -> Card:
    """``own`` with ``other``'s models after its own (a label measured in ``own`` is not taken twice), each
    with its entries for ``own``'s probes; ``against`` says where they came from and that they were not
    retrained."""
    check(own, other, where)
    mine = {m["label"] for m in own["models"]}
    probes = {p["name"] for p in own["probes"]}
    taken = [m for m in other["models"] if m["label"] not in mine]
    labels = {m["label"] for m in taken}
    entries = [e for e in other["entries"] if e["model"] in labels and e["probe"] in probes]
    against: dict[str, Any] = {
        "card": where,
        "models": [m["label"] for m in taken],
        "measured_here": sorted(mine & {m["label"] for m in other["models"]}),
        "created": other.get("created"),
        "seqbench_version": other.get("seqbench_version"),
        "git_sha": other.get("git_sha"),
    }
    return {**own, "models": [*own["models"], *taken], "entries": [*own["entries"], *entries], "against": against}


def against_text(card: Card) -> str:
    """The sentence every face of a card with ``against`` carries: which models were not trained here."""
    a = card.get("against")
    if not a:
        return ""
    made = ", ".join(
        x for x in (a.get("seqbench_version") and f"seqbench {a['seqbench_version']}", a.get("created")) if x
    )
    again = f"; measured here, not taken from it: {', '.join(a['measured_here'])}" if a.get("measured_here") else ""
    return (
        f"Beside this run's models: {', '.join(a['models']) or 'none'} from {a['card']}"
        f"{f' ({made})' if made else ''}, not retrained here{again}."
    )
