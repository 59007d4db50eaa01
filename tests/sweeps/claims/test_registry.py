"""The committed claim registry (sweeps/claims/registry.yaml, issue 38 item 2): every shipped claim runs under
a registration that covers its settings, seeds, looks, rules, thresholds and controls; no seed serves two
registrations of a profile; and the file round-trips through the code that writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqbench.bench.core.errors import UserError
from seqbench.sweeps.claims.load import claim_files, load_claim
from seqbench.sweeps.claims.registry import REGISTRY, check, load_registry

SHIPPED = Path(claim_files()[0]).parent / REGISTRY
CLAIMS = {p.stem: load_claim(p) for p in claim_files()}


def test_every_shipped_claim_and_profile_runs_under_its_current_registration():
    """Edit a rule, a threshold, a control, a setting, a seed or a look of a shipped claim and this fails
    until the claim is registered afresh on fresh seeds (verify appends the registration to the file)."""
    reg = load_registry(SHIPPED)
    stale = []
    for name, claim in CLAIMS.items():
        for profile in ("quick", "paper"):
            current = reg.current(name, profile)
            if current is None or current.digest != claim.digest(profile):
                stale.append(
                    f"{name} ({profile}): registered {current.digest if current else 'nothing'}, "
                    f"the file is {claim.digest(profile)}"
                )
            else:
                assert check(claim, profile, reg) == (current, False)
    assert not stale, "claims changed since their registration: " + "; ".join(stale)
    orphans = {r.claim for r in reg.registrations} - set(CLAIMS)
    assert not orphans, f"registrations of claims that no longer ship: {sorted(orphans)}"


def test_no_seed_of_a_registration_is_reused_by_another_registration_or_a_pilot():
    """At one profile, a registration made under the registry (with a digest) shares no seed with any other
    registration of any claim, earlier ones included, nor with any claim's pilot seeds. (Registrations made
    before digests, kept as history, did reuse seeds 0-2 and pilot seeds; they are never judged again.)"""
    reg = load_registry(SHIPPED)
    clashes = []
    for r in reg.registrations:
        if r.digest is None or r.kind != "sweep":
            continue
        for o in reg.registrations:
            if o is not r and o.profile == r.profile and o.kind == "sweep" and set(o.seeds) & set(r.seeds):
                clashes.append(f"{r.claim} ({r.profile}) shares seeds with {o.claim}'s {o.digest or 'earlier'}")
            if o is not r and set(o.pilots) & set(r.seeds):
                clashes.append(f"{r.claim} ({r.profile}) registered seeds that piloted {o.claim}")
    assert not clashes, "; ".join(clashes)


def test_one_current_registration_per_claim_and_profile_and_a_dated_reason_for_each_replaced_one():
    reg = load_registry(SHIPPED)
    for name in CLAIMS:
        for profile in ("quick", "paper"):
            live = [r for r in reg.of(name, profile) if not r.replaced]
            assert len(live) == 1, f"{name} ({profile}): {len(live)} current registrations"
    assert all(r.registered[:4] == "2026" for r in reg.registrations)
    assert sum(len(reg.of(n, "quick")) > 1 for n in CLAIMS) >= 15  # the re-registrations the history records


def test_the_registry_round_trips_and_a_bad_entry_is_refused_in_one_line(tmp_path):
    reg = load_registry(SHIPPED)
    reg.path = tmp_path / REGISTRY
    reg.save()
    again = load_registry(reg.path)
    assert again.registrations == load_registry(SHIPPED).registrations
    (tmp_path / "bad").mkdir()
    bad = tmp_path / "bad" / REGISTRY
    bad.write_text("registrations:\n- {claim: c, profile: quick, digest: abc, seeds: [1, x], looks: [3]}\n")
    with pytest.raises(UserError) as e:
        load_registry(bad)
    assert "\n" not in str(e.value) and "registrations[0]" in str(e.value)
