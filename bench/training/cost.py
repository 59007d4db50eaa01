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

A model's sweep stops cleanly and says why when a point runs out of memory (CUDA OOM, or
the forked child killed by the OS), exceeds ``timeout_s``, or its median step exceeds
``max_step_s`` (longer lengths would only be slower). Exponents are least-squares slopes
of log(time) and log(memory) against log(T), over all measured lengths and over the upper
half; fixed per-step overheads flatten the curve at short T, so the upper half is closer
to the asymptotic exponent in the complexity table.

Writes ``cost.csv`` (one row per point), ``cost.md`` (table, exponents, complexity table),
``cost.json`` and plotly figures ``cost_time.html``, ``cost_memory.html`` under ``out_dir``.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import resource
import statistics
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Literal, NamedTuple

from pydantic import Field, ValidationError, field_validator, model_validator

import seqbench.models  # noqa: F401  (fills MODELS)
from seqbench.bench.core.contract import OutputKind
from seqbench.bench.core.errors import UserError, did_you_mean, format_validation_error, validation_problems
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import leaves, parse_pairs, set_dotted

VOCAB = 16


def _default_models() -> list[str]:
    """Every measurable model that declares a complexity class (``ModelConfig.complexity``)."""
    return [m for m in _measurable() if MODELS.get(m).config_cls.complexity is not None]


def _measurable() -> list[str]:
    """Registered models that produce per-step tokens, which is what one cost step trains."""
    return [e.name for e in MODELS if OutputKind.TOKENS in e.config_cls.supported_kinds]


def complexity(model: str) -> tuple[str, int | None]:
    """(the model's cost per sequence in words, its exponent in T), or ("?", None) if undeclared."""
    return MODELS.get(model).config_cls.complexity or ("?", None)


class CostConfig(Section):
    models: list[str] = Field(default_factory=_default_models, min_length=1,
                              description="registered per-step models to sweep (default: every one that "
                              "declares a complexity class)")
    lengths: list[int] = Field(default_factory=lambda: [64, 128, 256, 512, 1024], min_length=2,
                               description="sequence lengths, swept shortest first")
    d_model: int = Field(128, ge=1, description="model width")
    n_layers: int = Field(1, ge=1, description="stacked layers")
    batch_size: int = Field(16, ge=1, description="sequences per step")
    repeats: int = Field(5, ge=1, description="timed steps per point (the median is reported)")
    warmup: int = Field(2, ge=0, description="untimed steps before timing (allocator, kernel selection)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="cuda when available under auto")
    threads: int = Field(1, ge=1, description="torch intra-op threads (the harness default is 1)")
    isolate: bool = Field(True, description="CPU: each point in a forked child process, for its peak-RSS "
                          "memory and so that an out-of-memory kill cannot end the sweep")
    max_step_s: float = Field(10.0, gt=0, description="stop a model's sweep after a length whose median "
                              "step exceeds this")
    timeout_s: float = Field(300.0, gt=0, description="kill an isolated point after this many seconds "
                             "and stop that model's sweep")
    out_dir: Path = Field(Path("outputs/cost"), description="where cost.csv/md/json and figures go")

    @field_validator("models", "lengths", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        """``rnn,lstm`` (a YAML string) and a lone ``64`` are lists too."""
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @field_validator("models")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        ok = _measurable()
        bad = [m for m in v if m not in ok]
        if bad:
            named = [f"{b!r} ({hint.strip()})" if (hint := did_you_mean(b, ok)) else repr(b) for b in bad]
            raise ValueError(f"unknown model {', '.join(named)}; choose from {', '.join(ok)}")
        return v

    @model_validator(mode="after")
    def _models_accept_sizes(self):
        for m in self.models:
            cls = MODELS.get(m).config_cls
            has_layers = "n_layers" in cls.model_fields
            if self.n_layers != 1 and not has_layers:
                raise ValueError(f"n_layers: {m} has no n_layers (its fields: {', '.join(cls.model_fields)}); "
                                 f"leave n_layers at 1 or leave {m} out of models")
            extra = {"n_layers": self.n_layers} if has_layers else {}
            try:
                cls(d_model=self.d_model, **extra)
            except ValidationError as e:
                raise ValueError(f"{m}: {format_validation_error(e)}") from None
        return self

    @field_validator("lengths")
    @classmethod
    def _sorted(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v):
            raise ValueError("lengths must be positive")
        return sorted(set(v))


def parse_cost_config(settings: list[str]) -> CostConfig:
    """``seqbench cost`` settings, read like every other ``key=value`` (``bench.settings``);
    ``models=rnn,lstm`` and ``lengths=64,128`` may drop the brackets."""
    d: dict[str, Any] = {}
    for key, value in leaves(parse_pairs(settings, example="lengths=64,128,256")).items():
        set_dotted(d, key, value)
    try:
        return CostConfig.model_validate(d)
    except ValidationError as e:
        raise UserError(*validation_problems(e, allowed_fields=lambda loc: list(CostConfig.model_fields))
                        ) from None


def fit_exponent(lengths: list[float], values: list[float]) -> float | None:
    """Least-squares slope of log(value) against log(length); None with fewer than two points."""
    pts = [(math.log(t), math.log(v)) for t, v in zip(lengths, values) if v and v > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


# -- torch below: the measurement. The settings above import without torch (`cost --print-config`;
# bench/core/configs_only.py).
import torch
import torch.nn.functional as F

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.models.base import build_model


# -- one point ------------------------------------------------------------------------------

def measure_point(model: str, length: int, c: dict[str, Any]) -> dict[str, Any]:
    """Time (and on GPU/isolated CPU, memory of) one training step of ``model`` at ``length``."""
    torch.set_num_threads(c["threads"])
    torch.manual_seed(0)
    dev = torch.device(c["device"])
    cfg_cls = MODELS.get(model).config_cls
    fields = {"d_model": c["d_model"]}
    if "n_layers" in cfg_cls.model_fields:  # CostConfig refused n_layers != 1 for the others (tcn: n_levels)
        fields["n_layers"] = c["n_layers"]
    if "max_len" in cfg_cls.model_fields:
        fields["max_len"] = max(length, cfg_cls.model_fields["max_len"].default or 0)
    spec = TaskSpec(OutputKind.TOKENS, n_classes=VOCAB, causal=True, vocab_size=VOCAB)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = build_model(cfg_cls(**fields), spec).to(dev)
    B = c["batch_size"]
    batch = Batch(x=torch.randint(0, VOCAB, (B, length), device=dev), y=torch.randint(0, VOCAB, (B, length), device=dev))

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
    elif c.get("_rss"):
        step(Batch(x=batch.x[:, :2], y=batch.y[:, :2]))  # pages in code, initialises libraries: not per-T cost
        rss_before = _rss_kib()
        step()
        mem = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    else:
        step()
    for _ in range(max(0, c["warmup"] - 1)):
        step()
    sync()
    times = []
    for _ in range(c["repeats"]):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"status": "ok", "time_ms": med * 1e3, "time_ms_min": min(times) * 1e3, "peak_mem_mib": mem,
            "tokens_per_s": B * length / med}


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def _point_child(conn: Any, model: str, length: int, c: dict[str, Any]) -> None:
    try:
        res = measure_point(model, length, {**c, "_rss": True})
    except Exception as e:  # noqa: BLE001 - reported to the parent as the point's status
        res = {"status": "oom" if isinstance(e, MemoryError) else "error", "detail": f"{type(e).__name__}: {e}"[:200]}
    conn.send(res)
    conn.close()


def run_point(model: str, length: int, c: dict[str, Any], isolate: bool, timeout_s: float) -> dict[str, Any]:
    """One point; on CPU with ``isolate`` in a forked child (fresh peak RSS, survives the OOM killer).

    Forked, not spawned: the child inherits the imported modules (a spawned interpreter re-imports torch,
    ~10-30 s per point on a busy machine). The parent runs no torch ops before forking, so no intra-op
    thread pool is inherited. On GPU every point runs in-process: the CUDA allocator's counters need no
    fresh process, its OOM is an exception, and CUDA does not survive fork.
    """
    if not (isolate and c["device"] == "cpu"):
        try:
            return measure_point(model, length, c)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            if "out of memory" not in str(e).lower():
                raise

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return {"status": "oom", "detail": str(e)[:200]}

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_point_child, args=(send, model, length, c), daemon=True)
    p.start()
    send.close()
    res = recv.recv() if recv.poll(timeout_s) else None
    p.join(5 if res is not None else 0)
    if p.is_alive():
        p.kill()
        p.join()
    if res is not None:
        return res
    if p.exitcode in (-9, 137):
        return {"status": "oom", "detail": "killed by the OS (SIGKILL), most likely out of memory"}
    if p.exitcode is None or p.exitcode == -9 or p.exitcode < 0:
        return {"status": "timeout", "detail": f"point took longer than timeout_s={timeout_s}"}
    return {"status": "error", "detail": f"child exited with code {p.exitcode}"}


# -- sweep, fit, write ------------------------------------------------------------------------

def exponents(rows: list[dict[str, Any]], key: str) -> tuple[float | None, float | None]:
    ok = [r for r in rows if r["status"] == "ok" and r.get(key)]
    ts, vs = [r["length"] for r in ok], [r[key] for r in ok]
    upper = len(ts) // 2
    return fit_exponent(ts, vs), fit_exponent(ts[upper:], vs[upper:]) if len(ts) - upper >= 2 else None


def point_line(r: dict[str, Any]) -> str:
    """One point as the progress shows it: model, length, then time and memory, or what happened."""
    what = (f"{r['time_ms']:9.2f} ms  " + (f"{r['peak_mem_mib']:8.1f} MiB" if r.get("peak_mem_mib") is not None
                                           else "")) if r["status"] == "ok" else r["status"]
    return f"[cost] {r['model']:<12} T={r['length']:<6} {what}"


class Progress(NamedTuple):
    """What ``sweep`` tells its ``progress`` callback after each point, skipped ones included."""

    row: dict[str, Any]  # the point's row (model, length, status, time_ms ...)
    done: int  # points finished so far
    total: int  # points in the sweep (models x lengths)


def print_point(p: Progress) -> None:
    print(f"[{p.done}/{p.total}] {point_line(p.row)}", flush=True)


def sweep(c: CostConfig, progress: Callable[[Progress], None] = print_point) -> dict[str, Any]:
    """Every (model, length) point of ``c``, shortest length first; ``progress`` hears of each."""
    device = ("cuda" if torch.cuda.is_available() else "cpu") if c.device == "auto" else c.device
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("device: cuda requested but no CUDA device is visible; use device=cpu or auto")
    pc = {"d_model": c.d_model, "n_layers": c.n_layers, "batch_size": c.batch_size, "repeats": c.repeats,
          "warmup": c.warmup, "device": device, "threads": c.threads}
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for model in c.models:
        model_rows, stopped = [], None
        for length in c.lengths:
            if stopped:
                model_rows.append({"model": model, "length": length, "status": "skipped", "detail": stopped})
                progress(Progress(model_rows[-1], len(rows) + len(model_rows), len(c.models) * len(c.lengths)))
                continue
            r = {"model": model, "length": length, **run_point(model, length, pc, c.isolate, c.timeout_s)}
            model_rows.append(r)
            if r["status"] != "ok":
                stopped = f"after {r['status']} at T={length}"
            elif r["time_ms"] / 1e3 > c.max_step_s:
                stopped = f"median step {r['time_ms'] / 1e3:.1f}s > max_step_s={c.max_step_s} at T={length}"
            progress(Progress(r, len(rows) + len(model_rows), len(c.models) * len(c.lengths)))
        t_all, t_up = exponents(model_rows, "time_ms")
        m_all, m_up = exponents(model_rows, "peak_mem_mib")
        text, exponent = complexity(model)
        summary[model] = {"complexity": text, "expected_time_exponent": exponent,
                          "time_exponent": t_all, "time_exponent_upper": t_up,
                          "memory_exponent": m_all, "memory_exponent_upper": m_up, "stopped": stopped}
        rows += model_rows
    mem_method = "cuda max_memory_allocated" if device == "cuda" else (
        "peak RSS rise in a forked child per point" if c.isolate else "not measured (isolate=false)")
    meta = {**pc, "memory_method": mem_method, "torch": torch.__version__}
    return {"config": c.model_dump(mode="json"), "meta": meta, "rows": rows, "summary": summary}
