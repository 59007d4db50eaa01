"""Run tracking: the harness's own files for every run, and W&B on top.

Every run writes ``<out_dir>/runs/<run_id>/`` (formats, reader and writer: ``bench/core/artifacts.py``):
- ``config.yaml``   the resolved RunConfig (written before training starts)
- ``metrics.csv``   one row per validation (step, wall time, lr, train/loss, val/*)
- ``results.json``  final and best metrics, baseline, status, timing, provenance
- ``diagnostics.json`` with ``diagnostics.gradients=true`` (written by ``bench/training/diagnostics.py``)
These are the source of truth for reports (W&B offline runs have no readable summary).
This is the only module that imports wandb, and a W&B failure never stops training.

W&B follows its own conventions where seqbench's fields were left unset (``wandb_target``):
``WANDB_MODE`` (``disabled``: W&B is not even imported, nothing is written), ``WANDB_PROJECT``,
``WANDB_ENTITY`` and ``WANDB_DIR`` (else ``<out_dir>/wandb``); a ``tracking.*`` field the user set
wins. W&B's history is metrics.csv row for row, plotted against ``trainer/global_step`` (the row's
step); the summary holds the final and best metrics, the memoryless baseline, the parameter count
and the throughput of results.json.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import torch

from seqbench.bench.config import RunConfig, load_config
from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import Results, atomic_write
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, versions
from seqbench.bench.core.text import redact


def default_run_id(cfg: RunConfig) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{cfg.task.name}-{cfg.model.label()}-s{cfg.seed}-{cfg.config_hash()[:6]}"


def find_resumable(cfg: RunConfig) -> Path | None:
    """The run folder ``resume=true`` continues: ``run_id`` if given, else the newest run with
    the same config hash (an unfinished one continues; a finished one is returned as is)."""
    runs = artifacts.runs_path(cfg.out_dir)
    if cfg.run_id is not None:
        return runs / cfg.run_id if (runs / cfg.run_id / artifacts.CONFIG).exists() else None
    want = cfg.config_hash()
    candidates = []
    for d in runs.glob(f"*/{artifacts.CONFIG}"):
        run_dir = d.parent
        try:
            if load_config(d).config_hash() != want:
                continue
        except UserError:
            continue
        candidates.append(run_dir)
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


class RunTracker:
    """Owns one run's folder (a new one, or the one ``resume=true`` continues)."""

    def __init__(self, cfg: RunConfig, argv: list[str] | None = None):
        self.cfg = cfg
        artifacts.check_writable(Path(cfg.out_dir))
        runs = artifacts.runs_path(cfg.out_dir)
        resumed = find_resumable(cfg) if cfg.resume else None
        if resumed is not None:
            run_id = resumed.name
        else:
            run_id = cfg.run_id or default_run_id(cfg)
            if cfg.run_id is None:  # two runs started in the same second with the same config
                base, n = run_id, 1
                while (runs / run_id).exists():
                    n += 1
                    run_id = f"{base}-{n}"
        self.run_id = run_id
        self.dir = runs / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.argv = [redact(a) for a in (sys.argv if argv is None else argv)]  # a --storage URL's password hidden
        self.rows: list[artifacts.MetricsRow] = []
        self.started = time.time()
        self.checkpoint = self.dir / artifacts.CHECKPOINT
        self.resumed = resumed is not None
        self.wandb: WandbRun | None = None  # started by ``start_wandb`` on the process that writes the files
        if not self.resumed:
            atomic_write(self.dir / artifacts.CONFIG, cfg.to_yaml())

    def discard_if_empty(self) -> None:
        """Remove a new run folder that holds nothing but its config (the run never started)."""
        if not self.resumed and {p.name for p in self.dir.iterdir()} <= {artifacts.CONFIG}:
            shutil.rmtree(self.dir, ignore_errors=True)

    def resume_from(self) -> Path | None:
        """The checkpoint to continue from, after dropping metrics rows logged past it."""
        if not (self.resumed and self.checkpoint.exists()):
            return None
        step = torch.load(self.checkpoint, map_location="cpu", weights_only=True)["global_step"]
        self.rows = [r for r in artifacts.read_metrics(self.dir) if r["step"] <= step]
        return self.checkpoint

    def log_eval(self, row: artifacts.MetricsRow) -> None:
        self.rows.append(row)
        artifacts.write_metrics(self.dir, self.rows)
        if self.wandb is not None:
            self.wandb.log_row(row)

    def provenance(self) -> Results:
        return {
            "run_id": self.run_id,
            "config_hash": self.cfg.config_hash(),
            "seed": self.cfg.seed,
            "git_sha": git_sha(),
            "versions": versions(),
            "argv": self.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started)),
        }

    def finish(self, results: Results) -> Path:
        return artifacts.write_results(self.dir, results)

    # -- W&B ----------------------------------------------------------------------------
    def start_wandb(self, config_extra: Mapping[str, Any] | None = None) -> WandbRun | None:
        """Open this run's W&B run (None when W&B is off or fails to start: training goes on). Online,
        a server not reached within ``tracking.init_timeout`` is given up for the rest of the process
        (a sweep worker does not wait again for every trial): this run and later ones log offline."""
        target = wandb_target(self.cfg)
        if target.mode == "off":
            return None
        if target.mode == "online" and _unreachable:
            target = replace(target, mode="offline")
        try:
            self.wandb = WandbRun(self.cfg, self.run_id, target, resumed=self.resumed, config_extra=config_extra)
        except Exception as e:  # noqa: BLE001 - tracking must never stop training
            if target.mode != "online":
                _warn_once(f"W&B disabled for this run: {type(e).__name__}: {e}")
                self.wandb = None
                return None
            _unreachable.append(" ".join(str(e).split())[:200])
            _warn_once(
                f"W&B could not start online ({type(e).__name__}: {_unreachable[0]}); this process logs "
                "offline from now on (upload later with `wandb sync`)"
            )
            return self.start_wandb(config_extra)
        return self.wandb


_warned: set[str] = set()
_unreachable: list[str] = []  # why W&B's server was given up in this process (empty: not given up)


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        print(f"warning: {msg}", file=sys.stderr)


# -- where and how W&B writes -------------------------------------------------------------------

Mode = Literal["off", "offline", "online"]  # tracking.wandb
_MODES: dict[str, Mode] = {
    "disabled": "off",
    "offline": "offline",
    "dryrun": "offline",
    "online": "online",
    "run": "online",
}
STEP = "trainer/global_step"  # W&B's x axis: the trainer step of metrics.csv (Lightning's own name for it)


@dataclass(frozen=True)
class WandbTarget:
    mode: Mode
    project: str
    entity: str | None  # None: W&B's default entity (the one `wandb login` belongs to)
    root: Path  # W&B writes <root>/wandb/offline-run-* (its own layout under WANDB_DIR)
    group: str | None

    @property
    def wandb_mode(self) -> Literal["disabled", "offline", "online"]:
        """The mode as ``wandb.init`` spells it (a run with W&B off never starts one)."""
        return "disabled" if self.mode == "off" else self.mode


def wandb_target(cfg: RunConfig, env: Mapping[str, str] | None = None) -> WandbTarget:
    """Mode, project, entity, directory and group of a run's W&B run: a ``tracking.*`` field the
    user set wins, then W&B's own variables (``WANDB_MODE``, ``WANDB_PROJECT``, ``WANDB_ENTITY``,
    ``WANDB_DIR``), then seqbench's defaults (offline, project ``seqbench``, ``<out_dir>/wandb``)."""
    env = os.environ if env is None else env
    t, typed = cfg.tracking, cfg.typed  # what the composition recorded, not pydantic's model_fields_set
    mode = t.wandb
    wanted = env.get("WANDB_MODE", "").strip().lower()
    if "tracking.wandb" not in typed and wanted:
        if wanted in _MODES:
            mode = _MODES[wanted]
        else:
            _warn_once(f"WANDB_MODE={wanted!r} is not one of {', '.join(_MODES)}; using tracking.wandb={t.wandb}")
    project = t.project if "tracking.project" in typed else (env.get("WANDB_PROJECT", "").strip() or t.project)
    root = Path(env["WANDB_DIR"]) if env.get("WANDB_DIR", "").strip() else Path(cfg.out_dir)
    return WandbTarget(mode, project, env.get("WANDB_ENTITY", "").strip() or None, root, t.group)


def _skip_unused_launch_import(wandb: ModuleType) -> None:
    """``wandb.init`` imports W&B Launch (``wandb.sdk.launch``: the public API's pydantic models,
    half of a process's first offline init, measured with cProfile) only to apply inputs staged by
    ``wandb.sdk.launch.manage_config_file``/``manage_wandb_config``, which a process can only have
    staged after importing that module; until it is imported the step has nothing to apply and is
    skipped. (A W&B version without the hook is left as it is.)"""
    hook = getattr(getattr(wandb, "Run", None), "_detect_and_apply_job_inputs", None)
    if hook is None or getattr(hook, "_seqbench", False):
        return

    def detect_and_apply_job_inputs(run: Any) -> None:
        if "wandb.sdk.launch" in sys.modules:
            hook(run)

    detect_and_apply_job_inputs._seqbench = True  # type: ignore[attr-defined]
    wandb.Run._detect_and_apply_job_inputs = detect_and_apply_job_inputs


class WandbRun:
    """One W&B run fed by the harness: each metrics.csv row (``log_row``), then the results summary.

    Created only on the process that writes the run's files. Each call is guarded: the first
    failure warns once and switches W&B off for the rest of the run.
    """

    def __init__(
        self,
        cfg: RunConfig,
        run_id: str,
        target: WandbTarget,
        *,
        resumed: bool = False,
        config_extra: Mapping[str, Any] | None = None,
    ):
        os.environ.setdefault("WANDB_SILENT", "true")
        # W&B records this process's sys.argv in the run's metadata (its settings read it when sent); a sweep
        # worker runs in the command's process (or a fork of it), whose command line may hold a storage password
        sys.argv[:] = [redact(a) for a in sys.argv]
        import wandb  # here: a run with W&B off or WANDB_MODE=disabled never imports it (0.35 s)

        _skip_unused_launch_import(wandb)
        (target.root / "wandb").mkdir(parents=True, exist_ok=True)
        self.broken = False
        self.run = wandb.init(
            id=run_id,
            name=run_id,
            project=target.project,
            entity=target.entity,
            group=target.group,
            tags=list(cfg.tracking.tags) or None,
            dir=str(target.root),
            mode=target.wandb_mode,
            resume="allow" if resumed else None,
            reinit="create_new",
            config={**cfg.to_dict(), "config_hash": cfg.config_hash(), **(config_extra or {})},
            # the harness records code, versions and console itself (results.json, the terminal)
            settings=wandb.Settings(
                console="off", save_code=False, x_save_requirements=False, init_timeout=cfg.tracking.init_timeout
            ),
        )
        self.run.define_metric(STEP)
        self.run.define_metric("*", step_metric=STEP)

    def _guard(self, what: str, fn, *args, **kwargs) -> None:
        if self.broken:
            return
        try:
            fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - tracking must never stop training
            self.broken = True
            _warn_once(f"W&B {what} failed, continuing without it: {type(e).__name__}: {e}")

    def log_row(self, row: artifacts.MetricsRow) -> None:
        """One metrics.csv row at its trainer step (NaN cells, e.g. no train loss yet, left out)."""
        data = {k: v for k, v in row.items() if k != "step" and not (isinstance(v, float) and math.isnan(v))}
        self._guard("logging", self.run.log, {STEP: int(row["step"]), **data})

    def summary(self, results: Mapping[str, Any]) -> None:
        """What results.json says, as W&B summary keys: final and best metrics, baseline, status,
        parameter count, throughput and where it trained."""
        keys = (
            "status",
            "solved",
            "steps",
            "n_params",
            "samples_per_s",
            "tokens_per_s",
            "model_flops_per_s",
            "mfu",
            "steady_tokens_per_s",
            "steady_mfu",
            "train_time_s",
            "wall_time_s",
            "device",
            "device_name",
            "precision",
            "world_size",
        )
        out: dict[str, Any] = {k: results[k] for k in keys if results.get(k) is not None}
        out.update(results.get("final") or {})
        out.update({f"best/{k}": v for k, v in (results.get("best") or {}).items()})
        out.update({f"baseline/{k}": v for k, v in (results.get("baseline") or {}).items()})
        out.update({f"extras/{k}": str(v) for k, v in (results.get("extras") or {}).items()})
        self._guard("summary", self.run.summary.update, out)

    def finish(self, exit_code: int = 0) -> None:
        """Close the run, even after a failure switched logging off (a sweep worker starts the next
        run in this process)."""
        self.broken = False
        self._guard("finish", self.run.finish, exit_code=exit_code)
        self.broken = True
