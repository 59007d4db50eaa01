"""``card.json``: ``seqbench probe``'s capability card (``<out_dir>/cards/<name>/``), typed once: the probe
command writes it, ``sweeps.frontier`` fills its entries and ``reports.card`` renders it (a card read back
renders the same page). Standard library only, like ``bench.core.artifacts``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from seqbench.bench.core.artifacts import atomic_write, check_keys, json_default, read_json

CARD = "card.json"
# a reader refuses another format or a newer version (2: an entry's `failed`; 3: a rung's `skipped`)
CARD_FORMAT, CARD_VERSION = "seqbench-card", 3


class CardRung(TypedDict, total=False):
    """One rung of one probe for one model, over its seeds, each seed at its best learning rate."""

    rung: Any  # the ladder field's value
    n: int  # seeds with every run of the rung finished (trained on it)
    skipped: int  # seeds not trained on it: they failed an easier rung (absent: none)
    solved: int  # seeds whose best run meets the task's `solved` criterion
    share_lo: float  # exact (Clopper-Pearson) interval of the share of seeds solving, at the card's level
    share_hi: float
    mean: float  # the task's primary metric over seeds, with its Student-t interval (clipped to its range)
    lo: float
    hi: float
    baseline: float  # the same metric of the task's memoryless baseline


class CardEntry(TypedDict, total=False):
    """One probe for one model. Frontiers are rung indices; -1 is "below the first rung"."""

    model: str  # the model's label (card ``models[i].label``)
    probe: str
    study: str  # the Optuna study of its runs
    complete: bool  # every run of every rung finished
    failed: list[str]  # trials that failed without a result (rung: why); `probe --retry-failed` runs them again
    seed_frontiers: dict[str, int]  # seed -> hardest rung solved with every easier rung solved too
    frontier: int  # the median seed frontier, with the order-statistic interval [lo, hi] of that median
    lo: int
    hi: int
    coverage: float  # the interval's exact coverage (75% at 3 seeds; 95% needs 6)
    gaps: list[str]  # seeds that solved a rung above their frontier
    rungs: list[CardRung]
    metric: str  # val/<the task's primary metric>
    step_ms: float  # median training step time over the probe's runs
    n_params: int  # at the reference rung
    flops_per_token: float  # analytic training FLOPs per token at the reference rung (absent: uncounted)


class Card(TypedDict, total=False):
    """``card.json``: probes x models, with the settings that made it."""

    format: str  # CARD_FORMAT
    version: int  # CARD_VERSION
    created: str  # local time, ISO 8601
    seqbench_version: str | None
    git_sha: str | None
    argv: list[str]
    profile: str  # quick | paper (or a custom one from the notebook API)
    seeds: list[int]
    lrs: list[float]  # each seed's best over these (and weight_decays) per rung
    weight_decays: list[float]
    level: float  # of the share and metric intervals (the frontier's coverage is per entry)
    models: list[dict[str, Any]]  # {label, settings: [key=value ...]}, the reference first
    probes: list[dict[str, Any]]  # {name, task, skill, key, unit, rungs, reference, settings, steps}
    entries: list[CardEntry]
    answer: list[str]  # the card's sentences, one per model
    against: dict[str, Any]  # models taken from another card, not retrained (bench/core/card_against.py)


def write_card(folder: Path, card: Card) -> Path:
    check_keys(Card, card)
    for entry in card.get("entries", []):
        check_keys(CardEntry, entry)
        for rung in entry.get("rungs", []):
            check_keys(CardRung, rung)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CARD
    atomic_write(
        path,
        json.dumps({**card, "format": CARD_FORMAT, "version": CARD_VERSION}, indent=1, default=json_default) + "\n",
    )
    return path


def read_card(path: Path) -> Card:
    """A card written by ``write_card``; ValueError naming the problem for anything else."""
    data = read_json(Path(path))
    if not isinstance(data, dict) or data.get("format") != CARD_FORMAT:
        raise ValueError(f"{path}: not a seqbench card (no format {CARD_FORMAT!r})")
    if not isinstance(data.get("version"), int) or data["version"] > CARD_VERSION:
        raise ValueError(f"{path}: card version {data.get('version')!r}; this seqbench reads up to {CARD_VERSION}")
    return data  # type: ignore[return-value]
