"""What ``seqbench verify`` leaves per claim, typed once: ``<out_dir>/verify/<claim>/<profile>-verdict.json``,
the claim's latest verdict at that profile, as its rows of the verdict table read (text to show, not numbers
to judge again).

verify writes one for each claim it judges and builds ``verify.md`` from every one under
``<out_dir>/verify/`` (``reports/verify_md.py``), so ``seqbench verify A`` and then ``seqbench verify B`` leave
a verify.md of both. Each file is written with ``atomic_write`` and carries a format and a version; a reader
refuses another format or a newer version. Standard library only, like ``bench/core/artifacts.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.profiles import Profile

VERIFY = "verify"  # <out_dir>/verify/: index.html, verify.md, and a folder per claim
VERDICT_SUFFIX = "-verdict.json"  # <out_dir>/verify/<claim>/<profile>-verdict.json
VERDICT_FORMAT, VERDICT_VERSION = "seqbench-verdict", 1  # a reader refuses another format or a newer version
# the source of a claim that is its author's own hypothesis (sweeps/claims/schema.py: source.kind: hypothesis),
# where a reproduction names its paper: in the source column of its rows, so every table says it
HYPOTHESIS = "own hypothesis, not a reproduction"


class VerdictRow(TypedDict, total=False):
    """One rule or control of the claim, as the verdict table shows it."""

    rule: str  # "control: attention learns MQAR ..." for a control
    configuration: str
    paper: str  # the paper's number the rule stands for, as the claim states it ("" for a hypothesis)
    measured: str  # "val/acc: 0.991 [0.98, 1] n=7, p=0.002"
    needs: str  # the thresholds and why the rule is judged the way it is
    verdict: str  # the rule's verdict, with its reason unless it holds


class VerdictRecord(TypedDict, total=False):
    """``<profile>-verdict.json``: one claim's latest verdict at one profile."""

    format: str  # VERDICT_FORMAT
    version: int  # VERDICT_VERSION
    claim: str  # the claim's name (its file stem)
    claim_file: str  # the claim's YAML as verify read it
    claim_hash: str  # hash of what decides the verdict (reports.verify_md.claim_hash): a changed claim shows
    source: str  # the citation, "Arora et al. 2023 Fig. 2 (MQAR)", or HYPOTHESIS for an own hypothesis
    profile: Profile  # quick | paper
    registration: str  # Claim.digest at the profile: the registration judged (sweeps/claims/registry.py)
    verdict: str  # holds | fails | inconclusive | invalid | error
    decided: str  # "decided at look 2 of 3, n=5, alpha 0.0167", why invalid, or "" (not judged)
    wall_s: float  # the claim's wall time in that invocation (a resumed study: the resumption's)
    judged: str  # local time of the invocation that judged it, "2026-11-26 07:10"
    seqbench_version: str
    git_sha: str  # of the checkout that judged it ("no git" outside one)
    error: str  # why it could not run, or ""
    note: str  # the claim's note at the time
    rows: list[VerdictRow]  # controls first, then the rules


def verdict_path(verify_dir: Path, claim: str, profile: Profile) -> Path:
    """``<verify_dir>/<claim>/<profile>-verdict.json``."""
    return Path(verify_dir) / claim / f"{profile}{VERDICT_SUFFIX}"


def _check_keys(kind: type, d: Mapping[str, Any]) -> None:
    unknown = set(d) - set(kind.__annotations__)
    if unknown:
        raise ValueError(f"{kind.__name__}: undeclared keys {sorted(unknown)}; declare them in bench/core/verdicts.py")


def write_verdict(verify_dir: Path, record: VerdictRecord) -> Path:
    """Write ``record`` (replacing the claim's earlier one at its profile); return its path."""
    _check_keys(VerdictRecord, record)
    for row in record.get("rows", []):
        _check_keys(VerdictRow, row)
    path = verdict_path(verify_dir, record["claim"], record["profile"])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({**record, "format": VERDICT_FORMAT, "version": VERDICT_VERSION}, indent=1) + "\n")
    return path


def read_verdict(path: Path) -> VerdictRecord:
    """A record written by ``write_verdict``; ValueError naming the problem for anything else."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: unreadable ({e})") from None
    if not isinstance(data, dict) or data.get("format") != VERDICT_FORMAT:
        raise ValueError(f"{path}: not a seqbench verdict (no format {VERDICT_FORMAT!r})")
    if not isinstance(data.get("version"), int) or data["version"] > VERDICT_VERSION:
        raise ValueError(
            f"{path}: verdict version {data.get('version')!r}; this seqbench reads up to {VERDICT_VERSION}"
        )
    return data  # type: ignore[return-value]


def recorded_verdicts(verify_dir: Path) -> tuple[list[VerdictRecord], list[str]]:
    """Every claim's latest verdict per profile under ``verify_dir``, by claim then profile; and a line
    ("path: why") for each file that could not be read, so one bad file never hides the others."""
    records, problems = [], []
    for path in sorted(Path(verify_dir).glob(f"*/*{VERDICT_SUFFIX}")):
        try:
            records.append(read_verdict(path))
        except ValueError as e:
            problems.append(str(e))
    return records, problems
