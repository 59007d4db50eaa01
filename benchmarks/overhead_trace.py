"""Where seqbench's step costs more than a bare LightningModule's: the same model and batches through
both (benchmarks/overhead.py's two Lightning paths), each traced over the same window of steps, and
the difference printed per step, largest first.

    python benchmarks/overhead_trace.py --device cuda --model transformer --d-model 512 --set model.n_layers=4
    python benchmarks/overhead_trace.py                      # LSTM d64 on copy, CPU

Two passes a path, never together (each tracer slows what it watches):
- ``torch.profiler`` over ``--steps`` steps: per step, the calls and host (self CPU) microseconds of
  each operator and CUDA runtime call. Host syncs (``cudaStreamSynchronize``, device-to-host
  ``cudaMemcpy``, ``aten::_local_scalar_dense``: a tensor read as a Python number) are what stall an
  asynchronous GPU step, so their counts come first.
- ``cProfile`` over the next ``--steps`` steps: per step, the Python functions' own time (tottime),
  summed by function, the difference largest first. This is what the profiler's operator table cannot
  see: Lightning's hooks, logging and callbacks between the operators.
The window is the same (steps ``--warmup`` onwards) for both paths; figures are per step.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from collections import defaultdict

import pytorch_lightning as pl
import torch
from overhead import Window, bare_lightning_run, bench_config, seqbench_run  # benchmarks/ is the script's folder

SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "aten::_local_scalar_dense")


class Traced(pl.Callback):
    """Profiles steps [warmup, warmup + n) with torch.profiler and [warmup + n, warmup + 2n) with cProfile;
    each window runs from one step's end to another's, so everything between steps is inside."""

    def __init__(self, warmup: int, n: int, cuda: bool):
        self.edges, self.cuda, self.step = (warmup, warmup + n, warmup + 2 * n), cuda, 0
        self.prof: torch.profiler.profile | None = None
        self.cprof = cProfile.Profile()
        self.wall: dict[str, float] = {}

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.step += 1
        a, b, c = self.edges
        if self.step == a:
            self._sync()
            acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if self.cuda else [])
            self.prof = torch.profiler.profile(activities=acts)
            self.prof.__enter__()
            self.t0 = time.perf_counter()
        elif self.step == b and self.prof is not None:
            self._sync()
            self.wall["profiler"] = time.perf_counter() - self.t0
            self.prof.__exit__(None, None, None)
            self.t0 = time.perf_counter()
            self.cprof.enable()
        elif self.step == c:
            self._sync()
            self.cprof.disable()
            self.wall["cProfile"] = time.perf_counter() - self.t0


def ops(prof: torch.profiler.profile, n: int) -> dict[str, tuple[float, float]]:
    """name -> (calls per step, host self-CPU microseconds per step)."""
    return {e.key: (e.count / n, e.self_cpu_time_total / n) for e in prof.key_averages()}


def functions(cprof: cProfile.Profile, n: int) -> dict[str, tuple[float, float]]:
    """'file:line(function)' -> (calls per step, own microseconds per step), file shortened to two parts."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (file, line, fn), (_, calls, tottime, _, _) in pstats.Stats(cprof).stats.items():  # type: ignore[attr-defined]
        key = f"{'/'.join(file.split('/')[-2:])}:{line}({fn})"
        out[key][0] += calls / n
        out[key][1] += tottime * 1e6 / n
    return {k: (v[0], v[1]) for k, v in out.items()}


def diff_table(title: str, s: dict[str, tuple[float, float]], b: dict[str, tuple[float, float]], top: int) -> None:
    rows = [(k, s.get(k, (0.0, 0.0)), b.get(k, (0.0, 0.0))) for k in set(s) | set(b)]
    rows.sort(key=lambda r: r[1][1] - r[2][1], reverse=True)
    total_s, total_b = sum(v[1] for v in s.values()), sum(v[1] for v in b.values())
    print(f"\n{title}: {total_s:.0f} us a step in seqbench, {total_b:.0f} in bare Lightning; largest differences")
    print(f"{'us/step (seqbench - bare)':>26} {'calls/step s / b':>18}  name")
    for k, (cs, us), (cb, ub) in rows[:top]:
        print(f"{us - ub:>+12.1f} ({us:>6.1f}-{ub:>6.1f}) {cs:>8.1f} / {cb:<7.1f}  {k[:110]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="copy")
    ap.add_argument("--model", default="lstm")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=30, help="steps in each traced window")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--set", nargs="*", default=["task.delay=20"], help="extra RunConfig overrides")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("error: --device: cuda requested but no CUDA device is visible; use --device cpu", file=sys.stderr)
        raise SystemExit(2)
    total = args.warmup + 2 * args.steps + 2
    with tempfile.TemporaryDirectory() as tmp:
        cfg = bench_config(args, args.d_model, total, cuda, tmp)
        window = Window(cuda, 0, total)  # the timing callback's own window is unused here
        traced = {}
        for name, run in (("seqbench", seqbench_run), ("bare", bare_lightning_run)):
            t = Traced(args.warmup, args.steps, cuda)
            run(cfg, window, extra=[t])
            traced[name] = t
    where = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"{where}: {args.model} d_model {args.d_model}, batch {args.batch_size}, {args.steps} steps a window")
    for name, t in traced.items():
        print(
            f"  {name}: traced wall ms a step, profiler {t.wall['profiler'] * 1e3 / args.steps:.2f}, "
            f"cProfile {t.wall['cProfile'] * 1e3 / args.steps:.2f}"
        )
    s_ops, b_ops = (ops(traced[k].prof, args.steps) for k in ("seqbench", "bare"))  # type: ignore[arg-type]
    print("\nhost syncs a step (seqbench / bare):")
    for k in SYNCS + ("cudaMemcpyAsync", "aten::item", "aten::copy_"):
        print(f"  {k:<28} {s_ops.get(k, (0.0, 0.0))[0]:>6.1f} / {b_ops.get(k, (0.0, 0.0))[0]:.1f}")
    diff_table("torch.profiler, operators and CUDA runtime calls (self CPU)", s_ops, b_ops, args.top)
    s_fn, b_fn = (functions(traced[k].cprof, args.steps) for k in ("seqbench", "bare"))
    diff_table("cProfile, Python functions (own time)", s_fn, b_fn, args.top)


if __name__ == "__main__":
    main()
