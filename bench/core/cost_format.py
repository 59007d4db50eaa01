"""What one cost measurement is (``seqbench cost``, a ``kind: cost`` claim's replicate), typed once: the
measurement (``bench/training/cost.py``) builds it, the outputs (``reports/cost.py``), the command and the cost
claims (``sweeps/claims/cost.py``) read it. ``cost.json`` and a claim's cached replicates are its JSON
(:meth:`CostMeasurement.to_json`, read back by :meth:`CostMeasurement.from_json`). Standard library only, so
a cached replicate is read without torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

PointStatus = Literal["ok", "oom", "timeout", "error", "skipped"]
_MEASURED = ("time_ms", "time_ms_min", "peak_mem_mib", "tokens_per_s")  # an ok point's numbers, in file order


@dataclass(frozen=True)
class CostPoint:
    """One (model, length) point: an ok point's step time and memory, or why there is none (``detail``)."""

    model: str
    length: int
    status: PointStatus
    time_ms: float | None = None  # median step time over the timed repeats
    time_ms_min: float | None = None  # fastest timed step
    peak_mem_mib: float | None = None  # memory one step needs (None: not measured, e.g. isolate=false on CPU)
    tokens_per_s: float | None = None  # batch_size * length / median step time
    detail: str | None = None  # why not ok: "after oom at T=512", the exception, the OS kill

    def to_json(self) -> dict[str, Any]:
        """As cost.json holds it: an ok point its numbers (peak_mem_mib null when not measured), any other
        its ``detail``."""
        keys = _MEASURED if self.status == "ok" else ("detail",)
        return {
            "model": self.model,
            "length": self.length,
            "status": self.status,
            **{k: getattr(self, k) for k in keys},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CostPoint:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass(frozen=True)
class CostSummary:
    """One model across its lengths: its complexity class and the fitted exponents in T (log-log slopes)."""

    complexity: str  # the declared class in words, "O(T·d²)" ("?" when undeclared)
    expected_time_exponent: int | None  # the declared class's exponent in T
    time_exponent: float | None  # over every measured length (None: fewer than two)
    time_exponent_upper: float | None  # over the upper half of the lengths (closer to the asymptote)
    memory_exponent: float | None
    memory_exponent_upper: float | None
    stopped: str | None  # why the longer lengths were skipped, if they were


@dataclass(frozen=True)
class CostMeta:
    """How the points were measured: the sizes, the device and what "memory" means there."""

    d_model: int
    n_layers: int
    batch_size: int
    repeats: int  # timed steps per point (the median is reported)
    warmup: int  # untimed steps before timing
    device: str  # "cpu" or "cuda" (auto resolved)
    threads: int  # torch intra-op threads
    memory_method: str  # "cuda max_memory_allocated", "peak RSS rise in a forked child per point", ...
    torch: str  # torch.__version__


@dataclass(frozen=True)
class CostMeasurement:
    """Every point of one measurement, shortest length first per model, with each model's fit."""

    config: dict[str, Any]  # the CostConfig measured, as JSON (``model_dump(mode="json")``)
    meta: CostMeta
    rows: list[CostPoint]
    summary: dict[str, CostSummary]  # model -> its fit, in the measured order

    def to_json(self) -> dict[str, Any]:
        """cost.json: ``{config, meta, rows, summary}``."""
        return {
            "config": self.config,
            "meta": asdict(self.meta),
            "rows": [r.to_json() for r in self.rows],
            "summary": {m: asdict(s) for m, s in self.summary.items()},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CostMeasurement:
        return cls(
            config=dict(d["config"]),
            meta=CostMeta(**d["meta"]),
            rows=[CostPoint.from_json(r) for r in d["rows"]],
            summary={m: CostSummary(**s) for m, s in d["summary"].items()},
        )
