"""The verdict table is generated, never typed: verify records each claim's latest verdict
(``bench/core/verdicts.py``) and writes verify.md over every record under its folder
(``reports/verify_md.py``); ``make verdicts`` (``benchmarks/verdicts.py``) copies verify.md's claim table
into the docs' claims page (``docs/claims.md``), whose block must be what the script makes of the committed copy."""

from __future__ import annotations

import fcntl
import json
import threading
from pathlib import Path

import pytest
import yaml

from seqbench.bench.cli import main
from seqbench.bench.core.stats import Interval
from seqbench.bench.core.verdicts import VERDICT_VERSION, read_verdict, recorded_verdicts, verdict_path, write_verdict
from seqbench.reports.verify_md import write_markdown
from seqbench.sweeps.claims.load import load_claim
from seqbench.sweeps.claims.results import ClaimResult, RuleResult, verdict_table
from tests.helpers import REPO, TINY_CLAIM_BASE, benchmark_script

BUILT = {"version": "9.9", "git_sha": "abc123", "when": "2026-11-26 07:00"}


def _script():
    return benchmark_script("verdicts")


def _claim_file(folder: Path, name: str, below: float = 100.0) -> Path:
    """A tiny sweep claim (two models, two seeds, two steps): its rule is on the rnn's val/loss."""
    raw = {
        "question": f"Does {name} hold?",
        "source": {
            "cite": f"Test 2024 ({name})",
            "paper": "A. Test 2024",
            "where": "Table 1",
            "metric": "loss",
            "published": [{"what": "rnn", "value": 1.0, "unit": "nats"}],
        },
        "figure": "factors",
        "base": TINY_CLAIM_BASE,
        "metric": {"name": "val/loss", "goal": "minimize"},
        "parameters": {"model.name": {"values": ["rnn", "lstm"]}},
        "seeds": 2,
        "profiles": {"quick": {}, "paper": {}},
        "expect": [{"name": "rnn loss bounded", "where": {"model.name": "rnn"}, "metric": "val/loss", "below": below}],
        "note": f"the note of {name}",
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _judged(path: Path, verdict: str, wall: float = 12.0, n: int = 3) -> ClaimResult:
    """A claim's result as the judge returns it, without training (the numbers are the test's)."""
    claim = load_claim(path)
    rule = RuleResult(claim.expect[0], verdict, interval=Interval(0.5, 0.4, 0.6, n, 0.05), config="model.name=rnn")
    looks = f"decided at look 1 of 1, n={n}, alpha 0.05"
    return ClaimResult(claim, "quick", verdict, [rule], wall_s=wall, looks=looks)


def _write(results: list[ClaimResult], folder: Path) -> str:
    write_markdown(results, verdict_table(results), BUILT, folder)
    return (folder / "verify.md").read_text()


# -- the per-claim record ---------------------------------------------------------------------------
def test_a_record_round_trips_and_refuses_what_is_not_one(tmp_path):
    rec = {"claim": "a", "profile": "quick", "verdict": "holds", "rows": [{"rule": "r", "verdict": "holds"}]}
    path = write_verdict(tmp_path, rec)
    assert path == verdict_path(tmp_path, "a", "quick") == tmp_path / "a" / "quick-verdict.json"
    assert read_verdict(path) == {**rec, "format": "seqbench-verdict", "version": VERDICT_VERSION}
    with pytest.raises(ValueError, match="undeclared keys \\['colour'\\]"):
        write_verdict(tmp_path, {**rec, "colour": "red"})
    with pytest.raises(ValueError, match="VerdictRow: undeclared keys \\['p'\\]"):
        write_verdict(tmp_path, {**rec, "rows": [{"p": 0.1}]})
    newer = tmp_path / "b" / "quick-verdict.json"
    newer.parent.mkdir()
    newer.write_text(json.dumps({**rec, "claim": "b", "format": "seqbench-verdict", "version": VERDICT_VERSION + 1}))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "quick-verdict.json").write_text("{not json")
    records, problems = recorded_verdicts(tmp_path)
    assert [r["claim"] for r in records] == ["a"]  # one bad file never hides the others
    assert len(problems) == 2 and "verdict version 2" in problems[0] and "unreadable" in problems[1]


# -- verify.md over every claim judged in the folder ---------------------------------------------------
def test_verify_md_gathers_each_claims_latest_verdict_across_invocations(tmp_path):
    a, b = _claim_file(tmp_path, "claim_a"), _claim_file(tmp_path, "claim_b")
    out = tmp_path / "verify"
    _write([_judged(a, "inconclusive", wall=5, n=3)], out)
    md = _write([_judged(b, "fails", wall=7)], out)  # a second invocation, of the other claim only
    assert "| claim_a | inconclusive | decided at look 1 of 1, n=3, alpha 0.05 | quick | 5 |" in md
    assert "| claim_b | fails | decided at look 1 of 1, n=3, alpha 0.05 | quick | 7 |" in md
    assert md.index("| claim_a | inconclusive") < md.index("| claim_b | fails")  # by claim, whatever the order run
    assert "| claim_a | quick | Test 2024 (claim_a) | rnn loss bounded |" in md  # its rules' rows too
    assert "**claim_a.** the note of claim_a" in md and "**claim_b.** the note of claim_b" in md
    md = _write([_judged(a, "holds", wall=9, n=7)], out)  # judged again: the latest verdict replaces the first
    assert "| claim_a | holds | decided at look 1 of 1, n=7, alpha 0.05 | quick | 9 |" in md
    assert "claim_a | inconclusive" not in md and "| claim_b | fails |" in md
    digest = load_claim(a).digest("quick")  # each row names the registration it judged, for make verdicts
    assert f"| 2026-11-26 07:00 (abc123) | {digest} |" in md.split("| claim_a | holds |")[1].splitlines()[0]
    assert read_verdict(verdict_path(out, "claim_a", "quick"))["registration"] == digest


def test_a_verdict_of_a_changed_or_retired_claim_is_left_out_with_why(tmp_path):
    a, b, c = (_claim_file(tmp_path, n) for n in ("claim_a", "claim_b", "claim_c"))
    out = tmp_path / "verify"
    _write([_judged(a, "holds"), _judged(b, "holds"), _judged(c, "holds")], out)
    _claim_file(tmp_path, "claim_a", below=50.0)  # its rule changed: the verdict no longer speaks for it
    a_note = yaml.safe_load(b.read_text()) | {"note": "a new note"}  # a new note changes no verdict
    b.write_text(yaml.safe_dump(a_note))
    c.unlink()
    md = _write([], out)
    assert "| claim_b | holds |" in md and "| claim_a | holds" not in md and "| claim_c | holds" not in md
    assert "- claim_a (quick, holds): the claim changed since it was judged on 2026-11-26 07:00" in md
    assert f"- claim_c (quick, holds): its claim file {c} is gone" in md


def test_a_shipped_claim_judged_in_another_checkout_is_found_by_name(tmp_path):
    """A folder of verdicts copied from another clone: its claim paths are gone, the shipped claims are not."""
    from seqbench.reports.verify_md import record_of

    shipped = load_claim(REPO / "sweeps" / "claims" / "mqar_recall_kv.yaml")
    res = ClaimResult(shipped, "quick", "holds", [], wall_s=1.0, looks="decided at look 1 of 2, n=7, alpha 0.0191")
    rec = record_of(res, verdict_table([res]), BUILT)
    write_verdict(tmp_path / "verify", {**rec, "claim_file": "/elsewhere/sweeps/claims/mqar_recall_kv.yaml"})
    write_verdict(tmp_path / "verify", {**rec, "claim": "gone_claim", "claim_file": "/elsewhere/gone_claim.yaml"})
    md = _write([], tmp_path / "verify")
    assert "| mqar_recall_kv | holds | decided at look 1 of 2, n=7, alpha 0.0191 | quick |" in md
    assert "- gone_claim (quick, holds): its claim file /elsewhere/gone_claim.yaml is gone" in md


def test_an_invocation_waits_while_another_records_into_the_same_folder(tmp_path):
    """Invocations side by side into one out-dir (a claim each): recording and rebuilding verify.md hold a
    lock on the folder, so the last to finish sees every record."""
    out = tmp_path / "verify"
    out.mkdir()
    a = _claim_file(tmp_path, "claim_a")
    with open(out / ".verify.lock", "a") as held:  # another invocation, in the middle of its rebuild
        fcntl.flock(held, fcntl.LOCK_EX)
        t = threading.Thread(target=_write, args=([_judged(a, "holds")], out))
        t.start()
        t.join(0.5)
        assert t.is_alive() and not (out / "verify.md").exists()
        fcntl.flock(held, fcntl.LOCK_UN)
    t.join(30)
    assert not t.is_alive() and "| claim_a | holds |" in (out / "verify.md").read_text()


def test_verify_md_covers_two_invocations_of_the_cli(tmp_path, capsys):
    """The command's own writer records: `seqbench verify A`, then `seqbench verify B`, leave both."""
    out = tmp_path / "out"
    for name in ("claim_a", "claim_b"):
        assert main(["verify", str(_claim_file(tmp_path, name)), "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    md = (out / "verify" / "verify.md").read_text()
    for name in ("claim_a", "claim_b"):
        rec = read_verdict(verdict_path(out / "verify", name, "quick"))
        assert f"{name} {rec['verdict']} ({rec['decided']})" in printed  # the record says what the CLI said
        assert f"| {name} | {rec['verdict']} | {rec['decided']} | quick |" in md
        assert rec["rows"][0]["rule"] == "rnn loss bounded" and "n=2" in rec["rows"][0]["measured"]


# -- the copy into docs/claims.md (benchmarks/verdicts.py) -----------------------------------------------
def test_the_claims_page_block_is_what_the_script_makes_of_the_committed_copy():
    v = _script()
    copy = REPO / v.COPY
    want = v.block(copy.read_text() if copy.is_file() else None, REPO)
    assert v.current_block((REPO / v.PAGE).read_text()) == want, f"{v.PAGE}'s verdicts: run `make verdicts`"
    assert v.main(["--check"]) == 0


def _repo(tmp_path: Path, block: str = "old text") -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "docs").mkdir()
    (repo / "docs" / "claims.md").write_text(
        f"# x\n\nbefore\n<!-- verdicts:begin -->\n{block}\n<!-- verdicts:end -->\nafter\n"
    )
    return repo


def test_the_script_copies_a_verify_md_and_rewrites_only_the_block(tmp_path):
    v = _script()
    a, b = _claim_file(tmp_path, "claim_a"), _claim_file(tmp_path, "claim_b")
    out = tmp_path / "verify"
    _write([_judged(a, "holds", wall=5)], out)
    _write([_judged(b, "inconclusive", wall=7)], out)
    repo = _repo(tmp_path)
    assert v.main(["--check", "--repo", str(repo)]) == 1  # the block is not the script's
    assert v.main([str(out / "verify.md"), "--repo", str(repo)]) == 0
    assert (repo / "benchmarks" / "verify" / "verify.md").read_text() == (out / "verify.md").read_text()
    page = (repo / "docs" / "claims.md").read_text()
    assert page.startswith("# x\n\nbefore\n<!-- verdicts:begin -->\nGenerated by `make verdicts` from")
    assert page.endswith("<!-- verdicts:end -->\nafter\n") and "old text" not in page
    assert "built by seqbench 9.9 (abc123) on 2026-11-26 07:00" in page
    assert "(2 claims: holds 1, inconclusive 1)" in page
    assert "| claim_a | holds | decided at look 1 of 1, n=3, alpha 0.05 | quick | 5 |" in page
    assert "| claim_b | inconclusive |" in page
    assert v.main(["--check", "--repo", str(repo)]) == 0
    (repo / "docs" / "claims.md").write_text(page.replace("| claim_a | holds |", "| claim_a | fails |"))  # a hand edit
    assert v.main(["--check", "--repo", str(repo)]) == 1


def test_the_script_reads_a_verify_md_written_before_the_records(tmp_path):
    """A verify.md of the earlier writer (one invocation's claims) has the same claim table."""
    v = _script()
    md = (
        "# seqbench verify\n\nseqbench 0.4.0 (f00d), 2026-11-25 21:10\n\n| claim | source | rule |\n|---|---|---|\n"
        "| x | y | z |\n\n| claim | verdict | decided | profile | wall s |\n|---|---|---|---|---:|\n"
        "| mqar_mixers | holds | decided at look 1 of 2, n=7, alpha 0.0191 | quick | 900 |\n"
    )
    out = v.block(md)
    assert "built by seqbench 0.4.0 (f00d) on 2026-11-25 21:10" in out and "(1 claim: holds 1)" in out
    assert out.endswith("| mqar_mixers | holds | decided at look 1 of 2, n=7, alpha 0.0191 | quick | 900 |")


def _md(when: str, rows: dict[str, str], sha: str = "f00d", regs: dict[str, str] | None = None) -> str:
    """A verify.md of one invocation's claims (claim -> verdict), each judged at ``when`` by commit ``sha``
    under registration ``regs[claim]`` (default: "r-" and the claim)."""
    regs = regs or {}
    rules = "".join(f"| {c} | src | {c} rule | ~1 | acc: 1 [1, 1] n=7 | > 0.9 | {v} |\n" for c, v in rows.items())
    claims = "".join(
        f"| {c} | {v} | decided at look 1 of 2, n=7, alpha 0.0191 | quick | 60 | {when} ({sha}) | "
        f"{regs.get(c, 'r-' + c)} |\n"
        for c, v in rows.items()
    )
    notes = "".join(f"\n**{c}.** note of {c} at {when}\n" for c in rows)
    return (
        f"# seqbench verify\n\nseqbench 0.4.0 ({sha}), {when}\n\n"
        "| claim | source | rule | paper | measured (mean [95% CI] n) | needs | verdict |\n"
        "|---|---|---|---|---|---|---|\n"
        f"{rules}\n| claim | verdict | decided | profile | wall s | judged | registration |\n"
        f"|---|---|---|---|---:|---|---|\n{claims}{notes}"
    )


def test_several_verify_md_files_merge_each_claim_from_the_latest_registration_that_judged_it(tmp_path):
    v = _script()
    files = {  # selective_copy_ssm: a new registration (r2) judged after the first (r1)
        "b.md": _md(
            "2026-11-26 08:05",
            {"mqar_mixers": "holds", "selective_copy_ssm": "holds"},
            "bbbb",
            {"selective_copy_ssm": "r2"},
        ),
        "a.md": _md(
            "2026-11-26 07:50",
            {"selective_copy_ssm": "inconclusive", "mixer_complexity": "fails"},
            "aaaa",
            {"selective_copy_ssm": "r1"},
        ),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    repo = _repo(tmp_path)
    assert v.main([str(tmp_path / "b.md"), str(tmp_path / "a.md"), "--repo", str(repo)]) == 0
    merged = (repo / "benchmarks" / "verify" / "verify.md").read_text()
    assert "- seqbench 0.4.0 (aaaa), 2026-11-26 07:50: mixer_complexity" in merged
    assert "- seqbench 0.4.0 (bbbb), 2026-11-26 08:05: mqar_mixers, selective_copy_ssm" in merged
    claims = v.claim_table(merged)
    assert [row.split(" | ")[:2] for row in claims[2:]] == [
        ["| mixer_complexity", "fails"],
        ["| mqar_mixers", "holds"],
        ["| selective_copy_ssm", "holds"],  # the later registration's verdict, whatever the argument order
    ]
    assert "| selective_copy_ssm | src | selective_copy_ssm rule | ~1 | acc: 1 [1, 1] n=7 | > 0.9 | holds |" in merged
    assert "inconclusive" not in merged and v.RERUNS_TITLE not in merged  # another registration's row is not a re-run
    assert "**selective_copy_ssm.** note of selective_copy_ssm at 2026-11-26 08:05" in merged
    page = (repo / "docs" / "claims.md").read_text()
    assert "a merge of 2 verify.md files built by seqbench 0.4.0 (bbbb) on 2026-11-26 08:05; seqbench 0.4.0" in page
    assert "(3 claims: fails 1, holds 2)" in page and v.main(["--check", "--repo", str(repo)]) == 0
    (tmp_path / "c.md").write_text(files["a.md"].replace("| wall s |", "| wall s | extra |"))
    assert v.main([str(tmp_path / "b.md"), str(tmp_path / "c.md"), "--repo", str(repo)]) == 2  # columns differ


def test_a_registration_judged_again_by_a_later_build_is_a_rerun_beside_its_verdict_of_record(tmp_path, capsys):
    """Issue 38: re-running a judged registration's seeds on changed code until the verdict flips would bend it.
    The first verdict of a registration stays; a later build's is listed as a re-run, on every merge after."""
    v = _script()
    repo = _repo(tmp_path)
    first = tmp_path / "first.md"
    first.write_text(_md("2026-11-28 01:35", {"neg_eigval_parity": "inconclusive", "tcn_adding": "holds"}, "f26e"))
    assert v.main([str(first), "--repo", str(repo)]) == 0  # no copy yet: copied as it is
    copy = repo / "benchmarks" / "verify" / "verify.md"
    assert copy.read_text() == first.read_text()
    again = tmp_path / "again.md"  # the same registration, re-run by a later build: it now holds
    again.write_text(_md("2026-11-28 14:00", {"neg_eigval_parity": "holds"}, "fe41"))
    assert v.main([str(again), "--repo", str(repo)]) == 0  # merged with the committed copy, not in its place
    merged = copy.read_text()
    table = v.claim_table(merged)
    assert "| neg_eigval_parity | inconclusive |" in table[2] and "(f26e) | r-neg_eigval_parity |" in table[2]
    assert "| tcn_adding | holds |" in table[3]  # a claim the re-run did not judge keeps its row
    reruns = merged.split(v.RERUNS_TITLE)[1]
    assert "| re-run of | verdict | decided | profile | wall s | judged | registration |" in reruns
    assert "| neg_eigval_parity | holds | decided at look 1 of 2, n=7, alpha 0.0191 | quick | 60 |" in reruns
    assert "| 2026-11-28 14:00 (fe41) | r-neg_eigval_parity |" in reruns
    rule = "| neg_eigval_parity | src | neg_eigval_parity rule | ~1 | acc: 1 [1, 1] n=7 | > 0.9 |"
    assert f"{rule} inconclusive |" in merged and f"{rule} holds |" not in merged  # the rules of record too
    assert "**neg_eigval_parity.** note of neg_eigval_parity at 2026-11-28 01:35" in merged
    page = (repo / "docs" / "claims.md").read_text()
    assert "| neg_eigval_parity | inconclusive |" in page and page.count("holds (fe41)") == 0  # no registry here
    assert v.main([str(again), "--repo", str(repo)]) == 0 and copy.read_text().count("2026-11-28 14:00 (fe41)") == 1
    later = tmp_path / "later.md"  # a third build: a second re-run; the verdict of record still stands
    later.write_text(_md("2026-11-29 09:00", {"neg_eigval_parity": "fails"}, "0bad"))
    assert v.main([str(later), "--repo", str(repo)]) == 0
    merged = copy.read_text()
    assert "| neg_eigval_parity | inconclusive |" in v.claim_table(merged)[2]
    assert "(fe41)" in merged.split(v.RERUNS_TITLE)[1] and "(0bad)" in merged.split(v.RERUNS_TITLE)[1]
    resumed = tmp_path / "resumed.md"  # the same build as the verdict of record (a resumed study): replaces it
    resumed.write_text(_md("2026-11-28 02:10", {"tcn_adding": "fails"}, "f26e"))
    assert v.main([str(resumed), "--repo", str(repo)]) == 0
    assert "| tcn_adding | fails |" in v.claim_table(copy.read_text())[3]
    fresh = tmp_path / "fresh.md"  # a new registration on fresh seeds: its verdict is the new one of record
    fresh.write_text(_md("2026-11-30 10:00", {"neg_eigval_parity": "holds"}, "cafe", {"neg_eigval_parity": "r2"}))
    assert v.main([str(fresh), "--repo", str(repo)]) == 0
    merged = copy.read_text()
    assert "| neg_eigval_parity | holds |" in v.claim_table(merged)[2] and "| r2 |" in v.claim_table(merged)[2]
    assert v.RERUNS_TITLE not in merged  # the old registration's re-runs went with it
    old = tmp_path / "old.md"  # written before verify named its registration: refused, the copy unchanged
    old.write_text(
        _md("2026-12-01 10:00", {"tcn_adding": "holds"}).replace(" registration |", "").replace("---|\n|", "|\n|")
    )
    before = copy.read_text()
    assert v.main([str(old), "--repo", str(repo)]) == 2 and copy.read_text() == before
    assert "the files' claims tables have different columns" in capsys.readouterr().err


def test_the_page_shows_a_registrations_reruns_beside_its_verdict_and_a_row_of_a_replaced_one():
    v = _script()
    regs = yaml.safe_load((REPO / v.REGISTRY).read_text())["registrations"]
    current = next(r["digest"] for r in reversed(regs) if r["claim"] == "neg_eigval_parity" and not r.get("replaced"))
    md = _md("2026-11-28 01:35", {"neg_eigval_parity": "inconclusive"}, "f26e", {"neg_eigval_parity": current})
    rerun = _md("2026-11-28 14:00", {"neg_eigval_parity": "holds"}, "fe41", {"neg_eigval_parity": current})
    out = v.block(v.merge([md, rerun]), REPO)
    row = next(x for x in out.splitlines() if x.startswith("| neg_eigval_parity |"))
    assert "| inconclusive |" in row and row.endswith("| holds (fe41) |") and "replaced" not in row
    assert "| registrations | after a pilot | re-runs |" in out and "`re-runs`: the same registration" in out
    old = v.block(_md("2026-11-28 01:35", {"neg_eigval_parity": "holds"}, "f26e", {"neg_eigval_parity": "0ld"}), REPO)
    row = next(x for x in old.splitlines() if x.startswith("| neg_eigval_parity |"))
    assert f"(this row: 0ld, replaced; the current {current} not judged yet) |" in row


def test_the_script_refuses_what_it_cannot_copy(tmp_path, capsys):
    v = _script()
    repo = _repo(tmp_path)
    assert v.main([str(tmp_path / "missing.md"), "--repo", str(repo)]) == 2
    (tmp_path / "notes.md").write_text("# notes\n\nno table\n")
    assert v.main([str(tmp_path / "notes.md"), "--repo", str(repo)]) == 2
    assert "no claim table" in capsys.readouterr().err
    assert not (repo / "benchmarks").exists() and "old text" in (repo / "docs" / "claims.md").read_text()
    with pytest.raises(ValueError, match="needs one <!-- verdicts:begin --> line"):
        v.replace_block("no markers here", "x")
    assert v.block(None) == v.NONE_YET


def test_a_merged_file_merged_again_keeps_only_the_builds_that_judged_its_claims(tmp_path):
    """Merging an earlier merge (the committed copy) with a fresh verify.md: the earlier file's build list names
    only the builds whose claims it still gives, read from the rows' "judged" cells."""
    v = _script()

    def md(builds: list[str], rows: dict[str, str], reg: str = "r1") -> str:  # claim -> "when (hash)"
        rules = "".join(f"| {c} | src | {c} rule | ~1 | acc: 1 [1, 1] n=7 | > 0.9 | holds |\n" for c in rows)
        claims = "".join(
            f"| {c} | holds | decided at look 1 of 1, n=10, alpha 0.05 | quick | 60 | {j} | {reg}-{c} |\n"
            for c, j in rows.items()
        )
        return (
            "# seqbench verify\n\n" + "".join(f"- {b}: x\n" for b in builds) + "\n"
            "| claim | source | rule | paper | measured (mean [95% CI] n) | needs | verdict |\n"
            "|---|---|---|---|---|---|---|\n"
            f"{rules}\n| claim | verdict | decided | profile | wall s | judged | registration |\n"
            f"|---|---|---|---|---:|---|---|\n{claims}"
        )

    old = md(
        ["seqbench 0.1.0 (aaaa), 2026-11-26 09:05", "seqbench 0.1.0 (bbbb), 2026-11-26 10:20"],
        {"mqar_mixers": "2026-11-26 09:05 (aaaa)", "tcn_adding": "2026-11-26 10:20 (bbbb)"},
    )
    # a new registration of tcn_adding (the same one judged again would be a re-run, and bbbb would stay)
    fresh = md(["seqbench 0.1.0 (cccc), 2026-11-26 13:46"], {"tcn_adding": "2026-11-26 13:46 (cccc)"}, "r2")
    merged = v.merge([fresh, old])
    assert "- seqbench 0.1.0 (aaaa), 2026-11-26 09:05: mqar_mixers\n" in merged  # (bbbb) judged nothing kept
    assert "- seqbench 0.1.0 (cccc), 2026-11-26 13:46: tcn_adding\n" in merged and "(bbbb)" not in merged


def test_verify_says_when_it_re_runs_a_registration_that_has_its_verdict_of_record(tmp_path, capsys):
    """A re-run is allowed (does the verdict reproduce?), and not silent: verify names the verdict of record in
    the checkout's committed table that the re-run will not replace."""
    from seqbench.sweeps.claims.registry import registered

    claims = tmp_path / "sweeps" / "claims"
    claims.mkdir(parents=True)
    claim = load_claim(_claim_file(claims, "claim_a"))
    digest = registered(claim, "quick")  # new: registered, nothing judged yet
    assert "registered" in capsys.readouterr().out
    registered(claim, "quick")
    assert "verdict of record" not in capsys.readouterr().out  # no committed table in this checkout
    table = tmp_path / "benchmarks" / "verify" / "verify.md"
    table.parent.mkdir(parents=True)
    table.write_text(_md("2026-11-28 01:35", {"claim_a": "inconclusive"}, "f26e", {"claim_a": "0ther"}))
    registered(claim, "quick")
    assert "verdict of record" not in capsys.readouterr().out  # the table's row is another registration's
    table.write_text(_md("2026-11-28 01:35", {"claim_a": "inconclusive"}, "f26e", {"claim_a": digest}))
    registered(claim, "quick")
    out = capsys.readouterr().out
    assert f"registration {digest} already has its verdict of record (inconclusive, judged 2026-11-28 01:35" in out
    assert "this run is a re-run, which `make verdicts` lists beside it, never in its place" in out
