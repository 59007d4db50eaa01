"""A claim of one's own (``source.kind: hypothesis``, ``sweeps/claims/schema.py``): accepted without a paper or
published rows, judged through the CLI in a folder of the user's (its registry created beside it), and shown as
an own hypothesis, not a reproduction; a malformed one is refused in one line, and shipped claims stay
reproductions."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from seqbench.bench.cli import main
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.verdicts import HYPOTHESIS
from seqbench.reports.verify_md import RULES_HEAD
from seqbench.sweeps.claims import negatives
from seqbench.sweeps.claims.load import load_claim, parse_claim
from seqbench.sweeps.claims.looks import check_decidable
from seqbench.sweeps.claims.schema import PROFILES, SHIPPED
from tests.helpers import REPO, TINY_CLAIM_BASE, benchmark_script
from tests.sweeps.claims.judge_support import SOURCE

MINE: dict[str, Any] = {
    "question": "Does a tiny LSTM bring the copy task's loss below 100 nats in two steps?",
    "source": {"kind": "hypothesis", "by": "A. Researcher", "why": "a sanity check of my own"},
    "figure": "learning_curves",
    "base": TINY_CLAIM_BASE,  # d_model 8, max_steps 2
    "metric": {"name": "val/loss", "goal": "minimize"},
    "parameters": {"model.name": {"values": ["lstm"]}},
    "seeds": 2,
    "profiles": {"quick": {}, "paper": {"base": {"train": {"max_steps": 4}}}},
    "expect": [{"name": "lstm trains", "where": {"model.name": "lstm"}, "metric": "val/loss", "below": 100.0}],
}


def _write(folder: Path, raw: dict[str, Any], name: str = "my_claim") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _changed(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(MINE)
    raw.update(changes)
    return raw


def test_own_hypothesis_is_verified_through_the_cli_and_says_it_is_no_reproduction(tmp_path, capsys):
    path = _write(tmp_path / "mine", MINE)
    claim = load_claim(path)
    assert claim.hypothesis and claim.source.published == [] and claim.source.cite == HYPOTHESIS
    out = tmp_path / "out"
    assert main(["verify", str(path), "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "claim verdicts: my_claim " in printed  # judged (whatever the verdict)
    # registered beside the claim file, in the user's folder (never sweeps/claims/registry.yaml)
    reg = yaml.safe_load((path.parent / "registry.yaml").read_text())["registrations"]
    assert [(r["claim"], r["profile"], r["digest"]) for r in reg] == [("my_claim", "quick", claim.digest("quick"))]
    # verify.md: the source column says so, the paper column is empty
    md = (out / "verify" / "verify.md").read_text()
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in md.splitlines()]
    mine = [dict(zip(RULES_HEAD, r)) for r in rows if r[0] == "my_claim" and len(r) == len(RULES_HEAD)]
    assert mine and all(r["source"] == HYPOTHESIS and r["paper"] == "" for r in mine)
    assert mine[0]["rule"] == "lstm trains" and "val/loss" in mine[0]["measured (mean [95% CI] n)"]
    # the page: whose hypothesis, not a reproduction of a published result, and no published numbers
    page = (out / "verify" / "index.html").read_text()
    assert "A. Researcher&#x27;s own hypothesis, not a reproduction of a published result" in page
    assert HYPOTHESIS in page and "a sanity check of my own" in page
    assert all(not cell for cell in re.findall(r"<th>published</th><td>(.*?)</td>", page))
    # make verdicts (benchmarks/verdicts.py) marks it in the docs' claim table, with or without a registry
    v = benchmark_script("verdicts")
    assert v.HYPOTHESIS == HYPOTHESIS
    repo = tmp_path / "repo"
    (repo / "sweeps" / "claims").mkdir(parents=True)
    (repo / "sweeps" / "claims" / "registry.yaml").write_text("registrations: []\n")
    for block in (v.block(md), v.block(md, repo)):
        assert f"| my_claim ({HYPOTHESIS}) | " in block


@pytest.mark.parametrize(
    "change, message",
    [
        (  # published rows are a reproduction's
            {"source": {**MINE["source"], "published": [{"what": "lstm", "value": 1.0, "unit": "nats"}]}},
            r"source: kind: hypothesis has no paper behind it, so no published: \(drop it, or drop kind: hypothesis",
        ),
        ({"source": {**MINE["source"], "cite": "Me 2026", "paper": "mine"}}, "so no cite:, paper:"),
        ({"source": {"kind": "hypothesis"}}, "source.by: Field required"),
        (
            {"source": {**MINE["source"], "wy": "x"}},
            "source.wy: unknown field of a hypothesis; .*did you mean source.why",
        ),
        ({"source": {**MINE["source"], "kind": "hypotesis"}}, "source.kind: reproduction .* did you mean hypothesis"),
        (  # a rule's paper: is the published number it stands for
            {"expect": [{**MINE["expect"][0], "paper": "0.5 nats"}]},
            "expect: rule 'lstm trains': paper: is the published number a rule stands for, and a hypothesis",
        ),
        ({"source": "my idea"}, "source: a mapping"),
    ],
)
def test_a_malformed_hypothesis_is_refused_in_one_line(tmp_path, change, message):
    with pytest.raises(UserError, match=message) as e:
        load_claim(_write(tmp_path, _changed(**change)))
    assert len(str(e.value).splitlines()) == 1


def test_a_reproduction_still_needs_published_rows_and_shipped_claims_are_reproductions(tmp_path):
    no_rows = {**SOURCE, "published": []}
    for source in (no_rows, {**no_rows, "kind": "reproduction"}):  # kind: reproduction is the default
        with pytest.raises(UserError, match="source.published: List should have at least 1 item"):
            load_claim(_write(tmp_path, _changed(source=source)))
    assert not load_claim(_write(tmp_path, _changed(source={**SOURCE, "kind": "reproduction"}))).hypothesis
    # a hypothesis in the shipped claims' folder is refused (no file written there: the path decides)
    with pytest.raises(UserError, match="a shipped claim .* reproduces a published result"):
        parse_claim(MINE, "my_claim", str(SHIPPED / "my_claim.yaml"))


def test_the_docs_examples_load_and_could_be_decided():
    """docs/claims.md's example claim files (a reproduction, an own hypothesis) pass every check verify makes
    before anything trains."""
    page = (REPO / "docs" / "claims.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.S)
    claims = [
        parse_claim(yaml.safe_load(b), f"example{i}", f"/elsewhere/example{i}.yaml") for i, b in enumerate(blocks)
    ]
    assert [c.hypothesis for c in claims] == [False, True]
    for c in claims:
        for profile in PROFILES:
            check_decidable(c, profile, registered=False)
            negatives.check(c, profile, registered=False)
