"""One call from a study to a report folder (the CLI and tests both use it)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import optuna
import pandas as pd

from seqbench.bench.core.artifacts import PARAM
from seqbench.bench.core.errors import UserError
from seqbench.reports.aggregate import swept
from seqbench.reports.diagnostics import load_diagnostics
from seqbench.reports.html import built_by, write_report
from seqbench.reports.table import StudyInfo, load_curves, study_info
from seqbench.sweeps.table import build_table, runs_root


@dataclass
class Report:
    info: StudyInfo
    table: pd.DataFrame
    index: Path
    seconds: float

    @property
    def folder(self) -> Path:
        return self.index.parent

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())


def build_report(
    study: optuna.Study,
    storage_label: str,
    report_dir: Path | str,
    out_dir: Path | str = "outputs",
    color_by: str | None = None,
) -> Report:
    """Read the study and its runs' files, write the dashboard into ``report_dir``.

    ``out_dir`` is where to look for ``runs/`` when the study's recorded out_dir is not there.
    ``color_by`` is a swept key (``model.name``) for the learning curves; default chosen by figures.
    """
    t0 = time.perf_counter()
    info = study_info(study, storage_label)
    table = build_table(study, runs_root(study, out_dir))
    curves = load_curves(table)
    diag = load_diagnostics(table)
    if color_by is not None and PARAM + color_by not in swept(table):
        keys = [c[len(PARAM) :] for c in swept(table)]
        raise UserError(
            f"--color-by: {color_by!r} is not a swept key of study {info.name!r}; "
            f"choose from {', '.join(keys) or '(nothing swept)'}"
        )
    index = write_report(
        info, table, curves, diag, Path(report_dir), built_by(), color_by=PARAM + color_by if color_by else None
    )
    return Report(info, table, index, time.perf_counter() - t0)
