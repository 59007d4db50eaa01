"""Registrations: a claim's rules are locked with its seeds, in a registry committed beside the claim files.

A **registration** is one version of a claim at one profile: its settings, seeds (a cost claim: its
replicates), looks, rules, thresholds and controls, hashed into ``Claim.digest``. ``seqbench verify``
judges a claim only under a registration, kept in ``registry.yaml`` in the claim file's folder (the
shipped one is ``sweeps/claims/registry.yaml``, committed, so a fresh clone has it):

- the claim's digest is registered: verify judges it (again: the same registration, re-run or resumed);
- its seeds are fresh (no registration of this claim at that profile used any of them; that no two claims
  share a seed is checked over the shipped registry by tests/sweeps/claims/test_registry.py):
  verify registers it (appending to the registry, dated; commit the file) and marks the claim's earlier
  registration at that profile, if any, as replaced;
- else it is refused, in one line, before anything trains: a rule, threshold, control, setting or look
  changed on seeds a registration of the claim already judged. A verdict on seeds whose
  rules moved after they were seen is a rule fitted to them; the way out is a new registration on fresh
  seeds.

The build is not in the digest: the same registration may be judged again on changed code (to see whether a
verdict reproduces), but the repository's verdict table keeps a registration's first verdict and lists a later
build's as a re-run beside it (``benchmarks/verdicts.py``), so re-running judged seeds cannot replace a verdict.

Cost claims measure afresh per registration (their cache is named by the digest), so a changed cost claim
is a new registration of its own; its replicates are counts, not seeds, and never clash.

Why a file in the repository and not a lock in the output folder (before issue 38): every verdict of the
generated table comes from a fresh clone, whose output folder has no lock, and the old lock hashed
seeds and looks but not the rules, so a changed threshold re-judged locked runs under the same name.

The file (``REGISTRY``)::

    registrations:
    - claim: scheduled_sampling
      profile: quick
      digest: 1a2b3c4d            # Claim.digest; null for a registration made before digests covered rules
      seeds: 10160-10169          # a range "a-b", or a list
      looks: [7, 10]
      registered: 2026-11-26
      after_pilot: the setting (sort, length 16, no attention) was chosen where the pilot showed exposure bias
      replaced: ""                # why a later registration replaced this one ("" for the current one)
"""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile, as_profile
from seqbench.sweeps.claims import negatives
from seqbench.sweeps.claims.looks import check_decidable
from seqbench.sweeps.claims.schema import Claim

REGISTRY = "registry.yaml"
HEADER = (
    "# Claim registrations (sweeps/claims/registry.py): one per claim and profile version that seqbench verify\n"
    "# judged or may judge. A changed rule, threshold, control, setting, seed or look is a new registration on\n"
    "# fresh seeds; verify appends it here (commit it). Written by seqbench verify; the after_pilot and replaced\n"
    "# texts may be edited by hand.\n"
)


@dataclass
class Registration:
    claim: str
    profile: Profile
    digest: str | None
    seeds: list[int]  # a cost claim: its replicates 0..n-1
    looks: list[int]
    registered: str  # ISO date
    after_pilot: str = ""  # what was chosen after a pilot or an earlier registration's result
    replaced: str = ""  # why a later registration replaced this one ("" = current)
    kind: str = "sweep"
    pilots: list[int] = field(default_factory=list)  # the pilot seeds this registration's settings came from

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d["seeds"] = seeds_text(self.seeds)
        d["pilots"] = [seeds_text(g) for g in _runs(self.pilots)]
        for k, empty in (("kind", "sweep"), ("pilots", []), ("after_pilot", ""), ("replaced", "")):
            if d[k] == empty:
                d.pop(k)
        return d


def _runs(seeds: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted ``seeds``: [1, 2, 3, 7] -> [[1, 2, 3], [7]]."""
    out: list[list[int]] = []
    for x in sorted(set(seeds)):
        if out and x == out[-1][-1] + 1:
            out[-1].append(x)
        else:
            out.append([x])
    return out


@dataclass
class Registry:
    path: Path
    registrations: list[Registration] = field(default_factory=list)

    def of(self, claim: str, profile: Profile) -> list[Registration]:
        """The claim's registrations at ``profile``, oldest first."""
        return [r for r in self.registrations if r.claim == claim and r.profile == profile]

    def current(self, claim: str, profile: Profile) -> Registration | None:
        live = [r for r in self.of(claim, profile) if not r.replaced]
        return live[-1] if live else None

    def save(self) -> None:
        body = yaml.safe_dump(
            {"registrations": [r.row() for r in self.registrations]},
            sort_keys=False,
            width=110,
            default_flow_style=None,
        )
        atomic_write(self.path, HEADER + body)


def seeds_text(seeds: list[int]) -> str | int | list[int]:
    """``"300-309"`` for consecutive seeds, ``7`` for one, else the list."""
    if len(seeds) == 1:
        return seeds[0]
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return list(seeds)


def parse_seeds(v: Any, where: str) -> list[int]:
    """A range ``"a-b"``, one integer, or a list of those."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, str) and "-" in v:
        a, b = v.split("-", 1)
        return list(range(int(a), int(b) + 1))
    if isinstance(v, list):
        return [x for item in v for x in parse_seeds(item, where)]
    raise UserError(f"{where}: seeds: a range 'a-b', an integer or a list of those, got {v!r}")


def registry_path(claim: Claim) -> Path | None:
    """``registry.yaml`` beside the claim's file (the shipped claims': ``sweeps/claims/registry.yaml``); None
    for a claim built in memory (``parse_claim`` without a path: an API caller's or a test's), which has no
    file to register beside and is judged unregistered."""
    return Path(claim.path).parent / REGISTRY if claim.path else None


def load_registry(path: Path) -> Registry:
    if not path.is_file():
        return Registry(path)
    raw = yaml.safe_load(path.read_text()) or {}
    out = Registry(path)
    for i, row in enumerate(raw.get("registrations") or []):
        where = f"{path}: registrations[{i}]"
        try:
            out.registrations.append(
                Registration(
                    claim=str(row["claim"]),
                    profile=as_profile(str(row["profile"]), f"{where}.profile"),
                    digest=None if row.get("digest") is None else str(row["digest"]),
                    seeds=parse_seeds(row["seeds"], where),
                    looks=[int(x) for x in row.get("looks") or []],
                    registered=str(row["registered"]),
                    after_pilot=str(row.get("after_pilot") or ""),
                    replaced=str(row.get("replaced") or ""),
                    kind=str(row.get("kind", "sweep")),
                    pilots=parse_seeds(row.get("pilots") or [], where),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"{where}: {e} (fields: claim, profile, digest, seeds, looks, registered)") from None
    return out


def used_seeds(claim: Claim, profile: Profile) -> list[int]:
    """The seeds (cost: replicates) a verify of ``profile`` may use: up to the last look."""
    if claim.kind == "cost":
        return list(range(claim.replicates_for(profile)))
    seeds = claim.seeds_for(profile)
    looks = claim.looks_for(profile) or [len(seeds)]
    return seeds[: looks[-1]]


def _span(seeds: list[int]) -> str:
    t = seeds_text(seeds)
    return t if isinstance(t, str) else str(t)


def check(claim: Claim, profile: Profile, registry: Registry | None = None) -> tuple[Registration, bool]:
    """The registration ``claim`` at ``profile`` is judged under, and whether it is new (not yet in the
    registry: :func:`register` appends it). UserError, one line, when the claim changed on judged seeds."""
    path = registry_path(claim)
    reg = registry or (load_registry(path) if path else Registry(Path(REGISTRY)))
    digest = claim.digest(profile)
    for r in reg.of(claim.name, profile):
        if r.digest == digest:
            return r, False
    seeds, looks = used_seeds(claim, profile), claim.looks_for(profile) or []
    if claim.kind == "sweep":
        for r in reg.of(claim.name, profile):
            shared = sorted(set(r.seeds) & set(seeds))
            if r.kind != "sweep" or not shared:
                continue
            raise UserError(
                f"claim {claim.name} (profile {profile}, digest {digest}): its settings, rules, thresholds, "
                f"controls, seeds or looks changed since registration {r.digest or '(made before digests)'} on seeds "
                f"{_span(r.seeds)} (registered {r.registered}, {reg.path}); seeds judged under one registration are "
                f"never judged under another: restore the claim, or register it afresh with seeds: values no "
                f"registration of it at profile {profile} used"
            )
    new = Registration(
        claim.name, profile, digest, seeds, list(looks), datetime.date.today().isoformat(), kind=claim.kind
    )
    return new, True


def register(claim: Claim, profile: Profile, new: Registration) -> Path:
    """Append ``new`` to the claim's registry (read afresh: another verify may have written since), marking
    the claim's current registration at ``profile`` as replaced."""
    path = registry_path(claim)
    if path is None:
        raise ValueError(f"claim {claim.name}: built in memory, it has no registry to write")
    reg = load_registry(path)
    if any(r.digest == new.digest and r.claim == new.claim and r.profile == new.profile for r in reg.registrations):
        return reg.path
    old = reg.current(claim.name, profile)
    if old is not None:
        old.replaced = f"replaced on {new.registered} by registration {new.digest}"
    reg.registrations.append(new)
    try:
        reg.save()
    except OSError as e:
        raise UserError(
            f"claim {claim.name}: cannot write its registry {reg.path} ({e.strerror}); copy the claim file to a "
            "writable folder and verify that copy"
        ) from None
    return reg.path


def registered(claim: Claim, profile: Profile) -> str:
    """The claim's registration digest at ``profile``, registering it first when it is new (fresh seeds);
    UserError when it changed on judged seeds (:func:`check`) or its looks cannot decide it
    (``looks.check_decidable``)."""
    reg, new = check(claim, profile)
    check_decidable(claim, profile, registered=not new)
    negatives.check(claim, profile, registered=not new)
    if new and registry_path(claim) is not None:
        path = register(claim, profile, reg)
        print(
            f"[verify] {claim.name} (profile {profile}): registered {reg.digest} on seeds "
            f"{_span(reg.seeds)} at looks {reg.looks or [len(reg.seeds)]} in {path} (commit it)",
            flush=True,
        )
    elif (home := registry_path(claim)) is not None and (record := verdict_of_record(home, claim.name, profile, reg)):
        print(
            f"[verify] {claim.name} (profile {profile}): registration {reg.digest} already has its verdict of record "
            f"({record}, {VERDICTS.as_posix()}); this run is a re-run, which `make verdicts` lists beside it, never in "
            "its place (a new verdict needs a new registration on fresh seeds)",
            flush=True,
        )
    assert reg.digest is not None  # a matching or new registration carries the claim's digest
    return reg.digest


# the repository's verdict table (benchmarks/verdicts.py writes it), relative to the checkout that holds the
# shipped registry (sweeps/claims/registry.yaml)
VERDICTS = Path("benchmarks") / "verify" / "verify.md"


def verdict_of_record(registry: Path, claim: str, profile: Profile, reg: Registration) -> str:
    """ "holds, judged 2026-11-28 01:35 (f26eafdb9af6)": the verdict of record of registration ``reg`` in the
    committed verdict table of the checkout whose shipped registry is ``registry``; "" when there is none (no
    such table: an installed package, or a claim file outside the checkout)."""
    table = registry.resolve().parent.parent.parent / VERDICTS
    if registry.resolve().parent.parent.name != "sweeps" or not table.is_file():
        return ""
    head: list[str] = []
    for line in table.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| claim | verdict | decided |"):
            head = cells
        elif not line.startswith("|"):  # the claim table ended
            head = []
        elif head and cells[0] == claim:
            row = dict(zip(head, cells))
            if row.get("profile") == profile and row.get("registration") == reg.digest:
                return f"{row.get('verdict')}, judged {row.get('judged')}"
    return ""
