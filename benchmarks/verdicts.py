"""``make verdicts``: the verdict table of docs/claims.md, copied from what ``seqbench verify`` wrote, never typed.

    python benchmarks/verdicts.py [VERIFY_MD ...]  # default outputs/verify/verify.md
    python benchmarks/verdicts.py --check          # change nothing; exit 1 when the page's block is stale

VERIFY_MD (a ``verify.md`` that ``seqbench verify`` wrote: ``reports/verify_md.py``) is copied into
``benchmarks/verify/`` (committed, as ``reports/baseline/`` is), and the block of ``docs/claims.md`` between
``<!-- verdicts:begin -->`` and ``<!-- verdicts:end -->`` is rewritten from that copy: where it came from
and its claim table (claim | verdict | decided | profile | wall s ...), rows as verify wrote them. Without a
copy the block says that no generated table has been recorded. ``tests/sweeps/claims/test_verdicts.py`` fails when the
page's block is not what this script makes of the committed copy.

The VERIFY_MD files and the committed copy are merged into the copy, each claim's lines taken verbatim from the
file that judged its latest registration first (a ``seqbench verify`` of some claims lists those only). A
verify.md written before its claim table named the registration judged is refused: re-run verify.

With the repository's claim registry (``sweeps/claims/registry.yaml``, ``sweeps/claims/registry.py``) the
table gets a row for every shipped claim, "no record under the current registration" where verify.md has
none, and two columns from the registry: how many registrations the claim has had at that profile (each a
fresh set of seeds after the settings, rules or looks changed) and whether the current one's setting, an arm
or a threshold was chosen after a pilot or an earlier registration's result, in the claim's direction.

**A registration is judged once.** verify.md's claim table names the registration each row judged
(``Claim.digest``). A row of the same claim and registration from a later build (the same seeds trained
again on changed code, or by another checkout) does not replace the verdict of record, the earliest judged:
it is kept as a **re-run** in the copy's re-run table, and the page shows it beside the verdict ("re-runs").
Re-running judged seeds until a verdict flips would otherwise bend it; the way to a new verdict of record is a
new registration on fresh seeds (``seqbench verify`` registers one when the seeds are fresh). A row of another
registration replaces the older one (its re-runs go with it). The same build's row (a resumed study) replaces
its own. The committed copy is always one of the files merged, so ``make verdicts`` after a whole ``make verify``
keeps every verdict of record and lists the re-runs.

A claim that is its author's own hypothesis (``source.kind: hypothesis``: verify.md's source column says
``own hypothesis, not a reproduction``) is marked so in its claim cell: it reproduces no published result.

Standard library and PyYAML only (no torch, no seqbench import): it moves text, it judges nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- verdicts:begin -->", "<!-- verdicts:end -->"
CLAIMS_HEADER = "| claim | verdict | decided |"  # reports/verify_md.py CLAIMS_HEAD starts so (and verify.md before it)
COPY = Path("benchmarks") / "verify" / "verify.md"  # relative to the repository
PAGE = Path("docs") / "claims.md"  # the page whose block holds the table, relative to the repository
NONE_YET = "No generated verdict table has been recorded yet (`make verify`, then `make verdicts`)."
REGISTRY = Path("sweeps") / "claims" / "registry.yaml"  # relative to the repository
NO_RECORD = "no record under the current registration"
EXTRA_HEAD = ("registrations", "after a pilot", "re-runs")
REGISTRATION = "registration"  # the claim table's column naming the registration judged (reports/verify_md.py)
RERUNS_TITLE = "Re-runs of judged registrations (not verdicts of record: each registration's first verdict stands)"
RERUNS_HEADER = "| re-run of |"  # the re-run table's first cell; its other columns are the claim table's
# the source cell of an own hypothesis's rows (seqbench.bench.core.verdicts.HYPOTHESIS; no seqbench import here)
HYPOTHESIS = "own hypothesis, not a reproduction"
_BUILT = re.compile(r"seqbench (\S+) \(([^)]*)\),? (\d{4}-\d\d-\d\d \d\d:\d\d)")


def claim_table(md: str) -> list[str]:
    """The lines of verify.md's claim table (header, rule, rows); ValueError when it has none."""
    lines = md.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith(CLAIMS_HEADER)), None)
    if start is None:
        raise ValueError(f"no claim table (a line starting {CLAIMS_HEADER!r}): not a verify.md of seqbench verify")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    if end - start < 3:
        raise ValueError("the claim table has no rows")
    return lines[start:end]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _tables(md: str) -> list[list[str]]:
    """Every table of ``md`` (runs of lines starting with ``|``), in order."""
    out: list[list[str]] = []
    run: list[str] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            run.append(line)
        elif run:
            out.append(run)
            run = []
    return out


def hypotheses(md: str) -> set[str]:
    """The claims of verify.md's rules table whose source is :data:`HYPOTHESIS` (``source.kind: hypothesis``):
    their rows in the claim table say so, so no one reads them as reproductions of a published result."""
    rules = next((t for t in _tables(md) if t[0].startswith("| claim |") and not t[0].startswith(CLAIMS_HEADER)), [])
    head = _cells(rules[0]) if rules else []
    if "source" not in head:
        return set()
    col = head.index("source")
    return {c[0] for c in map(_cells, rules[2:]) if len(c) > col and c[col] == HYPOTHESIS}


def _marked(cells: list[str], mine: set[str]) -> list[str]:
    """``cells`` of a claim-table row, the claim's name followed by ``(own hypothesis, ...)`` when in ``mine``."""
    return [f"{cells[0]} ({HYPOTHESIS})", *cells[1:]] if cells and cells[0] in mine else cells


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _builds(md: str) -> list[str]:
    """The builds named above the first table: "seqbench 0.4.0 (f00d), 2026-11-25 21:10", one per file merged."""
    head = md.split("\n|", 1)[0]
    return list(dict.fromkeys(m[0] for m in _BUILT.finditer(head)))


@dataclass
class _Verify:
    """One verify.md, cut into what a merge takes from it."""

    built: list[str]  # its build lines (_builds)
    rules: list[str]  # its rules table: header, rule, rows (the claim in the first cell)
    claims: list[str]  # its claim table
    notes: dict[str, str]  # claim -> its "**claim.** note" line
    reruns: list[str]  # the rows of its re-run table (a merged copy's), the claim table's cells after the first

    @classmethod
    def of(cls, md: str) -> _Verify:
        tables = [t for t in _tables(md) if t[0].startswith("| claim |")]
        rules = next((t for t in tables if not t[0].startswith(CLAIMS_HEADER)), None)
        if rules is None:
            raise ValueError("no rules table (a table starting '| claim |' before the claim table)")
        notes = {m[1]: m[0] for m in re.finditer(r"^\*\*(\S+?)\.\*\* .*$", md, re.M)}
        reruns = next((t[2:] for t in _tables(md) if t[0].startswith(RERUNS_HEADER)), [])
        return cls(_builds(md), rules, claim_table(md), notes, reruns)

    @property
    def names(self) -> list[str]:
        """The claims its claim table judged."""
        return [_cells(r)[0] for r in self.claims[2:]]

    def row(self, claim: str) -> dict[str, str]:
        """The claim's row of the claim table, by column."""
        head = _cells(self.claims[0])
        return next(dict(zip(head, c)) for r in self.claims[2:] if (c := _cells(r))[0] == claim)

    def judged(self, claim: str) -> str:
        """When the claim's row was judged ("2026-11-28 01:35"; the file's build time where the row has no
        "judged" cell)."""
        m = re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d", self.row(claim).get("judged", ""))
        return m[0] if m else self.when

    @property
    def when(self) -> str:
        m = _BUILT.search(self.built[0]) if self.built else None
        return m[3] if m else ""


def merge(mds: list[str]) -> str:
    """One verify.md from several: each claim's rows of both tables and its note, verbatim, from the earliest
    file that judged its latest registration (a later build's row of that registration is a re-run, kept in
    the re-run table; the same build's later row replaces it); ValueError when the tables' columns differ or
    a file's claim table names no registration."""
    files = [_Verify.of(md) for md in mds]
    for key in ("claims", "rules"):
        if len({getattr(f, key)[0] for f in files}) > 1:
            raise ValueError(f"the files' {key} tables have different columns: written by different seqbench versions")
    if REGISTRATION not in _cells(files[0].claims[0]):
        raise ValueError(
            f"the claim table has no {REGISTRATION!r} column: written before verify named the registration it judged; "
            "re-run seqbench verify"
        )
    chosen: dict[str, _Verify] = {}
    reruns: dict[str, list[str]] = {}  # claim -> its re-run rows (the claim table's, the claim first)
    rows = [(f.judged(name), i, f, name) for i, f in enumerate(files) for name in f.names]
    for _, _, f, name in sorted(rows, key=lambda r: r[:2]):  # by when each row was judged; a later argument on a tie
        carried = [_line(c) for r in f.reruns if (c := _cells(r))[0] == name]
        before = chosen.get(name)
        if before is not None and _rerun(before.row(name), f.row(name)):  # the verdict of record stays
            reruns[name] = list(dict.fromkeys([*reruns[name], *carried, _line(list(f.row(name).values()))]))
            continue
        kept = reruns.get(name, []) if before is not None and _same(before.row(name), f.row(name)) else []
        chosen[name], reruns[name] = f, list(dict.fromkeys([*kept, *carried]))
    names = sorted(chosen)
    out = [
        "# seqbench verify",
        "",
        f"Merged by `make verdicts` from {len(files)} verify.md files, each claim from the earliest one that "
        "judged its latest registration (a verify.md listed only the claims of its own invocation):",
        "",
    ]
    for f in files:
        mine = [c for c in names if chosen[c] is f]
        out += [f"- {'; '.join(_judging(f, mine)) or 'unknown build'}: {', '.join(mine)}"] if mine else []
    for key in ("rules", "claims"):
        out += ["", *getattr(files[0], key)[:2]]
        out += [row for c in names for row in getattr(chosen[c], key)[2:] if _cells(row)[0] == c]
    again = [r for c in names for r in reruns.get(c, [])]
    if again:
        head, rule = files[0].claims[:2]
        out += ["", f"{RERUNS_TITLE}:", "", head.replace("| claim |", RERUNS_HEADER, 1), rule, *again]
    out += [x for c in names if c in chosen[c].notes for x in ("", chosen[c].notes[c])]
    return "\n".join(out) + "\n"


def _same(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether two rows judged the same registration (at the same profile)."""
    reg = a.get(REGISTRATION, "-")
    return reg not in ("", "-") and reg == b.get(REGISTRATION) and a.get("profile") == b.get("profile")


def _rerun(first: dict[str, str], later: dict[str, str]) -> bool:
    """Whether ``later`` re-judged ``first``'s registration on another build: the same registration, another
    commit in the "judged" cell ("2026-11-28 01:35 (f26eafdb9af6)")."""
    return _same(first, later) and _sha(first.get("judged", "")) != _sha(later.get("judged", ""))


def _sha(judged: str) -> str:
    m = re.search(r"\(([^)]*)\)\s*$", judged)
    return m[1] if m else judged


def _judging(f: _Verify, claims: list[str]) -> list[str]:
    """The builds of ``f`` that judged ``claims`` (their rows' "judged" cell names build and time), so a merged
    file's build list does not carry on the builds whose claims a later file took; all of them when no row says."""
    judged = {f.row(c).get("judged", "") for c in claims}
    mine = [b for b in f.built if (m := _BUILT.fullmatch(b)) and f"{m[3]} ({m[2]})" in judged]
    return mine or f.built


def _claims(n: int) -> str:
    return f"{n} claim" + ("" if n == 1 else "s")


def block(md: str | None, repo: Path | None = None) -> str:
    """What goes between the page's markers for verify.md text ``md`` (None: no copy recorded); with ``repo``
    (a checkout holding the claim registry) a row for every shipped claim and the registry's columns."""
    if md is None:
        return NONE_YET
    table = claim_table(md)
    builds = [_BUILT.fullmatch(b) for b in _builds(md)]
    made = "; ".join(f"seqbench {b[1]} ({b[2]}) on {b[3]}" for b in builds if b) or "an unknown seqbench"
    made = (
        "a verify.md built by " if len(builds) < 2 else f"a merge of {len(builds)} verify.md files built by "
    ) + made
    counts = Counter(_cells(row)[1] for row in table[2:])
    summary = ", ".join(f"{v} {counts[v]}" for v in sorted(counts))
    lines = [
        f"Generated by `make verdicts` from `{COPY.as_posix()}`, {made}, not typed by hand "
        f"({_claims(len(table) - 2)}: {summary}); the rules' measurements are in that file.",
        "",
    ]
    hypos = hypotheses(md)
    registry = repo / REGISTRY if repo is not None else None
    if registry is None or not registry.is_file():
        return "\n".join([*lines, *table[:2], *(_line(_marked(_cells(r), hypos)) for r in table[2:])])
    regs, shipped = _registry(registry), sorted(p.stem for p in registry.parent.glob("*.yaml") if p != registry)
    width = len(_cells(table[0]))
    rows = {_cells(r)[0]: _cells(r) for r in table[2:]}
    again: dict[str, list[str]] = {}  # claim -> "holds (f00d)" per re-run of the registration in its row
    for r in next((t[2:] for t in _tables(md) if t[0].startswith(RERUNS_HEADER)), []):
        cells = dict(zip(_cells(table[0]), _cells(r)))
        again.setdefault(_cells(r)[0], []).append(f"{cells.get('verdict', '?')} ({_sha(cells.get('judged', '?'))})")
    missing = [c for c in shipped if c not in rows]
    body = []
    for name in sorted(set(rows) | set(shipped)):
        cells = rows.get(name) or [name, NO_RECORD, "-", "quick", *["-"] * (width - 4)]
        mine = [r for r in regs if r.get("claim") == name and r.get("profile") == cells[3]]
        current = [r for r in mine if not r.get("replaced")]
        after = "yes" if current and current[-1].get("after_pilot") else ""
        regs_n = str(len(mine)) if mine else "-"
        judged = dict(zip(_cells(table[0]), cells)).get(REGISTRATION, "-")
        if current and judged not in ("-", str(current[-1].get("digest"))):  # re-registered, not yet judged
            regs_n += f" (this row: {judged}, replaced; the current {current[-1].get('digest')} not judged yet)"
        body.append(_line([*_marked(cells, hypos), regs_n, after, "; ".join(again.get(name, []))]))
    head = table[0].rstrip() + " " + " | ".join(EXTRA_HEAD) + " |"
    rule = table[1].rstrip() + "---:|---|---|"
    note = (
        f"Every shipped claim has a row ({len(missing)} with {NO_RECORD!r}: {', '.join(missing)}). "
        if missing
        else "Every shipped claim has a row. "
    ) + (
        f"`registrations`: how many registrations the claim has had at that profile (`{REGISTRY.as_posix()}`: a "
        "changed setting, rule or look is registered afresh on fresh seeds); `after a pilot`: the current "
        "registration's setting, an arm or a threshold was chosen after a pilot or an earlier registration's "
        "result, in the claim's direction (the registry's `after_pilot` says what); `re-runs`: the same "
        "registration judged again by a later build (its verdict and commit), shown beside the verdict of record, "
        "never in its place: a new verdict needs a new registration on fresh seeds."
    )
    return "\n".join([*lines, head, rule, *body, "", note])


def _registry(path: Path) -> list[dict[str, Any]]:
    raw = yaml.safe_load(path.read_text()) or {}
    return [r for r in raw.get("registrations") or [] if isinstance(r, dict)]


def replace_block(page: str, new: str) -> str:
    """``page`` with the text between the markers (each on a line of its own, once, in order) replaced."""
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise ValueError(f"{PAGE}: needs one {BEGIN} line and one {END} line after it")
    head, rest = page.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{new}\n{END}{tail}"


def current_block(page: str) -> str:
    """The text between the page's markers."""
    replace_block(page, "")  # checks the markers
    return page.split(BEGIN)[1].split(END)[0].strip("\n")


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "verify_md", nargs="*", help="the verify.md to copy, or several to merge (default outputs/verify/verify.md)"
    )
    ap.add_argument("--check", action="store_true", help=f"exit 1 when {PAGE}'s block differs; change nothing")
    ap.add_argument("--repo", type=Path, default=REPO, help=f"the repository ({PAGE}, benchmarks/verify/)")
    args = ap.parse_args(argv)
    page_path, copy = args.repo / PAGE, args.repo / COPY
    page = page_path.read_text()
    if args.check:
        if current_block(page) != block(_read(copy), args.repo):
            print(f"verdicts: {PAGE}'s block differs from {COPY}; run `make verdicts`", file=sys.stderr)
            return 1
        return 0
    sources = [Path(p) for p in args.verify_md or ["outputs/verify/verify.md"]]
    try:
        texts = [_source(p) for p in sources]
        if copy.is_file() and copy.resolve() not in {p.resolve() for p in sources}:
            texts.insert(0, copy.read_text())  # its verdicts of record stay; a later build's are re-runs
        text = texts[0] if len(texts) == 1 else merge(texts)
    except ValueError as e:
        print(f"verdicts: {e}", file=sys.stderr)
        return 2
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text)
    page_path.write_text(replace_block(page, block(text, args.repo)))
    print(f"verdicts: {', '.join(map(str, sources))} -> {COPY} and {PAGE} ({_claims(len(claim_table(text)) - 2)})")
    return 0


def _source(path: Path) -> str:
    if not path.is_file():
        raise ValueError(f"no {path}; run `make verify` (or seqbench verify CLAIM ...) first")
    text = path.read_text()
    try:
        claim_table(text)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return text


if __name__ == "__main__":
    sys.exit(main())
