"""Wall time of the commands that only read configs, against the interpreter and torch themselves.

    python benchmarks/startup.py             # median of 7 runs per command
    python benchmarks/startup.py --repeats 11

Each command runs as the ``seqbench`` console script does, in a fresh process (``python -m seqbench``),
with its output discarded. Printed per command: the median wall time, the ratio to a bare
``python -c pass`` and the ratio to ``python -c "import torch"`` (what every one of them paid while
model and task files imported torch at the top). Load matters on a shared machine: the script prints
``uptime``'s load averages with the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [
    ["--help"],
    ["list"],
    ["list", "-v"],
    ["run", "--print-config"],
    ["run", "model=transformer", "task=lm", "--print-config"],
    ["sweep", "demo", "--print-config"],
    ["compare", "model=lstm,gru", "--print-config"],
    ["cost", "--print-config"],
    ["verify", "--help"],
    ["runs"],
]


def wall(argv: list[str], repeats: int, cwd: str) -> float:
    """Median wall seconds of ``argv`` over ``repeats`` runs (one unmeasured run first, for the file cache)."""
    times = []
    for i in range(repeats + 1):
        t = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if i:
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cwd:  # `runs` finds no outputs/ here: it reads nothing
        python = wall([sys.executable, "-c", "pass"], args.repeats, cwd)
        torch = wall([sys.executable, "-c", "import torch"], args.repeats, cwd)
        print(f"python -c pass        {python:6.2f} s")
        print(f"python -c import torch {torch:5.2f} s")
        print(f"{'command':<48} {'median s':>8} {'x python':>9} {'x torch':>8}")
        for cmd in COMMANDS:
            t = wall([sys.executable, "-m", "seqbench", *cmd], args.repeats, cwd)
            print(f"{'seqbench ' + ' '.join(cmd):<48} {t:8.2f} {t / python:9.1f} {t / torch:8.2f}")
    print("load average (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
