"""The probe battery of ``seqbench probe``: which tasks, which difficulty ladders, which budgets.

A **probe** is one task with a **ladder**: one task field (pairs to recall, positions, bits of parity
...) stepped from easy to hard, every other field fixed. Each rung is trained with a fixed budget for
every seed at each of a few learning rates, and a seed solves a rung when its best run meets the
task's own ``solved`` criterion (the best of a few rates per seed, as MAD and Zoology sweep them). A
ladder may instead step the **evaluation length** (``EVAL_LENGTHS``): each seed trains once per rate
at the task's own length and is tested at every rung's length, Delétang et al.'s protocol. The card
reports, per probe, where each model stops (``sweeps/frontier.py``).

Two **profiles**, like a claim's: ``quick`` decides one small model's battery on 2 CPU cores in about
ten minutes (tiny widths, four to six rungs, a few hundred steps, early stop once solved); ``paper`` is
MAD's protocol for a GPU (Poli et al. 2024, App. B and the mad-lab code: width 128, two blocks of
mixer + MLP, batch 128, AdamW with a cosine schedule at rates 1e-4 / 5e-4 / 1e-3 and weight decay 0 /
0.1, up to 200 epochs of 100 batches), on longer ladders with MAD's six tasks plus the copy-memory
delay of Bai et al. 2018.

The quick battery was re-cut (issue 36) so that its card measures a frontier in most cells and tells
every pair of shipped models apart: it keeps the MAD probes that did (recall, fuzzy recall, selective
copying, on longer ladders) and asks the field's live questions instead of the ones no model failed or
the recall split repeated (compression, memorization, noisy recall and the copy delay, where 46 of
the old card's 56 cells were censored): state tracking, copying beyond a fixed state, and length
generalisation. Pure data: no torch, nothing trained here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile, as_profile

# A ladder over this key steps the evaluation length of one training run (``eval.lengths``) instead of a
# task field: each seed trains once per rate (at the task's own length), and a rung is solved when the
# test metric at that length meets the probe's ``stop_at`` (the task's own solved threshold).
EVAL_LENGTHS = "eval.lengths"


@dataclass(frozen=True)
class Ladder:
    """One task field stepped from easy to hard."""

    key: str  # the task field each rung sets, e.g. "n_pairs"
    rungs: tuple[Any, ...]  # its values, easiest first (strictly harder as they go)
    unit: str  # how the card names a rung's value: "8 pairs", "delay 40"
    reference: Any  # the rung whose accuracy the card's table shows beside the frontier

    def phrase(self, rung: Any) -> str:
        return rung_phrase(self.unit, rung)

    @property
    def evaluated(self) -> bool:
        """Whether the rungs are evaluation lengths of one training run (``EVAL_LENGTHS``), not task values."""
        return self.key == EVAL_LENGTHS

    @property
    def setting(self) -> str:
        """The dotted setting the rungs step: ``task.n_pairs``, or ``eval.lengths``."""
        return self.key if self.evaluated else f"task.{self.key}"


def rung_phrase(unit: str, rung: Any) -> str:
    """``8 pairs``, ``noise 0.5``: a rung in the card's words (a unit ending in a space goes first)."""
    value = f"{rung:g}" if isinstance(rung, (int, float)) else str(rung)
    if unit.endswith(" "):
        return f"{unit}{value}"
    return f"{value} {unit[:-1] if rung == 1 and unit.endswith('s') else unit}"  # 1 pair, 2 pairs


@dataclass(frozen=True)
class Probe:
    """One task of the battery with its ladder and its budget."""

    name: str  # the card's row, and what --probes takes
    task: str  # a registered task
    skill: str  # what it probes, one line for the card
    ladder: Ladder
    settings: dict[str, Any] = field(default_factory=dict)  # the task's fixed fields (task.<key>)
    steps: int = 500  # training budget per run
    # early stop once the primary metric reaches this, the task's own solved threshold (val/acc >= 0.95 for
    # every task here), so solved rungs leave budget to the hard ones; None trains every run to the end
    stop_at: float | None = 0.95

    def __post_init__(self) -> None:
        if self.ladder.evaluated and self.stop_at is None:
            raise ValueError(f"probe {self.name}: a ladder of evaluation lengths needs stop_at, its solved threshold")


@dataclass(frozen=True)
class Battery:
    """A profile's probe battery: what every probe of it shares (``QUICK`` and ``PAPER``; a notebook may
    make its own, e.g. a smaller one for a test)."""

    name: str  # the profile, "quick" or "paper" (a battery of one's own: any name, which its card records)
    seeds: int  # seed replicates per rung (seeds=N overrides)
    lrs: tuple[float, ...]  # learning rates, best per seed (optim.lr=a,b overrides)
    model: dict[str, Any]  # model fields applied where a model has them (model.d_model=... overrides)
    run: dict[str, Any]  # every run's other settings (train.*, optim.*, tracking.*)
    probes: tuple[Probe, ...]
    weight_decays: tuple[float, ...] = (0.0,)  # searched with the rates (MAD: 0 and 0.1)
    note: str = ""  # where the profile is meant to run


_RECALL = "in-context recall of key-value pairs (MQAR, Zoology)"
_FUZZY = "recall when keys and values span several tokens (MAD fuzzy recall)"
_NOISY = "recall among noise tokens it must learn to skip (MAD noisy recall)"
_SELECT = "copy symbols scattered among blanks, in order (selective copying)"
_COMPRESS = "reproduce a sequence from one position's state (MAD compression)"
_MEMORIZE = "store a fixed map in the weights (MAD memorization)"
_COPY = "hold symbols across a delay (copy memory, Bai et al. 2018)"
_STATE = "track a state through every prefix: running parity (Merrill et al. 2024, Liu et al. 2023)"
_COPY_STATE = "copy more symbols than a fixed state holds (Jelassi et al. 2024; copy memory, Arjovsky et al. 2016)"
_LENGTHS = "trained at length 32, still solve induction heads at longer lengths (Gu & Dao 2023, Tab. 2)"


QUICK = Battery(
    name="quick",
    seeds=3,
    lrs=(3e-3, 1e-2),
    note="2 CPU cores, about 10 minutes for one small model",
    model={"d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64},
    run={
        "train.batch_size": 32,
        "train.val_every": 50,
        "train.val_batches": 4,
        "eval.test": False,
        "tracking.wandb": "off",
    },
    probes=(
        Probe(
            "recall",
            "assoc_recall",
            _RECALL,
            Ladder("n_pairs", (1, 2, 4, 6, 8, 10), "pairs", 4),
            {"vocab": 64, "length": 30},
            steps=500,
        ),
        Probe(
            "fuzzy_recall",
            "fuzzy_recall",
            _FUZZY,
            Ladder("n_pairs", (1, 2, 4, 8), "pairs", 2),
            {"vocab": 16, "key_len": 2, "value_len": 2},
            steps=500,
        ),
        Probe(
            "selective_copy",
            "selective_copy",
            _SELECT,
            Ladder("length", (8, 16, 32, 64, 128, 256), "positions", 32),
            {"n_symbols": 3, "alphabet": 4},
            steps=500,
        ),
        Probe(
            "state_tracking",
            "parity",
            _STATE,
            Ladder("length", (2, 4, 8, 16, 32, 64), "bits", 16),
            {"length_min": 1, "scored": "every"},
            steps=500,
        ),
        Probe(
            "copy",
            "copy",
            _COPY_STATE,
            Ladder("n_symbols", (2, 4, 8, 16, 32, 64, 128), "symbols", 8),
            {"delay": 4, "alphabet": 4},
            steps=500,
        ),
        Probe(
            "length_generalisation",
            "induction",
            _LENGTHS,
            Ladder(EVAL_LENGTHS, (32, 64, 128, 256, 512, 1024, 2048), "length ", 128),
            {"vocab": 16, "length": 32},
            steps=1000,
        ),
    ),
)

_EPOCHS = 20_000  # MAD: 200 epochs x 12,800 sequences / batch 128
PAPER = Battery(
    name="paper",
    seeds=5,
    lrs=(1e-4, 5e-4, 1e-3),
    weight_decays=(0.0, 0.1),
    note="a GPU: MAD's widths and optimiser grid, 20,000 steps a run",
    model={"d_model": 128, "n_layers": 2, "n_heads": 16, "d_ff": 256},
    run={
        "train.batch_size": 128,
        "train.val_every": 500,
        "train.val_batches": 10,
        "eval.test": False,
        "optim.optimizer": "adamw",
        "optim.schedule": "cosine",
        "optim.warmup_steps": 0,
    },
    probes=(
        Probe(
            "recall",
            "assoc_recall",
            _RECALL,
            Ladder("n_pairs", (8, 16, 32, 64, 96), "pairs", 32),
            {"vocab": 256, "length": 512},
            steps=_EPOCHS,
        ),
        Probe(
            "fuzzy_recall",
            "fuzzy_recall",
            _FUZZY,
            Ladder("n_pairs", (4, 8, 16, 32), "pairs", 16),
            {"vocab": 16, "key_len": 3, "value_len": 3},
            steps=_EPOCHS,
        ),
        Probe(
            "noisy_recall",
            "noisy_recall",
            _NOISY,
            Ladder("noise", (0.2, 0.4, 0.6, 0.8), "noise ", 0.6),
            {"vocab": 64, "noise_vocab": 16, "n_pairs": 16},
            steps=_EPOCHS,
        ),
        Probe(
            "selective_copy",
            "selective_copy",
            _SELECT,
            Ladder("length", (256, 512, 1024), "positions", 512),
            {"n_symbols": 16, "alphabet": 14},
            steps=_EPOCHS,
        ),
        Probe(
            "compression",
            "compression",
            _COMPRESS,
            Ladder("length", (31, 63, 127, 255), "symbols", 63),
            {"alphabet": 15},
            steps=_EPOCHS,
        ),
        Probe(
            "memorization",
            "memorization",
            _MEMORIZE,
            Ladder("n_keys", (127, 255, 511, 1023, 2047, 4095), "facts", 1023),
            {"length": 32},
            steps=400,
        ),  # MAD: 200 epochs of 256 sequences
        Probe(
            "copy",
            "copy",
            _COPY,
            Ladder("delay", (100, 200, 500, 1000), "delay ", 500),
            {"n_symbols": 10, "alphabet": 8},
            steps=_EPOCHS,
        ),
    ),
)

BATTERIES: dict[Profile, Battery] = {"quick": QUICK, "paper": PAPER}


def battery(name: str) -> Battery:
    """The battery of profile ``name``, or one line naming ``--profile`` and the allowed values."""
    return BATTERIES[as_profile(name)]


def select(prof: Battery, names: list[str] | None, rungs: int | None) -> tuple[Probe, ...]:
    """The profile's probes named in ``names`` (all when None), each cut to its first ``rungs`` rungs."""
    known = {p.name: p for p in prof.probes}
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise UserError(f"--probes: unknown probe {', '.join(unknown)}; allowed: {', '.join(known)}")
    if rungs is not None and rungs < 1:
        raise UserError(f"--rungs: must be >= 1 (got {rungs})")
    chosen = [known[n] for n in names] if names else list(prof.probes)
    return tuple(_cut(p, rungs) for p in chosen)


def _cut(p: Probe, rungs: int | None) -> Probe:
    if rungs is None or rungs >= len(p.ladder.rungs):
        return p
    kept = p.ladder.rungs[:rungs]
    ref = p.ladder.reference if p.ladder.reference in kept else kept[-1]
    return Probe(
        p.name, p.task, p.skill, Ladder(p.ladder.key, kept, p.ladder.unit, ref), p.settings, p.steps, p.stop_at
    )
