"""``train_run(cfg)``: build the task, the model and the Trainer, train, evaluate, write results.

``run_in_process`` reads as its steps: ``build_trainer`` -> ``fit`` (-> status) ->
``test_at_lengths`` (at the training length and each ``eval.lengths``) -> ``assemble_results``
(``bench.training.run_results``).
Under several processes each rank runs it (``bench.training.distributed``); rank 0 writes the files.
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl
import torch

from seqbench.bench.config import RunConfig, load_config
from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import Results, RunResult, Status, read_results
from seqbench.bench.core.disk import disk_full, is_disk_full, tree_size
from seqbench.bench.core.errors import UserError
from seqbench.bench.training.callbacks import (
    AtomicCheckpoint,
    DeviceFacts,
    DivergenceStop,
    GracefulStop,
    ProgressPrinter,
    ResultsWriter,
    RunStopper,
    StopNow,
    TrainClock,
)
from seqbench.bench.training.diagnostics import GradientDiagnostics
from seqbench.bench.training.distributed import check_shared_run_id, launch, needs_launch
from seqbench.bench.training.module import CHECK_EVERY, SeqModule, build_task
from seqbench.bench.training.preflight import preflight
from seqbench.bench.training.run_results import Fitted, assemble_results, n_params
from seqbench.bench.training.tracking import RunTracker
from seqbench.tasks.base import Task


def quiet_lightning() -> None:
    """Keep Lightning's banners and data-loader advice out of the user's terminal."""
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    for msg in (
        ".*does not have many workers.*",
        ".*LeafSpec.*",
        ".*is an invalid version.*",
        ".*Checkpoint directory.*",
        ".*`isinstance.*treespec.*",
        ".*GPU available but not used.*",
        ".*The number of training batches.*",
        ".*on_validation_end.*",
        ".*sync_dist.*",
        ".*IterableDataset.*has `__len__` defined.*",
        ".*You defined a `validation_step` but have no `val_dataloader`.*",
    ):
        warnings.filterwarnings("ignore", message=msg)


# -- entry point ---------------------------------------------------------------------------------


def train_run(
    cfg: RunConfig,
    *,
    argv: Sequence[str] | None = None,
    callbacks: Sequence[pl.Callback] = (),
    progress: bool = True,
    tracker: RunTracker | None = None,
) -> RunResult:
    """Train and evaluate one configuration; returns the run with what it wrote to results.json.

    Without a ``tracker`` (``seqbench run``) the task and model are built first (``bench.training.preflight``):
    a configuration refused at build time refuses before its run folder exists. A caller that brings its own
    tracker (a sweep trial) checked its configurations before its study started."""
    check_shared_run_id(cfg)
    if tracker is None:
        preflight([("", cfg)])
        check_resumable(cfg)
        tracker = RunTracker(cfg, list(argv) if argv is not None else None)
    if tracker.resumed:
        done = read_results(tracker.dir)
        if done is not None and done.get("status") != Status.INTERRUPTED:
            if progress:
                print(
                    f"[{cfg.task.name}/{cfg.model.label()}] {tracker.run_id} already finished "
                    f"({done.get('status')}); nothing to resume"
                )
            return RunResult.of(tracker.dir, done)
    try:
        if needs_launch(cfg.train):  # seqbench starts the processes; rank 0 writes the run's files
            return RunResult.of(tracker.dir, launch(cfg, tracker, callbacks, progress, target=run_in_process))
        return RunResult.of(tracker.dir, run_in_process(cfg, tracker, callbacks, progress, strategy=cfg.train.strategy))
    except KeyboardInterrupt:
        if progress:
            print(
                f"[{cfg.task.name}/{cfg.model.label()}] {tracker.run_id} interrupted; continue it with:\n  "
                f"{resume_command(tracker)}",
                file=sys.stderr,
                flush=True,
            )
        raise
    except OSError as e:
        if not is_disk_full(e):
            raise
        raise out_of_space(tracker, e) from None


def out_of_space(tracker: RunTracker, e: OSError) -> UserError:
    """A full disk mid-run, in one line: the file, the space free and needed (a checkpoint is written
    beside the last one before it replaces it), and how the run continues from its last checkpoint."""
    ckpt = tracker.checkpoint
    need = ckpt.stat().st_size if ckpt.is_file() else tree_size(tracker.dir)
    then = (
        f"free space and continue it from its last checkpoint: {resume_command(tracker)}"
        if ckpt.is_file()
        else "free space and run it again"
    )
    return disk_full("out_dir", e.filename or tracker.dir, need, e, then)


def check_resumable(cfg: RunConfig) -> None:
    """``resume=true run_id=X`` must name a run under ``out_dir`` made with this configuration:
    a typo would otherwise start a new run, a changed setting continue the old one with it."""
    if not (cfg.resume and cfg.run_id):
        return
    runs = artifacts.runs_path(cfg.out_dir)
    saved = runs / cfg.run_id / artifacts.CONFIG
    if not saved.exists():
        known = sorted(p.parent.name for p in runs.glob(f"*/{artifacts.CONFIG}"))
        shown = ", ".join(known[-8:]) + (f" (+{len(known) - 8} older)" if len(known) > 8 else "")
        raise UserError(
            f"run_id: no run {cfg.run_id!r} under {runs} to resume; "
            + (f"known: {shown}" if known else "it holds no runs")
        )
    if load_config(saved).config_hash() != cfg.config_hash():
        raise UserError(
            f"resume: run {cfg.run_id!r} was made with another configuration; continue it with "
            f"seqbench run --config {saved} resume=true run_id={cfg.run_id}"
        )


def resume_command(tracker: RunTracker) -> str:
    """The command line that continues this run: the user's own ``seqbench run`` arguments when
    the run came from the CLI, else the run's saved config."""
    args = list(tracker.argv)
    if args[:2] == ["seqbench", "run"]:
        keep = [a for a in args[2:] if not a.startswith(("resume=", "run_id="))]
    else:
        keep = ["--config", str(tracker.dir / artifacts.CONFIG)]
    return shlex.join(["seqbench", "run", *keep, "resume=true", f"run_id={tracker.run_id}"])


# -- one process ----------------------------------------------------------------------------------


def run_in_process(
    cfg: RunConfig,
    tracker: RunTracker,
    callbacks: Sequence[pl.Callback] = (),
    progress: bool = True,
    *,
    strategy: str = "auto",
) -> Results:
    """``train_run`` in this process (one of several under DDP, see ``bench.training.distributed``)."""
    quiet_lightning()
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    torch.set_flush_denormal(cfg.train.flush_denormal)
    ckpt = tracker.resume_from()
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    try:
        task = build_task(cfg)
        module = SeqModule(cfg, task)
        compile_net(cfg, module)
        trainer, parts = build_trainer(cfg, tracker, module, task, callbacks, progress, strategy)
    except Exception:  # refused at build time (bad data files, a plug-in): leave no half-made run folder behind
        tracker.discard_if_empty()
        raise
    if trainer.global_rank == 0:  # the process that writes the run's files feeds W&B
        tracker.start_wandb(
            {"n_params": n_params(module), "baseline": {f"val/{k}": v for k, v in task.baseline().items()}}
        )
    fitted: Fitted | None = None
    try:
        if ckpt is not None and progress:
            print(f"[{cfg.task.name}/{cfg.model.label()}] resuming {tracker.run_id} from {ckpt}")
        fitted = fit(trainer, module, parts, ckpt)
        test: dict[str, float] = {}
        if fitted.status is not Status.INTERRUPTED:
            if parts.writer.last_step != fitted.steps:  # make the last step's validation the final one
                trainer.validate(module, verbose=False)
            if cfg.eval.test and fitted.status is Status.COMPLETED:
                test = test_at_lengths(trainer, module, [None, *cfg.eval.lengths])
        results = assemble_results(cfg, tracker, task, module, fitted, test)
        if trainer.global_rank == 0:
            tracker.finish(results)
            if tracker.wandb is not None:
                tracker.wandb.summary(results)
    finally:  # a crash too closes the W&B run (a sweep worker starts the next one in this process)
        if tracker.wandb is not None:
            crashed = sys.exc_info()[0] is not None or fitted is None or fitted.status is Status.INTERRUPTED
            tracker.wandb.finish(exit_code=1 if crashed else 0)
    if fitted.status is Status.INTERRUPTED:
        raise KeyboardInterrupt
    return results


def compile_net(cfg: RunConfig, module: SeqModule) -> None:
    if not cfg.train.compile:
        return
    import torch._dynamo as dynamo  # here: only train.compile=true pays for importing the compiler stack

    # torch.compile is lazy: backend failures (e.g. no C++ compiler for inductor on CPU) surface at
    # the first forward; with this they fall back to eager with a warning instead of ending the run
    dynamo.config.suppress_errors = True
    try:
        module.net = torch.compile(module.net)  # type: ignore[assignment]  # an OptimizedModule (a Module); stub: Callable
    except Exception as e:  # noqa: BLE001 - compile is an optimisation, never a requirement
        print(f"warning: torch.compile failed, running eager: {type(e).__name__}: {e}")


@dataclass
class Parts:
    """The harness's own callbacks, which ``fit`` and ``assemble_results`` read back."""

    writer: ResultsWriter
    clock: TrainClock
    facts: DeviceFacts
    graceful: GracefulStop
    stoppers: list[RunStopper]  # in precedence order: the first that stopped names the status


def build_trainer(
    cfg: RunConfig,
    tracker: RunTracker,
    module: SeqModule,
    task: Task,
    callbacks: Sequence[pl.Callback],
    progress: bool,
    strategy: str,
) -> tuple[pl.Trainer, Parts]:
    """The Trainer of one process, with the harness's callbacks (:func:`harness_callbacks`) before the caller's."""
    t = cfg.train
    cbs, parts = harness_callbacks(cfg, tracker, task, callbacks, progress)
    trainer = pl.Trainer(
        max_steps=t.max_steps,
        val_check_interval=min(t.val_every, t.max_steps),
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        accelerator=t.accelerator,
        devices=t.devices,
        strategy=strategy,
        num_nodes=t.num_nodes,
        precision=t.precision,
        deterministic=t.deterministic,
        gradient_clip_val=cfg.optim.grad_clip,
        gradient_clip_algorithm="norm",
        logger=False,
        callbacks=cbs,  # W&B is fed from the metrics.csv rows (tracking.WandbRun)
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
        log_every_n_steps=min(CHECK_EVERY, t.val_every),
        default_root_dir=str(tracker.dir),
    )
    return trainer, parts


def harness_callbacks(
    cfg: RunConfig, tracker: RunTracker, task: Task, callbacks: Sequence[pl.Callback], progress: bool
) -> tuple[list[pl.Callback], Parts]:
    """Every callback of a run in Lightning's calling order (the harness's, then ``callbacks``, then the
    optional observers), and the ones ``fit`` and ``assemble_results`` read back."""
    t = cfg.train
    clock = TrainClock(process_start=time.perf_counter() - (time.time() - tracker.started))  # setup included
    facts = DeviceFacts()
    writer = ResultsWriter(tracker, clock)
    diverge = DivergenceStop(t.diverge_loss)
    checkpoint = AtomicCheckpoint(tracker.checkpoint, t.checkpoint_every)  # after writer: it saves after the row
    graceful = GracefulStop(checkpoint)
    cbs: list[pl.Callback] = [clock, facts, writer, diverge, graceful, checkpoint, *callbacks]
    if cfg.diagnostics.gradients:
        cbs.append(GradientDiagnostics(cfg.diagnostics.every, tracker.dir))
    if progress:
        baseline = {f"val/{k}": v for k, v in task.baseline().items()}
        cbs.append(ProgressPrinter(f"{cfg.task.name}/{cfg.model.label()}", t.max_steps, baseline, writer, clock))
    if t.early_stop is not None:
        cbs.append(
            pl.callbacks.EarlyStopping(
                monitor=t.early_stop.metric,
                mode=cfg.task.facts.goal(t.early_stop.metric).value,
                stopping_threshold=t.early_stop.threshold,
                patience=10**9,
                check_on_train_epoch_end=False,
            )
        )
    stoppers = [diverge, graceful, *(cb for cb in callbacks if isinstance(cb, RunStopper))]
    return cbs, Parts(writer, clock, facts, graceful, stoppers)


def fit(trainer: pl.Trainer, module: SeqModule, parts: Parts, ckpt: Path | None) -> Fitted:
    """Train (from ``ckpt`` when resuming); the status says how training ended."""
    status, reason = Status.COMPLETED, None
    with parts.graceful.installed():
        try:
            # weights_only: a checkpoint file cannot run code when loaded
            trainer.fit(module, ckpt_path=ckpt, weights_only=True if ckpt is not None else None)
            if trainer.interrupted:
                status, reason = Status.INTERRUPTED, "KeyboardInterrupt"
        except StopNow:  # a signal: checkpoint written at this step; the stopper names the reason below
            pass
        except KeyboardInterrupt:
            status, reason = Status.INTERRUPTED, "KeyboardInterrupt"
        except SystemExit:  # Lightning's shutdown after a second Ctrl-C exits; keep the record
            if not trainer.interrupted:
                raise
            status, reason = Status.INTERRUPTED, "interrupted twice: stopped at once, no checkpoint of this step"
    stopped = next((s for s in parts.stoppers if s.stop_status), None)
    if status is Status.COMPLETED and stopped is not None:
        status, reason = stopped.stop_status or status, stopped.stop_reason
    return Fitted(status, reason, trainer.global_step, parts.clock, parts.facts.facts.copy())


def test_at_lengths(trainer: pl.Trainer, module: SeqModule, lengths: Sequence[int | None]) -> dict[str, float]:
    """Test metrics at each length (None: the training length)."""
    out: dict[str, float] = {}
    for length in lengths:
        out.update(module.evaluate_at(trainer, length))
    return out
