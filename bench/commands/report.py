"""``seqbench report NAME``: a study -> ``<out_dir>/reports/NAME/index.html`` (and optionally a W&B Report).

``report(name, ...) -> ReportResult`` is the typed entry (``compare`` calls it too); ``cmd_report``
prints what it built.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact
from seqbench.reports import wandb_report
from seqbench.reports.build import Report, build_report
from seqbench.sweeps.storage import journal_path, open_storage
from seqbench.sweeps.table import load_study


@dataclass(frozen=True)
class ReportResult:
    """What ``report()`` returns: the built dashboard and, when published, the W&B Report's URL."""

    built: Report  # info (StudyInfo), table (the tidy frame), index (index.html), seconds
    wandb_url: str | None = None

    @property
    def index(self) -> Path:
        return self.built.index

    @property
    def n_trials(self) -> int:
        t = self.built.table
        return int(t["trial"].nunique()) if not t.empty else 0

    @property
    def n_runs(self) -> int:
        t = self.built.table
        return int(t.loc[t["run_id"].astype(bool), "run_id"].nunique()) if not t.empty else 0  # a retry shares runs


def report(
    name: str,
    *,
    storage: str | None = None,
    out_dir: str | Path = "outputs",
    out: str | Path | None = None,
    color_by: str | None = None,
    publish_wandb: bool = False,
) -> ReportResult:
    """Build the dashboard of study ``name`` (journal under ``out_dir`` unless ``storage`` names one)
    into ``out`` (default ``<out_dir>/reports/<name>/``); with ``publish_wandb`` also a W&B Report."""
    if publish_wandb:  # before any work: a missing key must not cost a full report build
        wandb_report.preflight()
    out_dir = Path(out_dir)
    journal = journal_path(storage, out_dir)
    if journal is not None and not journal.is_file():  # opening would create an empty journal
        raise UserError(
            f"--storage: no study journal at {journal}; run `seqbench sweep SPEC` first, "
            "or pass --storage URL / --out-dir DIR"
        )
    label = str(journal) if journal is not None or storage is None else redact(storage)
    study = load_study(name, open_storage(storage, out_dir))
    built = build_report(study, label, Path(out) if out else out_dir / "reports" / name, out_dir, color_by=color_by)
    return ReportResult(built, wandb_report.publish(built.info, built.table) if publish_wandb else None)


# -- the command ----------------------------------------------------------------------------------


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("name", help="study name (the sweep spec's file stem unless the sweep set --study)")
    sp.add_argument("--storage", help="Optuna storage URL or journal path; default <out-dir>/optuna.journal")
    sp.add_argument("--out-dir", default="outputs", help="root the sweep wrote under (journal, runs/); default outputs")
    sp.add_argument("--out", help="report folder; default <out-dir>/reports/NAME/")
    sp.add_argument("--color-by", help="swept key that colours the learning curves, e.g. model.name")
    sp.add_argument(
        "--publish-wandb",
        action="store_true",
        help="also publish a W&B Report (online; `wandb login` or WANDB_API_KEY; the [publish] extra)",
    )
    sp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    r = report(
        args.name,
        storage=args.storage,
        out_dir=args.out_dir,
        out=args.out,
        color_by=args.color_by,
        publish_wandb=args.publish_wandb,
    )
    rep = r.built
    print(f"report {args.name}: {r.n_trials} trials, {r.n_runs} runs -> {rep.index}")
    print(
        f"  {rep.size_bytes() / 1e6:.1f} MB in {rep.folder} (index.html, plotly.min.js, summary.md, trials.csv), "
        f"built in {rep.seconds:.1f}s"
    )
    if r.wandb_url:
        print(f"  W&B Report: {r.wandb_url}")
    return 0
