"""Run tracking: the harness's own files for every run, and W&B on top.

Every run writes ``<out_dir>/runs/<run_id>/`` (formats, reader and writer: ``bench/core/artifacts.py``):
- ``config.yaml``   the resolved RunConfig (written before training starts)
- ``metrics.csv``   one row per validation (step, wall time, lr, train/loss, val/*)
- ``results.json``  final and best metrics, baseline, status, timing, provenance
- ``diagnostics.json`` with ``diagnostics.gradients=true`` (written by ``bench/training/diagnostics.py``)
These are the source of truth for reports (W&B offline runs have no readable summary).
This is the only module that imports wandb, and a W&B failure never stops training.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import Results, atomic_write
from seqbench.bench.config import RunConfig
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, versions


def default_run_id(cfg: RunConfig) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{cfg.task.name}-{cfg.model.name}-s{cfg.seed}-{cfg.config_hash()[:6]}"


_PROBE_BYTES = 64 * 1024  # a full disk (or a file-size limit) refuses this; an empty probe file would pass


def check_writable(out_dir: Path) -> None:
    """Fail before training if ``out_dir`` cannot take a run's files (unwritable, or a full disk)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".write-test-") as f:
            f.write(b"\0" * _PROBE_BYTES)
            f.flush()
    except OSError as e:
        raise UserError(f"out_dir: cannot write to {out_dir} ({e.strerror})") from None


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
            from seqbench.bench.config import load_config

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
        check_writable(Path(cfg.out_dir))
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
        self.argv = list(sys.argv if argv is None else argv)
        self.rows: list[artifacts.MetricsRow] = []
        self.started = time.time()
        self.checkpoint = self.dir / artifacts.CHECKPOINT
        self.resumed = resumed is not None
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
        import torch

        step = torch.load(self.checkpoint, map_location="cpu", weights_only=True)["global_step"]
        self.rows = [r for r in artifacts.read_metrics(self.dir) if r["step"] <= step]
        return self.checkpoint

    def log_eval(self, row: artifacts.MetricsRow) -> None:
        self.rows.append(row)
        artifacts.write_metrics(self.dir, self.rows)

    def provenance(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "config_hash": self.cfg.config_hash(), "seed": self.cfg.seed,
                "git_sha": git_sha(), "versions": versions(), "argv": self.argv,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started))}

    def finish(self, results: Results) -> Path:
        return artifacts.write_results(self.dir, results)

    # -- W&B ----------------------------------------------------------------------------
    def wandb_logger(self) -> Any | None:
        mode = self.cfg.tracking.wandb
        if mode == "off":
            return None
        try:
            return _make_wandb_logger(self.cfg, self.run_id, mode)
        except Exception as e:  # noqa: BLE001 - tracking must never stop training
            _warn_once(f"W&B disabled for this run: {type(e).__name__}: {e}")
            return None


_warned: set[str] = set()


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        print(f"warning: {msg}", file=sys.stderr)


def _make_wandb_logger(cfg: RunConfig, run_id: str, mode: str) -> Any:
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("WANDB_CONSOLE", "off")
    from pytorch_lightning.loggers import WandbLogger

    class SafeWandbLogger(WandbLogger):
        """WandbLogger whose failures warn once and switch it off instead of raising."""

        _broken = False

        def _safe(self, fn, *args, **kwargs):
            if self._broken:
                return None
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                self._broken = True
                _warn_once(f"W&B logging failed, continuing without it: {type(e).__name__}: {e}")
                return None

        def log_metrics(self, metrics, step=None):
            self._safe(super().log_metrics, metrics, step)

        def log_hyperparams(self, params, *args, **kwargs):
            self._safe(super().log_hyperparams, params, *args, **kwargs)

        def finalize(self, status):
            self._safe(super().finalize, status)

        def after_save_checkpoint(self, checkpoint_callback):
            self._safe(super().after_save_checkpoint, checkpoint_callback)

    save_dir = Path(cfg.out_dir)
    (save_dir / "wandb").mkdir(parents=True, exist_ok=True)
    t = cfg.tracking
    logger = SafeWandbLogger(name=run_id, id=run_id, project=t.project, group=t.group, tags=list(t.tags) or None,
                             save_dir=str(save_dir), offline=(mode == "offline"),
                             config={**cfg.to_dict(), "config_hash": cfg.config_hash()}, log_model=False)
    logger._wandb_init.pop("anonymous", None)  # Lightning always passes it; W&B warns it has no effect
    return logger


def wandb_log_summary(logger: Any, summary: dict[str, Any], text: dict[str, str] | None = None) -> None:
    """Final metrics into the W&B run summary (no-op when W&B is off or broken)."""
    if logger is None or getattr(logger, "_broken", False):
        return
    try:
        run = logger.experiment
        for k, v in summary.items():
            run.summary[k] = v
        for k, v in (text or {}).items():
            run.summary[k] = v
    except Exception as e:  # noqa: BLE001
        _warn_once(f"W&B summary failed: {type(e).__name__}: {e}")


def wandb_finish(logger: Any) -> None:
    if logger is None:
        return
    try:
        import wandb

        if wandb.run is not None:
            wandb.finish()
    except Exception as e:  # noqa: BLE001
        _warn_once(f"W&B finish failed: {type(e).__name__}: {e}")


warnings.filterwarnings("ignore", message=".*wandb.*", category=UserWarning)
