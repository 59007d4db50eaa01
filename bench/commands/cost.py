"""``seqbench cost``: the command (measurement in ``bench/training/cost.py``, outputs in ``reports/cost.py``)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from seqbench.bench.core.text import text_table
from seqbench.bench.training.cost import parse_cost_config, sweep
from seqbench.reports.cost import _fmt, write_outputs


def cmd_cost(args: argparse.Namespace) -> int:
    c = parse_cost_config(args.settings)
    result = sweep(c)
    paths = write_outputs(result, Path(c.out_dir))
    print(text_table(["model", "complexity", "time exponent", "(upper half)", "stopped"],
                     [[m, s["complexity"], _fmt(s["time_exponent"]), _fmt(s["time_exponent_upper"]), s["stopped"] or ""]
                      for m, s in result["summary"].items()], align="llrrl"))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def register(sub: Any) -> None:
    sp = sub.add_parser("cost", help="time and memory of one training step against sequence length")
    sp.add_argument("settings", nargs="*", help="key=value: models=rnn,lstm lengths=64,128,256 d_model=128 "
                    "batch_size=16 repeats=5 warmup=2 device=auto isolate=true max_step_s=10 out_dir=outputs/cost")
    sp.set_defaults(func=cmd_cost)
