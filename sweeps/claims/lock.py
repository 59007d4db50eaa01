"""Looks are locked: a claim's study records its seeds and looks the first time it is judged, and
``seqbench verify`` refuses to judge those seeds at any other looks.

Why: the 95% of a verdict is spent over the looks fixed before the seeds ran (``stats.look_alphas``).
Adding a look after an inconclusive one, or re-cutting the looks once their verdicts were seen, tests
the same seeds again at a fresh alpha: keep doing it and anything holds eventually. The study's name
(``Claim.digest``) leaves seeds and looks out, so a change to them lands on the same lock here and is
refused, instead of silently becoming a new study over the old seeds.

A fresh study is always allowed: seeds that no study of this claim has used, at any looks, get a study
of their own (the first one keeps the digest's plain name). The lock is one JSON file beside the
claim's look specs, ``<out>/verify/<claim>/<profile>-<digest>-looks.json``:
``{"studies": [{"study": name, "seeds": [...], "looks": [...]}]}``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.errors import UserError


def lock_path(folder: Path, profile: str, digest: str) -> Path:
    return folder / f"{profile}-{digest}-looks.json"


def _locked(path: Path) -> list[dict]:
    return json.loads(path.read_text())["studies"] if path.is_file() else []


def study_for(path: Path, base: str, seeds: list[int], looks: list[int], claim: str, fresh: str) -> str:
    """The study that judges ``seeds`` at ``looks``: the one that locked exactly these, else a fresh one
    (``base`` for the first, ``base-<hash of the seeds>`` after). UserError, naming the lock, when a study
    already judged any of these seeds at other looks; ``claim`` names the claim and profile, ``fresh`` says
    how to start a fresh study."""
    studies = _locked(path)
    for s in studies:
        if s["seeds"] == seeds and s["looks"] == looks:
            return s["study"]
    clash = next((s for s in studies if set(s["seeds"]) & set(seeds)), None)
    if clash is not None:
        raise UserError(
            f"claim {claim}: seeds {_span(seeds)} at looks {looks}, but study {clash['study']} already judged seeds "
            f"{_span(clash['seeds'])} at looks {clash['looks']} ({path}); looks are locked once judged (more looks "
            f"over seen seeds stretch the verdict's 95%): restore them, or start a fresh study with {fresh}"
        )
    if not studies:
        return base
    return f"{base}-{hashlib.sha256(json.dumps(seeds).encode()).hexdigest()[:6]}"


def record(path: Path, study: str, seeds: list[int], looks: list[int]) -> None:
    """Lock ``study`` to ``seeds`` and ``looks`` (once: a study already locked is left as it is)."""
    studies = _locked(path)
    if any(s["study"] == study for s in studies):
        return
    studies.append({"study": study, "seeds": list(seeds), "looks": list(looks)})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"studies": studies}, indent=1) + "\n")


def _span(seeds: list[int]) -> str:
    """``300-304`` for consecutive seeds, else the list."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return str(seeds)
