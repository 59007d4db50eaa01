"""``seqbench cost [key=value ...] [--out-dir D] [--print-config]``: time and memory of one training step
against sequence length (measurement in ``bench/training/cost.py``, outputs in ``reports/cost.py``).

``cost(config) -> CostResult`` is the typed entry; ``cmd_cost`` prints the exponents and the files.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from seqbench.bench.core.cost_format import CostMeasurement, CostMeta, CostPoint, CostSummary
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import duration, text_table
from seqbench.bench.training.cost_config import CostConfig, parse_cost_config, point_line
from seqbench.reports.cost import _fmt, write_outputs

if TYPE_CHECKING:  # the measurement's module imports torch; here only its progress type is named
    from seqbench.bench.training.cost import Progress


@dataclass(frozen=True)
class CostResult:
    """What ``cost()`` returns: every measured point, the fitted exponents per model, and the files."""

    config: CostConfig  # what was measured
    measurement: CostMeasurement  # every point and fit, as cost.json holds it (``measurement.to_json()``)
    paths: list[Path]  # cost.csv, cost.md, cost.json and the figures under config.out_dir

    @property
    def rows(self) -> list[CostPoint]:
        """One per (model, length): status, time_ms, peak_mem_mib, tokens_per_s ..."""
        return self.measurement.rows

    @property
    def summary(self) -> dict[str, CostSummary]:
        """Model -> complexity, time/memory exponents, why it stopped."""
        return self.measurement.summary

    @property
    def meta(self) -> CostMeta:
        """Device, sizes, memory method, torch version."""
        return self.measurement.meta


class PointProgress:
    """``[k/N, ETA]`` before each point's line. The ETA assumes a point's time grows with its length:
    the lengths usually double, so counting points alone would promise the long ones as fast as the
    short ones."""

    def __init__(self, models: int, lengths: Sequence[int]):
        self.left = models * sum(lengths)  # length-weighted work not yet measured
        self.measured = 0  # length-weighted work measured so far
        self.started = time.monotonic()

    def __call__(self, p: Progress) -> None:
        self.left -= p.row.length
        if p.row.status != "skipped":
            self.measured += p.row.length
        if p.done >= p.total:
            tag = f"[{p.done}/{p.total}]"
        else:
            eta = (time.monotonic() - self.started) * self.left / self.measured if self.measured else None
            tag = f"[{p.done}/{p.total}, ETA {duration(eta) if eta is not None else 'unknown'}]"
        print(f"{tag} {point_line(p.row)}", flush=True)


def config_with_out_dir(settings: Sequence[str] = (), out_dir: str | Path | None = None) -> CostConfig:
    """The ``CostConfig`` of ``key=value`` settings; ``out_dir`` (``--out-dir``) wins over the default,
    and typed as well as ``out_dir=`` with another folder is refused."""
    c = parse_cost_config(list(settings))
    if out_dir is None:
        return c
    if "out_dir" in c.model_fields_set and Path(c.out_dir) != Path(out_dir):
        raise UserError(f"--out-dir: {out_dir} disagrees with out_dir={c.out_dir}; give one of them")
    return c.model_copy(update={"out_dir": Path(out_dir)})


def cost(config: CostConfig | Sequence[str] = (), *, progress: bool = True) -> CostResult:
    """Measure ``config`` (a ``CostConfig``, or ``key=value`` settings such as ``["models=rnn,lstm"]``) and
    write its files under ``config.out_dir``; prints ``[k/N, ETA]`` per point unless ``progress`` is off."""
    from seqbench.bench.training import cost as measurement  # torch: only where a measurement starts

    c = config if isinstance(config, CostConfig) else config_with_out_dir(config)
    result = measurement.measure_cost(c, PointProgress(len(c.models), c.lengths) if progress else (lambda p: None))
    return CostResult(c, result, write_outputs(result, Path(c.out_dir)))


# -- the command ----------------------------------------------------------------------------------


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "settings",
        nargs="*",
        help="key=value: models=rnn,lstm lengths=64,128,256 d_model=128 "
        "batch_size=16 repeats=5 warmup=2 device=auto isolate=true max_step_s=10 out_dir=outputs/cost",
    )
    sp.add_argument(
        "--out-dir", help="where cost.csv/md/json and the figures go (same as out_dir=DIR; default outputs/cost)"
    )
    sp.add_argument("--print-config", action="store_true", help="print the resolved settings as YAML and exit")
    sp.set_defaults(func=cmd_cost)


def cmd_cost(args: argparse.Namespace) -> int:
    c = config_with_out_dir(args.settings, args.out_dir)
    if args.print_config:
        print(yaml.safe_dump(c.model_dump(mode="json"), sort_keys=False), end="")
        return 0
    r = cost(c)
    print(
        text_table(
            ["model", "complexity", "time exponent", "(upper half)", "stopped"],
            [
                [m, s.complexity, _fmt(s.time_exponent), _fmt(s.time_exponent_upper), s.stopped or ""]
                for m, s in r.summary.items()
            ],
            align="llrrl",
        )
    )
    print("wrote " + ", ".join(str(p) for p in r.paths))
    return 0
