"""``run(cfg)``: build the task, the model and the Trainer, train, evaluate, write results."""
from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Sequence

import pytorch_lightning as pl
import torch

from seqbench.bench.callbacks import AtomicCheckpoint, DivergenceStop, ProgressPrinter, ResultsWriter
from seqbench.bench.config import RunConfig
from seqbench.bench.errors import UserError
from seqbench.bench.diagnostics import GradientDiagnostics
from seqbench.bench.distributed import launch, spawned
from seqbench.bench.module import SeqModule
from seqbench.bench.registry import TASKS
from seqbench.bench.artifacts import read_results
from seqbench.bench.tracking import RunTracker, wandb_finish, wandb_log_summary
from seqbench.tasks.base import Task


def quiet_lightning() -> None:
    """Keep Lightning's banners and data-loader advice out of the user's terminal."""
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    for msg in (".*does not have many workers.*", ".*LeafSpec.*", ".*is an invalid version.*",
                ".*Checkpoint directory.*", ".*`isinstance.*treespec.*", ".*GPU available but not used.*",
                ".*The number of training batches.*", ".*on_validation_end.*", ".*sync_dist.*",
                ".*IterableDataset.*has `__len__` defined.*", ".*You defined a `validation_step` but have no `val_dataloader`.*"):
        warnings.filterwarnings("ignore", message=msg)


def build_task(cfg: RunConfig) -> Task:
    task = TASKS.get(cfg.task.name).cls(cfg.task, seed=cfg.seed)
    task.setup()
    return task


def _floats(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if k.startswith(prefix)}


def run(cfg: RunConfig, *, argv: Sequence[str] | None = None, callbacks: Sequence[pl.Callback] = (),
        progress: bool = True, tracker: RunTracker | None = None) -> dict[str, Any]:
    """Train and evaluate one configuration; returns the dict written to results.json."""
    tracker = tracker or RunTracker(cfg, list(argv) if argv is not None else None)
    if tracker.resumed:
        done = read_results(tracker.dir)
        if done is not None and done.get("status") != "interrupted":
            if progress:
                print(f"[{cfg.task.name}/{cfg.model.name}] {tracker.run_id} already finished "
                      f"({done.get('status')}); nothing to resume")
            return done
    if spawned(cfg.train.strategy):  # seqbench starts the processes; rank 0 writes the run's files
        return launch(cfg, tracker, callbacks, progress)
    return run_in_process(cfg, tracker, callbacks, progress, strategy=cfg.train.strategy)


def run_in_process(cfg: RunConfig, tracker: RunTracker, callbacks: Sequence[pl.Callback] = (),
                   progress: bool = True, *, strategy: str = "auto") -> dict[str, Any]:
    """``run`` in this process (one of several under DDP, see ``bench.distributed``)."""
    quiet_lightning()
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    torch.set_flush_denormal(cfg.train.flush_denormal)
    ckpt = tracker.resume_from()
    pl.seed_everything(cfg.seed, workers=True, verbose=False)
    try:
        task = build_task(cfg)
    except UserError:  # bad data files: leave no half-made run folder behind
        tracker.discard_if_empty()
        raise
    module = SeqModule(cfg, task)
    baseline = task.baseline()
    t = cfg.train

    writer = ResultsWriter(tracker)
    if tracker.rows:  # resumed: continue the history, not a second copy of it
        writer.last_step = int(tracker.rows[-1]["step"])
        writer.t0 -= float(tracker.rows[-1].get("wall_s", 0.0))
    diverge = DivergenceStop(t.diverge_loss)
    cbs: list[pl.Callback] = [writer, diverge, *callbacks]
    if t.checkpoint_every:
        cbs.append(AtomicCheckpoint(tracker.checkpoint, t.checkpoint_every))
    if cfg.diagnostics.gradients:
        cbs.append(GradientDiagnostics(cfg.diagnostics.every, tracker.dir))
    if progress:
        cbs.append(ProgressPrinter(f"{cfg.task.name}/{cfg.model.name}", t.max_steps,
                                   {f"val/{k}": v for k, v in baseline.items()}))
    if t.early_stop is not None:
        cbs.append(pl.callbacks.EarlyStopping(
            monitor=t.early_stop.metric, mode=cfg.task.facts.goal(t.early_stop.metric).value,
            stopping_threshold=t.early_stop.threshold, patience=10**9, check_on_train_epoch_end=False))
    wandb_logger = tracker.wandb_logger()
    if cfg.train.compile:
        import torch._dynamo as dynamo

        # torch.compile is lazy: backend failures (e.g. no C++ compiler for inductor on CPU) surface at
        # the first forward; with this they fall back to eager with a warning instead of ending the run
        dynamo.config.suppress_errors = True
        try:
            module.net = torch.compile(module.net)
        except Exception as e:  # noqa: BLE001 - compile is an optimisation, never a requirement
            print(f"warning: torch.compile failed, running eager: {type(e).__name__}: {e}")

    trainer = pl.Trainer(
        max_steps=t.max_steps, val_check_interval=min(t.val_every, t.max_steps), check_val_every_n_epoch=None,
        num_sanity_val_steps=0, accelerator=t.accelerator, devices=t.devices, strategy=strategy,
        num_nodes=t.num_nodes, precision=t.precision, deterministic=t.deterministic,
        gradient_clip_val=cfg.optim.grad_clip, gradient_clip_algorithm="norm",
        logger=wandb_logger if wandb_logger is not None else False, callbacks=cbs,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        use_distributed_sampler=False, log_every_n_steps=max(1, min(50, t.val_every)),
        default_root_dir=str(tracker.dir))

    status, reason = "completed", None
    t0 = time.perf_counter()
    try:
        if ckpt is not None and progress:
            print(f"[{cfg.task.name}/{cfg.model.name}] resuming {tracker.run_id} from {ckpt}")
        # weights_only: a checkpoint file cannot run code when loaded
        trainer.fit(module, ckpt_path=ckpt, weights_only=True if ckpt is not None else None)
        if trainer.interrupted:
            status, reason = "interrupted", "KeyboardInterrupt"
    except KeyboardInterrupt:
        status, reason = "interrupted", "KeyboardInterrupt"
    except SystemExit:  # Lightning's graceful shutdown after Ctrl-C/SIGTERM exits; keep the record
        if not trainer.interrupted:
            raise
        status, reason = "interrupted", "interrupted by a signal"
    train_s = time.perf_counter() - t0
    steps = trainer.global_step
    if diverge.reason:
        status, reason = "diverged", diverge.reason
    for cb in callbacks:  # a caller's callback may end the run and name why (sweeps: "pruned")
        if status == "completed" and getattr(cb, "stop_status", None):
            status, reason = cb.stop_status, cb.stop_reason

    if status != "interrupted":
        if writer.last_step != steps:  # make the last step's validation the final one
            trainer.validate(module, verbose=False)
        test: dict[str, float] = {}
        if cfg.eval.test and status == "completed":
            for length in [None, *cfg.eval.lengths]:
                module.eval_length = length
                module.eval_prefix["test"] = "test" if length is None else f"test@{length}"
                trainer.test(module, verbose=False)
                test.update(_floats(trainer.callback_metrics, module.eval_prefix["test"] + "/"))
    rows = tracker.rows
    final = dict(rows[-1]) if rows else {}
    final = {k: v for k, v in final.items() if k.startswith("val/")}
    if status != "interrupted":
        final.update(test)
    best: dict[str, float] = {}
    for row in rows:
        for k, v in row.items():
            if not k.startswith("val/") or v != v:  # skip NaN
                continue
            best[k] = cfg.task.facts.goal(k).better(best.get(k, v), v)
    final["time/train_s"] = train_s
    n_params = sum(p.numel() for p in module.net.parameters())
    extras = task.final_report(module.net, module.device) if status == "completed" else {}
    results = {
        **tracker.provenance(),
        "status": status, "reason": reason,
        "task": cfg.task.name, "model": cfg.model.name,
        "final": final, "best": best,
        "baseline": {f"val/{k}": v for k, v in baseline.items()},
        "solved": bool(task.solved(final, "val")) if final else False,
        "primary_metric": f"val/{cfg.task.facts.primary}", "primary_goal": cfg.task.facts.primary_goal.value,
        "steps": steps, "wall_time_s": round(time.time() - tracker.started, 3), "train_time_s": round(train_s, 3),
        "samples_per_s": round(steps * t.batch_size * trainer.world_size / train_s, 2) if train_s > 0 else None,
        "n_params": n_params, "device": str(module.device),
        "extras": extras,
        "config": cfg.to_dict(),
    }
    if trainer.global_rank == 0:
        tracker.finish(results)
        wandb_log_summary(wandb_logger, {**final, "status": status, "solved": results["solved"]},
                          text={f"extras/{k}": str(v) for k, v in extras.items()})
    wandb_finish(wandb_logger)
    if status == "interrupted":
        raise KeyboardInterrupt
    return results
