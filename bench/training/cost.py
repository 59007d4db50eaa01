"""``seqbench cost``: forward+backward time and peak memory against sequence length.

    seqbench cost models=rnn,lstm,gru,transformer,tcn lengths=64,128,256,512 d_model=128

For each model and length (shortest first) one training step on random tokens
(B = ``batch_size``, vocab 16, per-step cross-entropy) is timed: ``warmup`` untimed steps,
then the median of ``repeats`` timed ones (CUDA synchronised on GPU).

Peak memory, one number per point, is the memory one forward+backward needs on top of the
model, inputs and everything set up before it:
- GPU: ``torch.cuda.max_memory_allocated`` during the first step minus the allocated bytes
  before it (the caching allocator's own count, not the reserved pool).
- CPU: torch's CPU allocator keeps no statistics and ``tracemalloc`` does not see it, so each
  point runs in a freshly forked child process (``isolate=true``) and reports the rise of the
  child's peak resident set size (``ru_maxrss``) over its resident size just before the first step
  at length T (after one step at T=2, which pages in library code and runs lazy initialisation).
  That is what the OS had to provide: it includes allocator slack and excludes pages the
  allocator reused, so it is coarse (about 1 MiB) and meaningful only at sizes well above that.
  ``isolate=false`` measures in-process (faster, no CPU memory: recorded as empty).

A model's measurement stops cleanly and says why when a point runs out of memory (CUDA OOM, or
the forked child killed by the OS), exceeds ``timeout_s``, or its median step exceeds
``max_step_s`` (longer lengths would only be slower). Exponents are least-squares slopes
of log(time) and log(memory) against log(T), over all measured lengths and over the upper
half; fixed per-step overheads flatten the curve at short T, so the upper half is closer
to the asymptotic exponent in the complexity table.

Writes ``cost.csv`` (one row per point), ``cost.md`` (table, exponents, complexity table),
``cost.json`` and plotly figures ``cost_time.html``, ``cost_memory.html`` under ``out_dir``.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import NamedTuple

import torch
import torch.nn.functional as F

from seqbench.bench.core.contract import Batch, OutputKind, TaskSpec
from seqbench.bench.core.cost_format import CostMeasurement, CostMeta, CostPoint, CostSummary, PointStatus
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS
from seqbench.bench.training.cost_config import (  # noqa: F401  (the configs, re-exported beside their modules)
    VOCAB,
    CostConfig,
    complexity,
    fit_exponent,
    is_mixer,
    model_config,
    parse_cost_config,
    point_line,
)
from seqbench.bench.training.preflight import built_model

SPEC = TaskSpec(OutputKind.TOKENS, n_classes=VOCAB, causal=True, vocab_size=VOCAB)  # what one cost step trains


def _build(model: str, d_model: int, n_layers: int, length: int) -> torch.nn.Module:
    fields = model_config(model, d_model, n_layers, length)
    return built_model(MODELS.get(fields["name"]).config_cls.model_validate(fields), SPEC)


def check_models(c: CostConfig) -> None:
    """Build every plug-in model and mixer of ``c`` once, as its points build it (on the CPU, at the shortest
    length), before any point is measured or any file written: one a run would refuse at build time (a plug-in
    mixer that reads the future or returns the wrong shape, a plug-in model whose constructor fails) refuses
    the measurement in one line naming it under ``models``, instead of being measured as an error
    (``bench.training.preflight``)."""
    problems: list[str] = []
    with torch.random.fork_rng(devices=[]):
        for model in c.models:
            if (MIXERS if is_mixer(model) else MODELS).get(model).origin == "seqbench":
                continue  # a shipped model or mixer refuses nothing at build time (as in preflight.runs_plugin)
            try:
                _build(model, c.d_model, c.n_layers, c.lengths[0])
            except UserError as e:  # model.mixer: ..., model.name: ...: cost's setting is models=
                problems += [f"models: {p.partition(': ')[2] if p.startswith('model.') else p}" for p in e.problems]
    if problems:
        raise UserError(*dict.fromkeys(problems))


# -- one point ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PointSetup:
    """What every point of one measurement shares (``CostMeta`` less what is said about it afterwards)."""

    d_model: int
    n_layers: int
    batch_size: int
    repeats: int
    warmup: int
    device: str  # "cpu" or "cuda": auto resolved
    threads: int
    rss: bool = False  # CPU memory as the rise of this process's peak RSS (in a freshly forked child only)


def measure_point(model: str, length: int, c: PointSetup) -> CostPoint:
    """Time (and on GPU/isolated CPU, memory of) one training step of ``model`` at ``length``."""
    torch.set_num_threads(c.threads)
    torch.manual_seed(0)
    dev = torch.device(c.device)
    net = _build(model, c.d_model, c.n_layers, length).to(dev)
    B = c.batch_size
    batch = Batch(
        x=torch.randint(0, VOCAB, (B, length), device=dev), y=torch.randint(0, VOCAB, (B, length), device=dev)
    )

    def step(b: Batch = batch) -> None:
        out, _ = net(b)  # (B, T, VOCAB)
        F.cross_entropy(out.flatten(0, 1), b.y.flatten()).backward()
        net.zero_grad(set_to_none=True)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    mem = None
    if dev.type == "cuda":
        sync()
        torch.cuda.reset_peak_memory_stats(dev)
        before = torch.cuda.memory_allocated(dev)
        step()
        sync()
        mem = (torch.cuda.max_memory_allocated(dev) - before) / 2**20
    elif c.rss:
        step(Batch(x=batch.x[:, :2], y=batch.y[:, :2]))  # pages in code, initialises libraries: not per-T cost
        rss_before = _rss_kib()
        step()
        mem = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    else:
        step()
    for _ in range(max(0, c.warmup - 1)):
        step()
    sync()
    times = []
    for _ in range(c.repeats):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return CostPoint(
        model,
        length,
        "ok",
        time_ms=med * 1e3,
        time_ms_min=min(times) * 1e3,
        peak_mem_mib=mem,
        tokens_per_s=B * length / med,
    )


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def _point_child(conn: Connection, model: str, length: int, c: PointSetup) -> None:
    try:
        res = measure_point(model, length, replace(c, rss=True))
    except Exception as e:  # noqa: BLE001 - reported to the parent as the point's status
        status: PointStatus = "oom" if isinstance(e, MemoryError) else "error"
        res = CostPoint(model, length, status, detail=f"{type(e).__name__}: {e}"[:200])
    conn.send(res)
    conn.close()


def run_point(model: str, length: int, c: PointSetup, isolate: bool, timeout_s: float) -> CostPoint:
    """One point; on CPU with ``isolate`` in a forked child (fresh peak RSS, survives the OOM killer).

    Forked, not spawned: the child inherits the imported modules (a spawned interpreter re-imports torch,
    ~10-30 s per point on a busy machine). The parent runs no torch ops before forking, so no intra-op
    thread pool is inherited. On GPU every point runs in-process: the CUDA allocator's counters need no
    fresh process, its OOM is an exception, and CUDA does not survive fork.
    """
    if not (isolate and c.device == "cpu"):
        try:
            return measure_point(model, length, c)
        except torch.OutOfMemoryError as e:  # the CUDA allocator's (torch.cuda.OutOfMemoryError), caught by type
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return CostPoint(model, length, "oom", detail=str(e)[:200])

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_point_child, args=(send, model, length, c), daemon=True)
    p.start()
    send.close()
    res: CostPoint | None = recv.recv() if recv.poll(timeout_s) else None
    p.join(5 if res is not None else 0)
    if p.is_alive():
        p.kill()
        p.join()
    if res is not None:
        return res
    if p.exitcode in (-9, 137):
        return CostPoint(model, length, "oom", detail="killed by the OS (SIGKILL), most likely out of memory")
    if p.exitcode is None or p.exitcode == -9 or p.exitcode < 0:
        return CostPoint(model, length, "timeout", detail=f"point took longer than timeout_s={timeout_s}")
    return CostPoint(model, length, "error", detail=f"child exited with code {p.exitcode}")


# -- measure, fit, write -----------------------------------------------------------------------


def exponents(rows: list[CostPoint], key: Callable[[CostPoint], float | None]) -> tuple[float | None, float | None]:
    """The log-log slope of ``key`` (a point's time or memory) against T over the ok points that have it:
    over all of them, and over the upper half (None with fewer than two)."""
    ok = [(r.length, v) for r in rows if r.status == "ok" and (v := key(r))]
    ts, vs = [t for t, _ in ok], [v for _, v in ok]
    upper = len(ts) // 2
    return fit_exponent(ts, vs), fit_exponent(ts[upper:], vs[upper:]) if len(ts) - upper >= 2 else None


class Progress(NamedTuple):
    """What ``measure_cost`` tells its ``progress`` callback after each point, skipped ones included."""

    row: CostPoint  # the point (model, length, status, time_ms ...)
    done: int  # points finished so far
    total: int  # points in the measurement (models x lengths)


def print_point(p: Progress) -> None:
    print(f"[{p.done}/{p.total}] {point_line(p.row)}", flush=True)


def measure_cost(c: CostConfig, progress: Callable[[Progress], None] = print_point) -> CostMeasurement:
    """Every (model, length) point of ``c``, shortest length first; ``progress`` hears of each."""
    device = ("cuda" if torch.cuda.is_available() else "cpu") if c.device == "auto" else c.device
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("device: cuda requested but no CUDA device is visible; use device=cpu or auto")
    check_models(c)
    setup = PointSetup(c.d_model, c.n_layers, c.batch_size, c.repeats, c.warmup, device, c.threads)
    rows: list[CostPoint] = []
    summary: dict[str, CostSummary] = {}
    total = len(c.models) * len(c.lengths)
    for model in c.models:
        model_rows: list[CostPoint] = []
        stopped: str | None = None
        for length in c.lengths:
            if stopped:
                model_rows.append(CostPoint(model, length, "skipped", detail=stopped))
                progress(Progress(model_rows[-1], len(rows) + len(model_rows), total))
                continue
            r = run_point(model, length, setup, c.isolate, c.timeout_s)
            model_rows.append(r)
            if r.status != "ok":
                stopped = f"after {r.status} at T={length}"
            elif r.time_ms is not None and r.time_ms / 1e3 > c.max_step_s:
                stopped = f"median step {r.time_ms / 1e3:.1f}s > max_step_s={c.max_step_s} at T={length}"
            progress(Progress(r, len(rows) + len(model_rows), total))
        t_all, t_up = exponents(model_rows, lambda r: r.time_ms)
        m_all, m_up = exponents(model_rows, lambda r: r.peak_mem_mib)
        text, exponent = complexity(model)
        summary[model] = CostSummary(text, exponent, t_all, t_up, m_all, m_up, stopped)
        rows += model_rows
    mem_method = (
        "cuda max_memory_allocated"
        if device == "cuda"
        else ("peak RSS rise in a forked child per point" if c.isolate else "not measured (isolate=false)")
    )
    meta = CostMeta(
        c.d_model, c.n_layers, c.batch_size, c.repeats, c.warmup, device, c.threads, mem_method, torch.__version__
    )
    return CostMeasurement(c.model_dump(mode="json"), meta, rows, summary)
