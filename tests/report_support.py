"""Studies for report tests: built by hand with the sweep contract's attrs, runs with known values.

``demo_study`` is a small long-dependency factorial (model.name x task.delay x optim.warmup_steps,
two seeds) whose run folders hold hand-written results.json/metrics.csv with values chosen by
``demo_acc``, so tests can check that figures show exactly those numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from seqbench.bench.core.diagnostics_format import DiagnosticsFile

optuna.logging.set_verbosity(optuna.logging.WARNING)


def journal_storage(path: Path) -> Any:
    """The storage a sweep uses by default (until sweeps.storage lands: opened here by hand)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(path)))


def write_run(
    out_dir: Path,
    run_id: str,
    *,
    final: dict[str, float],
    baseline: dict[str, float],
    status: str = "completed",
    curve: Sequence[dict[str, float]] = (),
    seed: int = 0,
    model: str = "lstm",
    wall_s: float = 10.0,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A run folder as bench.training.tracking writes it (results.json + metrics.csv) with the given values."""
    d = out_dir / "runs" / run_id
    d.mkdir(parents=True, exist_ok=True)
    best = {k: v for k, v in final.items() if k.startswith("val/")}
    res = {
        "run_id": run_id,
        "seed": seed,
        "status": status,
        "reason": "loss is nan" if status == "diverged" else None,
        "task": "copy",
        "model": model,
        "final": final,
        "best": best,
        "baseline": baseline,
        "solved": final.get("val/acc", 0) >= 0.99,
        "primary_metric": "val/acc",
        "primary_goal": "max",
        "steps": 200,
        "wall_time_s": wall_s,
        "train_time_s": wall_s * 0.9,
        "samples_per_s": 1000.0,
        "n_params": 1234,
        **(extra or {}),
    }
    (d / "results.json").write_text(json.dumps(res))
    if curve:
        keys = list(dict.fromkeys(k for row in curve for k in row))
        lines = [",".join(keys)] + [",".join(str(r.get(k, "")) for k in keys) for r in curve]
        (d / "metrics.csv").write_text("\n".join(lines) + "\n")
    return d


def add_trial(
    study: optuna.Study,
    params: dict[str, Any],
    dists: dict[str, Any],
    *,
    state: TrialState,
    values: Sequence[float] | None = None,
    attrs: dict[str, Any] | None = None,
) -> None:
    study.add_trial(
        optuna.trial.create_trial(
            state=state,
            params=params,
            distributions=dists,
            values=list(values) if values is not None else None,
            user_attrs=attrs or {},
        )
    )


def new_study(
    storage: Any,
    name: str,
    out_dir: Path,
    parameters: dict[str, Any],
    question: str,
    metrics: Sequence[tuple[str, str]] = (("val/acc", "maximize"),),
) -> optuna.Study:
    study = optuna.create_study(study_name=name, storage=storage, directions=[g for _, g in metrics])
    spec = {
        "question": question,
        "method": "grid",
        "metric": {"name": metrics[0][0], "goal": metrics[0][1]},
        "parameters": parameters,
        "seeds": [0, 1],
        "base": {"task": {"name": "copy"}},
    }
    for k, v in {
        "spec": spec,
        "spec_path": f"sweeps/{name}.yaml",
        "question": question,
        "metrics": [{"name": n, "goal": g} for n, g in metrics],
        "out_dir": str(out_dir),
        "seqbench_version": "0.1.0",
        "git_sha": "abc1234",
    }.items():
        study.set_user_attr(k, v)
    return study


# -- the demo factorial -------------------------------------------------------------------------
MODELS = ("rnn", "lstm")
DELAYS = (5, 10, 20)
WARMUPS = (0, 100)
SEEDS = (0, 1)
BASELINE_ACC = 0.25


def demo_acc(model: str, delay: int, warmup: int, seed: int) -> float:
    """Known final val/acc: the LSTM bridges every delay, the RNN falls to the baseline as it grows."""
    if model == "lstm":
        base = 0.97 - 0.004 * delay
    else:
        base = max(BASELINE_ACC, 0.95 - 0.035 * delay)
    return round(base + 0.01 * (warmup > 0) + 0.01 * seed, 4)


def is_diverged(model: str, delay: int, warmup: int, seed: int) -> bool:
    return model == "rnn" and delay == 20 and warmup == 0 and seed == 1


def demo_diagnostics(model: str, delay: int) -> DiagnosticsFile:
    """Two records (steps 0 and 200) in the format runs write: through-time decay 0.6 per step for
    the rnn, 0.97 otherwise (0.9 and 0.99 at the last record), one recurrent matrix unless transformer."""
    from seqbench.bench.core.diagnostics_format import DiagnosticsFile, Record, ThroughTime

    recs = []
    for step, rnn_decay, other in ((0, 0.6, 0.97), (200, 0.9, 0.99)):
        decay = rnn_decay if model == "rnn" else other
        dist = list(range(delay + 3))
        tt = ThroughTime(
            distance=dist,
            grad_norm=[decay**k for k in dist],
            count=[8] * len(dist),
            by_position=[decay**k for k in reversed(dist)],
        )
        whh = {} if model == "transformer" else {"backbone.rnn.weight_hh_l0": 1.0 + step / 1000}
        recs.append(
            Record(
                step=step,
                loss=1.4 - step / 1000,
                global_grad_norm=2.0 - step / 1000,
                layer_grad_norm={"encoder.embed": 0.5, "backbone.l0": 1.5 + 0.1 * (model == "lstm"), "head": 0.8},
                w_hh_spectral_norm=whh,
                through_time=tt,
            )
        )
    return DiagnosticsFile(definitions={"through_time": "see bench/training/diagnostics.py"}, records=recs)


def demo_study(
    storage: Any,
    out_dir: Path,
    name: str = "ld_demo",
    acc: Callable[[str, int, int, int], float] = demo_acc,
    extra_states: bool = True,
    diagnostics: bool = True,
) -> optuna.Study:
    """12 trials of 2 seeds (11 COMPLETE, 1 FAIL with a diverged seed) plus, with ``extra_states``,
    one FAIL without runs, one PRUNED, one RUNNING and one WAITING trial."""
    parameters = {
        "model.name": {"values": list(MODELS)},
        "task.delay": {"values": list(DELAYS)},
        "optim.warmup_steps": {"values": list(WARMUPS)},
    }
    study = new_study(
        storage, name, out_dir, parameters, "How long a delay can each architecture bridge on the copy task?"
    )
    dists = {
        "model.name": CategoricalDistribution(list(MODELS)),
        "task.delay": IntDistribution(5, 20),
        "optim.warmup_steps": IntDistribution(0, 100),
    }
    n = 0
    for m in MODELS:
        for d in DELAYS:
            for w in WARMUPS:
                runs = [_demo_run(out_dir, f"t{n}-{m}-d{d}-w{w}-s{s}", m, d, w, s, acc, diagnostics) for s in SEEDS]
                attrs = _demo_trial_attrs(n, d, [r for r, _ in runs], [v for _, v in runs])
                add_trial(
                    study,
                    {"model.name": m, "task.delay": d, "optim.warmup_steps": w},
                    dists,
                    state=TrialState.FAIL if attrs["n_diverged"] else TrialState.COMPLETE,
                    values=None if attrs["n_diverged"] else [attrs["mean"]],
                    attrs=attrs,
                )
                n += 1
    if extra_states:
        _add_extra_states(study, out_dir, dists)
    return study


def _demo_run(
    out_dir: Path,
    run_id: str,
    m: str,
    d: int,
    w: int,
    s: int,
    acc: Callable[[str, int, int, int], float],
    diagnostics: bool,
) -> tuple[str, float | None]:
    """One seed's run folder (results, curve and, at warmup 0 seed 0, diagnostics); its value (None: diverged)."""
    div = is_diverged(m, d, w, s)
    a = acc(m, d, w, s)
    final = {
        "val/acc": a,
        "val/loss": round(-math.log(max(a, 1e-3)), 4),
        "test/acc": a,
        "test@40/acc": a * 0.9,
        "test@80/acc": a * (0.8 if m == "lstm" else 0.4),
    }
    curve = [
        {
            "step": st,
            "wall_s": st / 10,
            "train/loss": round(2.0 * (1 - a * st / 200) + 0.05, 4),
            "val/loss": round(2.0 * (1 - a * st / 200) + 0.1, 4),
            "val/acc": round(a * st / 200, 4),
        }
        for st in (50, 100, 150, 200)
    ]
    rd = write_run(
        out_dir,
        run_id,
        final=final,
        seed=s,
        model=m,
        wall_s=5.0 + d,
        curve=curve,
        status="diverged" if div else "completed",
        baseline={"val/acc": BASELINE_ACC, "val/loss": 1.3863},
    )
    if diagnostics and s == 0 and w == 0:  # the real format, with known values
        (rd / "diagnostics.json").write_text(demo_diagnostics(m, d).to_text())
    return run_id, None if div else a


def _demo_trial_attrs(n: int, d: int, run_ids: list[str], per_seed: list[float | None]) -> dict[str, Any]:
    """The trial attributes the sweeps runner records: seed-mean and std over the finite seeds."""
    finite = [v for v in per_seed if v is not None]
    mean = sum(finite) / len(finite)
    std = (sum((v - mean) ** 2 for v in finite) / (len(finite) - 1)) ** 0.5 if len(finite) > 1 else 0.0
    n_div = sum(v is None for v in per_seed)
    attrs: dict[str, Any] = {
        "run_ids": run_ids,
        "seeds": list(SEEDS),
        "per_seed": per_seed,
        "mean": mean,
        "std": std,
        "n_diverged": n_div,
        "config_hash": f"h{n:04d}",
        "wall_s": 2 * (5.0 + d),
    }
    if n_div:  # as the sweeps runner does: a diverged seed fails the trial
        attrs["fail_reason"] = f"{n_div}/{len(SEEDS)} seeds diverged"
    return attrs


def _add_extra_states(study: optuna.Study, out_dir: Path, dists: dict[str, Any]) -> None:
    """One FAIL trial without runs, one PRUNED with a run, one RUNNING with an empty run folder, one WAITING."""
    p = {"model.name": "lstm", "task.delay": 20, "optim.warmup_steps": 0}
    add_trial(
        study,
        p,
        dists,
        state=TrialState.FAIL,
        attrs={"run_ids": [], "seeds": [], "fail_reason": "RuntimeError: out of memory", "wall_s": 1.0},
    )
    write_run(
        out_dir,
        "pruned-s0",
        final={"val/acc": 0.3},
        baseline={"val/acc": BASELINE_ACC},
        model="rnn",
        curve=[{"step": 50, "val/acc": 0.3}],
        status="pruned",
    )
    add_trial(
        study,
        {**p, "model.name": "rnn"},
        dists,
        state=TrialState.PRUNED,
        attrs={
            "run_ids": ["pruned-s0"],
            "seeds": [0],
            "per_seed": [0.3],
            "wall_s": 3.0,
            "prune_reason": "pruned at step 50",
        },
    )
    (out_dir / "runs" / "running-s0").mkdir(parents=True)  # started, no results.json yet
    add_trial(study, p, dists, state=TrialState.RUNNING, attrs={"run_ids": ["running-s0"], "seeds": [0]})
    add_trial(study, p, dists, state=TrialState.WAITING)


def model_delay_table(
    values: dict[tuple[str, int], list[float]], metric: str = "val/acc", baseline: float | None = None
) -> Any:
    """A study table as ``sweeps.table`` builds it: one trial per (model.name, task.delay), one run per seed
    value (``objective:<metric>``), with the memoryless baseline where given."""
    import pandas as pd

    rows = []
    for trial, ((model, delay), vals) in enumerate(values.items()):
        for seed, v in enumerate(vals):
            row = {
                "trial": trial,
                "state": "COMPLETE",
                "seed": seed,
                "run_id": f"t{trial}-s{seed}",
                "status": "completed",
                "diverged": False,
                "param.model.name": model,
                "param.task.delay": delay,
                f"objective:{metric}": v,
            }
            if baseline is not None:
                row[f"baseline.{metric}"] = baseline
            rows.append(row)
    return pd.DataFrame(rows)
