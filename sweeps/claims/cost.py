"""A ``kind: cost`` claim: replicates of the cost measurement (``seqbench cost``), each cached as JSON, look
by look as a sweep claim's seeds. Each replicate gives every model one ``CostRow`` (its fitted exponents, the
FLOP count's at the same lengths and the fixed-cost share), and the rules judge those rows, the replicate
standing where a sweep claim's seed does."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from seqbench.bench.config import build_config
from seqbench.bench.core.artifacts import FINAL, PARAM
from seqbench.bench.core.contract import OutputKind, TaskSpec
from seqbench.bench.core.cost_format import CostMeasurement, CostPoint
from seqbench.bench.core.profiles import Profile
from seqbench.bench.training.cost_config import VOCAB, CostConfig, fit_exponent, model_config
from seqbench.bench.training.flops import forward_macs
from seqbench.sweeps.claims.looks import Look, judge_look
from seqbench.sweeps.claims.registry import registered
from seqbench.sweeps.claims.results import ClaimResult
from seqbench.sweeps.claims.schema import MIN_COST_LENGTHS, Claim, cost_config, swept_values


@dataclass(frozen=True)
class CostRow:
    """One model in one replicate of the cost measurement: the quantities a cost claim's rules judge."""

    model: str
    replicate: int
    metrics: dict[str, float]  # cost_metrics' keys: time_exponent, flops_exponent, fixed_share ...

    def judged(self) -> dict[str, str | float]:
        """As the judge reads a run (``sweeps.table`` columns): the replicate is the seed, the model the
        configuration, the metrics final values."""
        return {
            "seed": self.replicate,
            "run_id": f"cost-{self.replicate}-{self.model}",
            "status": "completed",
            PARAM + "model.name": self.model,
            **{FINAL + k: v for k, v in self.metrics.items()},
        }


def cost_table(rows: list[CostRow]) -> pd.DataFrame:
    table = pd.DataFrame([r.judged() for r in rows])
    return table.astype({c: float for c in table.columns if c.startswith(FINAL)})


def run_cost_claim(claim: Claim, profile: Profile, out_dir: Path) -> ClaimResult:
    """The claim's replicates (each cached as JSON), judged at the look's spent alpha after each look,
    stopping at the first that decides; the cache names carry the registration's digest, so a changed claim
    measures afresh (``registry.py``)."""
    cfg = cost_config(claim.resolved(profile))
    looks = claim.looks_for(profile) or [claim.replicates_for(profile)]
    swept, digest = swept_values(claim, profile), registered(claim, profile)
    folder = out_dir / "verify" / claim.name
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[CostRow] = []
    measured: list[CostMeasurement] = []
    for k, n in enumerate(looks):
        for rep in range(len(measured), n):
            measured.append(_replicate(folder / f"{profile}-{digest}-cost-{rep}.json", cfg))
            rows += [CostRow(model, rep, cost_metrics(model, measured[-1].rows, cfg)) for model in measured[-1].summary]
        table = cost_table(rows)
        look = judge_look(
            claim,
            table,
            swept,
            profile,
            Look(looks, k, f"n={n} replicates"),
            lambda: f"measuring up to {looks[k + 1]}",  # noqa: B023  (called within this iteration)
        )
        if look.done or k == len(looks) - 1:
            break
    return look.result(claim, profile, study=str(folder), table=table, measurement=measured[0])


def _replicate(path: Path, cfg: CostConfig) -> CostMeasurement:
    """One replicate of the measurement: from its cache, else measured and cached."""
    if path.is_file():
        return CostMeasurement.from_json(json.loads(path.read_text()))
    # the measurement's floor (torch), here so that `verify --help` imports none of it
    from seqbench.bench.training.cost import measure_cost

    result = measure_cost(cfg)
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n")
    return result


def cost_metrics(model: str, rows: list[CostPoint], cfg: CostConfig) -> dict[str, float]:
    """One replicate of one model: ``time_exponent`` (all lengths), ``time_exponent_upper`` (upper
    half), ``time_exponent_long`` (the 4 longest), the same fits of the FLOP count
    (``flops_exponent``, ``flops_exponent_long``: what ``bench.training.flops.forward_macs`` predicts at
    the same lengths and d_model), ``fixed_share`` (median step time at the shortest length / at the
    longest: near 0 when the fixed per-step cost is negligible) and ``memory_exponent``. A fit over
    fewer than 4 measured lengths is NaN (not judged), not a slope through 2 points."""
    ok = sorted((r for r in rows if r.model == model and r.status == "ok" and r.time_ms), key=lambda r: r.length)
    ts = [r.length for r in ok]
    nan = float("nan")

    def fit(lengths: list[int], values: list[float]) -> float:
        e = fit_exponent(lengths, values) if len(lengths) >= MIN_COST_LENGTHS else None
        return nan if e is None else e

    times = [r.time_ms for r in ok if r.time_ms]  # every ok point here has one
    macs = flops_per_length(model, ts, cfg)
    upper = len(ts) // 2
    k = MIN_COST_LENGTHS
    mem = [(r.length, r.peak_mem_mib) for r in ok if r.peak_mem_mib]
    return {
        "time_exponent": fit(ts, times),
        "time_exponent_upper": fit(ts[upper:], times[upper:]),
        "time_exponent_long": fit(ts[-k:], times[-k:]),
        "flops_exponent": fit(ts, macs) if macs else nan,
        "flops_exponent_long": fit(ts[-k:], macs[-k:]) if macs else nan,
        "fixed_share": times[0] / times[-1] if len(times) >= 2 else nan,
        "memory_exponent": fit([m[0] for m in mem], [m[1] for m in mem]),
    }


def flops_per_length(model: str, lengths: list[int], cfg: CostConfig) -> list[float] | None:
    """Forward multiply-accumulates of ``model`` at each length, at the cost measurement's width, depth
    and token input (``bench.training.cost.VOCAB``); None where the model has no FLOP counter."""
    spec = TaskSpec(OutputKind.TOKENS, n_classes=VOCAB, causal=True, vocab_size=VOCAB)
    out = []
    for T in lengths:
        m = model_config(model, cfg.d_model, cfg.n_layers, T)  # as the cost measurement builds it
        # the adding task only supplies seq_len() = T here; spec says tokens, as the timed step has
        macs = forward_macs(build_config({"task": {"name": "adding", "length": T}, "model": m}), spec)
        if macs is None:
            return None
        out.append(float(macs))
    return out
