"""Where a tiny run's wall time goes outside training, and what offline W&B costs per run.

    python benchmarks/run_overhead.py                  # breakdown of one `seqbench run` + W&B per run
    python benchmarks/run_overhead.py --runs 7         # more runs in the worker loop (median over them)

1. **One run, fresh process** (what `seqbench run task=copy model=lstm model.d_model=32
   train.max_steps=100` does): a child process times its imports (torch, pytorch_lightning,
   seqbench's training path, wandb), then one run with callbacks that stamp Trainer construction
   (the first callback hook), the start of training, the end of the first validation, the end
   of training and the return of ``run()``; the parent times the whole process (interpreter start
   and teardown included). W&B's own share is stamped around ``wandb.init`` and ``Run.finish``.
2. **W&B per run inside a worker** (how a sweep worker runs many trials): one process runs the
   tiny run ``--runs`` times with ``tracking.wandb=offline`` and as often with ``off``,
   alternating; the W&B cost per run is the median of the offline runs' ``wandb.init`` +
   ``Run.finish`` time (whoever calls them), and the difference of the medians of the two run
   walls is printed beside it. ``--worker-only`` skips part 1 (it also runs against older
   seqbench versions, whose W&B went through Lightning's WandbLogger).

Load matters on a shared machine: the script prints ``uptime``'s load averages with the numbers.

Measured (Nov 2026, 2 shared cores, load average about 3, medians): the first ``wandb.init`` of
a process 1.13 s before (Lightning's WandbLogger, W&B Launch imported by init) -> 0.31 s after;
W&B per run inside a worker (init + finish) 0.150 s -> 0.040 s; ``import wandb`` 0.35 s and
``Run.finish`` 0.006 s both times. Interpreter exit after a run is about 1.5 s (finalizing what
torch and Lightning loaded; ``os._exit`` after the atexit handlers skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
stamps = {}
import torch; stamps["import torch"] = time.perf_counter() - t0
import pytorch_lightning as pl; stamps["import pytorch_lightning"] = time.perf_counter() - t0
from seqbench.bench.config import build_config
from seqbench.bench.training import train; stamps["import seqbench"] = time.perf_counter() - t0
spans = {"wandb.init": 0.0, "Run.finish": 0.0}
if sys.argv[2] == "offline":  # timed whoever calls them (seqbench, or Lightning's WandbLogger before)
    import wandb; stamps["import wandb"] = time.perf_counter() - t0
    def timed(owner, name, key):
        orig = getattr(owner, name)
        def wrapper(*a, **k):
            s = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                spans[key] += time.perf_counter() - s
        setattr(owner, name, wrapper)
    timed(wandb, "init", "wandb.init")
    timed(wandb.Run, "finish", "Run.finish")
class Stamps(pl.Callback):
    def setup(self, trainer, module, stage):
        stamps.setdefault("trainer built (setup)", time.perf_counter() - t0)
    def on_train_start(self, trainer, module):
        stamps.setdefault("train start", time.perf_counter() - t0)
    def on_validation_end(self, trainer, module):
        stamps.setdefault("first validation end", time.perf_counter() - t0)
    def on_train_end(self, trainer, module):
        stamps.setdefault("train end", time.perf_counter() - t0)
cfg = build_config({}, ["task=copy", "model=lstm", "model.d_model=32", "train.max_steps=100",
                        f"tracking.wandb={sys.argv[2]}", f"out_dir={sys.argv[1]}"])
stamps["config"] = time.perf_counter() - t0
r = train.train_run(cfg, callbacks=[Stamps()], progress=False)
stamps["run() returned"] = time.perf_counter() - t0
print(json.dumps({"stamps": stamps, "spans": spans, "train_s": r["train_time_s"], "wall_s": r["wall_time_s"]}))
"""

WORKER = r"""
import json, sys, time
import wandb
from seqbench.bench.config import build_config
from seqbench.bench.training import train
spans = []  # wandb.init + Run.finish per offline run (whoever calls them: seqbench or Lightning's logger)
orig_init, orig_finish = wandb.init, wandb.Run.finish
def init(*a, **k):
    s = time.perf_counter(); out = orig_init(*a, **k); spans.append(time.perf_counter() - s); return out
def finish(self, *a, **k):
    s = time.perf_counter(); out = orig_finish(self, *a, **k); spans[-1] += time.perf_counter() - s; return out
wandb.init, wandb.Run.finish = init, finish
walls = {"offline": [], "off": []}
for i in range(int(sys.argv[2])):
    for mode in ("offline", "off"):
        cfg = build_config({}, ["task=copy", "model=lstm", "model.d_model=32", "train.max_steps=100",
                                f"tracking.wandb={mode}", f"out_dir={sys.argv[1]}", f"seed={i}"])
        s = time.perf_counter()
        train.train_run(cfg, progress=False)
        walls[mode].append(time.perf_counter() - s)
print(json.dumps({"walls": walls, "wandb": spans}))
"""


def load() -> str:
    return open("/proc/loadavg").read().split()[:3].__str__() if os.path.exists("/proc/loadavg") else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per mode in the worker loop")
    ap.add_argument("--fresh", type=int, default=3, help="fresh-process runs per mode")
    ap.add_argument("--worker-only", action="store_true", help="only part 2 (W&B per run inside a worker)")
    args = ap.parse_args()
    env = {**os.environ, "WANDB_SILENT": "true"}
    env.pop("WANDB_MODE", None)
    with tempfile.TemporaryDirectory() as out:
        print(f"load before: {load()}")
        for mode in () if args.worker_only else ("offline", "off"):
            rows = []
            for _ in range(args.fresh):
                t = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", CHILD, out, mode], capture_output=True, text=True, env=env)
                total = time.perf_counter() - t
                if p.returncode:
                    sys.exit(p.stderr)
                d = json.loads(p.stdout.strip().splitlines()[-1])
                d["process wall"] = total
                rows.append(d)
            med = lambda f, rows=rows: statistics.median(f(r) for r in rows)  # noqa: E731
            print(f"\n== one `seqbench run` in a fresh process, tracking.wandb={mode} (median of {args.fresh})")
            print(
                f"  process wall {med(lambda r: r['process wall']):.2f}s; training {med(lambda r: r['train_s']):.2f}s"
            )
            for k in rows[0]["stamps"]:
                print(f"  {k:<28} at {med(lambda r, k=k: r['stamps'][k]):6.2f}s")
            teardown = med(lambda r: r["process wall"] - r["stamps"]["run() returned"])
            print(f"  teardown after run()       {teardown:6.2f}s (interpreter start + exit)")
            if mode == "offline":
                print(
                    f"  W&B: wandb.init {med(lambda r: r['spans']['wandb.init']):.3f}s (the process's first: "
                    f"starts W&B's service), Run.finish {med(lambda r: r['spans']['Run.finish']):.3f}s"
                )
        p = subprocess.run([sys.executable, "-c", WORKER, out, str(args.runs)], capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit(p.stderr)
        d = json.loads(p.stdout.strip().splitlines()[-1])
        per_run = d["wandb"][1:]  # the first run also starts W&B's service process for the worker
        print(f"\n== {args.runs} runs per mode in one worker process (alternating offline/off)")
        print(
            f"  W&B init+finish per run: median {statistics.median(per_run):.3f}s (runs 2..{args.runs}: "
            f"{', '.join(f'{x:.3f}' for x in per_run)}); first run {d['wandb'][0]:.3f}s (starts the service)"
        )
        off, on = statistics.median(d["walls"]["off"][1:]), statistics.median(d["walls"]["offline"][1:])
        print(f"  run wall: offline {on:.2f}s, off {off:.2f}s (median of runs 2..; difference {on - off:+.2f}s)")
        print(f"load after: {load()}")


if __name__ == "__main__":
    main()
