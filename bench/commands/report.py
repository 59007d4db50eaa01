"""``seqbench report NAME``: a study -> ``<out_dir>/reports/NAME/index.html`` (and optionally a W&B Report)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from seqbench.bench.core.errors import UserError


def register(sub: Any) -> None:
    sp = sub.add_parser("report", help="static HTML dashboard of a study (opens from file://, no network)")
    sp.add_argument("name", help="study name (the sweep spec's file stem unless the sweep set --study)")
    sp.add_argument("--storage", help="Optuna storage URL or journal path; default <out-dir>/optuna.journal")
    sp.add_argument("--out-dir", default="outputs", help="root the sweep wrote under (journal, runs/); "
                    "default outputs")
    sp.add_argument("--out", help="report folder; default <out-dir>/reports/NAME/")
    sp.add_argument("--color-by", help="swept key that colours the learning curves, e.g. model.name")
    sp.add_argument("--publish-wandb", action="store_true",
                    help="also publish a W&B Report (online; `wandb login` or WANDB_API_KEY; the [publish] extra)")
    sp.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from seqbench.reports import wandb_report

    if args.publish_wandb:  # before any work: a missing key must not cost a full report build
        wandb_report.preflight()
    from seqbench.sweeps.storage import journal_path, open_storage, redact

    from seqbench.reports.build import build_report
    from seqbench.reports.table import load_study

    out_dir = Path(args.out_dir)
    journal = journal_path(args.storage, out_dir)
    if journal is not None and not journal.is_file():  # opening would create an empty journal
        raise UserError(f"--storage: no study journal at {journal}; run `seqbench sweep SPEC` first, "
                        "or pass --storage URL / --out-dir DIR")
    storage = open_storage(args.storage, out_dir)
    label = str(journal) if journal is not None else redact(args.storage)
    study = load_study(args.name, storage)
    report_dir = Path(args.out) if args.out else out_dir / "reports" / args.name
    rep = build_report(study, label, report_dir, out_dir, color_by=args.color_by)
    n_trials = rep.table["trial"].nunique() if not rep.table.empty else 0
    n_runs = int(rep.table["run_id"].astype(bool).sum()) if not rep.table.empty else 0
    print(f"report {args.name}: {n_trials} trials, {n_runs} runs -> {rep.index}")
    print(f"  {rep.size_bytes() / 1e6:.1f} MB in {rep.folder} (index.html, plotly.min.js, summary.md, trials.csv), "
          f"built in {rep.seconds:.1f}s")
    if args.publish_wandb:
        url = wandb_report.publish(rep.info, rep.table)
        print(f"  W&B Report: {url}")
    return 0
