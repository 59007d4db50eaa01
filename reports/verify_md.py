"""``<out>/verify/verify.md``: every claim judged under ``<out>``, each at its latest verdict.

``seqbench verify`` records each claim it judges as ``<out>/verify/<claim>/<profile>-verdict.json``
(``bench/core/verdicts.py``), then writes verify.md from all the records there, so ``seqbench verify A`` and
then ``seqbench verify B`` leave a verify.md of both, each row saying when and by which commit it was judged.
A record whose claim has changed since (its settings, seeds, looks, rules or controls: ``claim_hash``) or
whose claim file is gone is left out of the tables and listed with why: its verdict no longer speaks for
the claim. ``make verdicts`` (``benchmarks/verdicts.py``) copies verify.md's claim table into the README.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.text import markdown_table
from seqbench.bench.core.verdicts import VerdictRecord, VerdictRow, recorded_verdicts, write_verdict
from seqbench.sweeps.claims.load import claim_files, load_claim
from seqbench.sweeps.claims.results import ClaimResult
from seqbench.sweeps.claims.schema import Claim

RULES_HEAD = ["claim", "profile", "source", "rule", "paper", "measured (mean [95% CI] n)", "needs", "verdict"]
# benchmarks/verdicts.py finds the claim table by the start of this header: keep its first three columns
CLAIMS_HEAD = ["claim", "verdict", "decided", "profile", "wall s", "judged", "registration"]
_ROW_KEYS = {  # VerdictRow key -> the verdict table's column (sweeps.claims.results.verdict_table)
    "rule": "rule",
    "configuration": "configuration",
    "paper": "paper",
    "measured": "measured (mean [95% CI] n)",
    "needs": "needs",
    "verdict": "verdict",
}


def claim_hash(claim: Claim, profile: Profile) -> str:
    """Short hash of what decides the claim's verdict at ``profile``: its resolved settings (seeds
    included), looks, rules and controls; not its question, source or note."""
    decides = {
        "kind": claim.kind,
        "spec": claim.resolved(profile),
        "looks": claim.looks_for(profile),
        "rules": [r.model_dump(mode="json") for r in claim.rules(profile)],
        "controls": [r.model_dump(mode="json") for r in claim.controls_for(profile)],
    }
    return hashlib.sha256(json.dumps(decides, sort_keys=True, default=str).encode()).hexdigest()[:12]


def record_of(res: ClaimResult, rows: pd.DataFrame, built: dict[str, Any]) -> VerdictRecord:
    """The record of one judged claim: ``rows`` are its rows of the verdict table."""
    c = res.claim
    return VerdictRecord(
        claim=c.name,
        claim_file=c.path,
        claim_hash=claim_hash(c, res.profile),
        source=c.source.cite,
        profile=res.profile,
        registration=c.digest(res.profile),
        verdict=res.verdict,
        decided=res.verdict_text()[len(res.verdict) :].strip(" ()"),
        wall_s=float(res.wall_s),
        judged=built["when"],
        seqbench_version=built["version"],
        git_sha=built["git_sha"],
        error=res.error,
        note=c.note,
        rows=[
            VerdictRow(**{k: str(row[col]) for k, col in _ROW_KEYS.items()})  # type: ignore[typeddict-item]
            for _, row in rows.iterrows()
        ],
    )


def stale(rec: VerdictRecord) -> str:
    """Why a record no longer speaks for its claim ("" when it does)."""
    path = Path(rec.get("claim_file", ""))
    if not path.is_file():  # a shipped claim judged in another checkout (the folder copied or moved) is found by name
        path = next((p for p in claim_files() if p.stem == rec["claim"]), path)
    if not path.is_file():
        return f"its claim file {path} is gone"
    try:
        now = claim_hash(load_claim(path), rec["profile"])
    except (UserError, ValueError, OSError, KeyError) as e:
        return f"its claim file no longer loads ({str(e).splitlines()[0]})"
    return "" if now == rec.get("claim_hash") else f"the claim changed since it was judged on {rec.get('judged')}"


def markdown(records: list[VerdictRecord], built: dict[str, Any], left_out: Sequence[str] = ()) -> str:
    """verify.md over ``records`` (by claim, then profile); ``left_out``: a line per record not shown."""
    rules = [
        [r["claim"], r["profile"], r.get("source", ""), *(row.get(k, "") for k in _ROW_KEYS if k != "configuration")]
        for r in records
        for row in (
            r.get("rows") or [VerdictRow(rule="-", measured=r.get("error") or "not judged", verdict=r["verdict"])]
        )
    ]
    claims = [
        [
            r["claim"],
            r["verdict"],
            r.get("decided") or "-",
            r["profile"],
            f"{r.get('wall_s', float('nan')):.0f}",
            f"{r.get('judged', '?')} ({r.get('git_sha', '?')})",
            r.get("registration") or "-",
        ]
        for r in records
    ]
    out = [
        "# seqbench verify",
        "",
        f"Every claim judged in this folder, at its latest verdict; built by seqbench {built['version']} "
        f"({built['git_sha']}), {built['when']}. Each claim's row says when, and by which commit, it was judged.",
        "",
        markdown_table(RULES_HEAD, rules) if rules else "_(no claim judged)_",
        "",
        markdown_table(CLAIMS_HEAD, claims, align="llllrll") if claims else "_(no claim judged)_",
    ]
    if left_out:
        out += ["", "Left out (their verdicts no longer speak for the claim):", ""] + [f"- {x}" for x in left_out]
    notes = {r["claim"]: r.get("note", "") for r in records}
    out += [x for name, note in notes.items() if note for x in ("", f"**{name}.** {note}")]
    return "\n".join(out) + "\n"


def write_markdown(results: list[ClaimResult], table: pd.DataFrame, built: dict[str, Any], folder: Path) -> Path:
    """Record each of ``results`` under ``folder`` (``table``: their verdict table), then write
    ``folder/verify.md`` over every record there; return its path."""
    with _locked(folder):
        for res in results:
            rows = table[table["claim"] == res.claim.name] if "claim" in table.columns else table
            write_verdict(folder, record_of(res, rows, built))
        return _rebuild(results, built, folder)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Held while recording and rebuilding verify.md: invocations run side by side into one folder (a claim
    each) then cannot interleave, so the last to finish writes a verify.md that has every record."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".verify.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _rebuild(results: list[ClaimResult], built: dict[str, Any], folder: Path) -> Path:
    records, problems = recorded_verdicts(folder)
    fresh = {(r.claim.name, r.profile) for r in results}
    shown, left_out = [], [f"unreadable: {p}" for p in problems]
    for rec in records:
        why = "" if (rec["claim"], rec["profile"]) in fresh else stale(rec)
        if why:
            left_out.append(f"{rec['claim']} ({rec['profile']}, {rec['verdict']}): {why}")
        else:
            shown.append(rec)
    path = folder / "verify.md"
    atomic_write(path, markdown(shown, built, left_out))
    return path
