"""Lightning callbacks the harness always installs: results rows, progress lines, training clock,
where the run trained, divergence, graceful stop on a signal, atomic checkpoints.

Callbacks that can end a run early derive from ``RunStopper``: ``bench.training.train`` records the first
one that stopped the run (its ``stop_status`` and ``stop_reason``) in results.json.
"""

from __future__ import annotations

import math
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytorch_lightning as pl
import torch

from seqbench.bench.core import signals
from seqbench.bench.core.artifacts import Results, Status
from seqbench.bench.core.text import duration
from seqbench.bench.training.tracking import RunTracker


def _lr(trainer: pl.Trainer) -> float:
    try:
        return float(trainer.optimizers[0].param_groups[0]["lr"])
    except (IndexError, AttributeError):
        return float("nan")


class RunStopper(pl.Callback):
    """A callback that may end the run early and says why (``diverged``, ``pruned``, ``interrupted``).

    ``stop`` asks the Trainer to stop after this step and keeps the first status and reason;
    ``bench.training.train`` reads them off every ``RunStopper`` it was given, so a new kind of stop needs no
    change there.
    """

    stop_status: Status | None = None
    stop_reason: str | None = None

    def stop(self, trainer: pl.Trainer, status: Status, reason: str) -> None:
        if self.stop_status is None:
            self.stop_status, self.stop_reason = status, reason
        trainer.should_stop = True


WARM_STEPS = 20  # a process's first steps: torch.compile, cuDNN autotuning, the allocator's first growth


class TrainClock(pl.Callback):
    """Training time (validation excluded) and wall time, carried across resumed processes in the
    checkpoint, plus what this process alone did (for its steps/s and ETA).

    ``warm`` is (global step, this process's training seconds) once the process has made
    ``WARM_STEPS`` steps: the run's steady throughput is measured from there (``steady``), so a
    compiled model's compile time, which lands in the first steps, does not hide its speed. On a GPU
    the host reads the clock without a synchronisation; it runs ahead of the device by at most the
    queued work of a step or two, small against the window the steady rate is taken over.
    """

    def __init__(self, process_start: float | None = None) -> None:
        self.carried_train_s = 0.0  # from earlier processes of this run (checkpoint)
        self.carried_wall_s = 0.0
        self.process_start = time.perf_counter() if process_start is None else process_start  # perf_counter time
        self.process_train_s = 0.0  # this process, validation excluded
        self.process_first_step = 0
        self._since: float | None = None  # start of the running training segment
        self._fitting = False
        self.warm: tuple[int, float] | None = None  # (global step, this process's train seconds) after WARM_STEPS

    # -- what the run reports ---------------------------------------------------------------
    @property
    def train_s(self) -> float:
        return self.carried_train_s + self.this_process_train_s

    @property
    def wall_s(self) -> float:
        return self.carried_wall_s + time.perf_counter() - self.process_start

    @property
    def this_process_train_s(self) -> float:
        running = time.perf_counter() - self._since if self._since is not None else 0.0
        return self.process_train_s + running

    def steady(self, steps: int) -> tuple[int, float] | None:
        """(steps, training seconds) of this process after its first ``WARM_STEPS`` steps, when it made
        at least ``2 * WARM_STEPS`` more; None otherwise (too short to tell warm-up from steady state)."""
        if self.warm is None or steps - self.warm[0] < 2 * WARM_STEPS:
            return None
        seconds = self.this_process_train_s - self.warm[1]
        return (steps - self.warm[0], seconds) if seconds > 0 else None

    def _pause(self) -> None:
        if self._since is not None:
            self.process_train_s += time.perf_counter() - self._since
            self._since = None

    # -- hooks --------------------------------------------------------------------------------
    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self.process_first_step = trainer.global_step
        self._fitting = True
        self._since = time.perf_counter()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.warm is None and trainer.global_step - self.process_first_step >= WARM_STEPS:
            self.warm = (trainer.global_step, self.this_process_train_s)

    def on_validation_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._pause()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if self._fitting:  # a validation inside fit; the final one after fit keeps the clock stopped
            self._since = time.perf_counter()

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._pause()
        self._fitting = False

    def on_exception(self, trainer: pl.Trainer, pl_module: Any, exception: BaseException) -> None:
        self._pause()
        self._fitting = False

    # -- checkpoint (weights_only-safe: plain floats) -------------------------------------------
    def state_dict(self) -> dict[str, float]:
        return {"train_s": self.train_s, "wall_s": self.wall_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.carried_train_s = float(state.get("train_s", 0.0))
        self.carried_wall_s = float(state.get("wall_s", 0.0))


def _cpu_name() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


class DeviceFacts(pl.Callback):
    """Where training really ran, read at the start of training (Lightning moves the module back
    to the CPU when ``fit`` ends, so reading ``module.device`` afterwards says ``cpu``)."""

    def __init__(self) -> None:
        self.facts: Results = {}  # results.json's where-it-trained keys

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        device = pl_module.device
        name = (
            torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else (_cpu_name() if device.type == "cpu" else None)
        )
        self.facts = {
            "device": str(device),
            "precision": str(trainer.precision),
            "world_size": trainer.world_size,
            "num_nodes": trainer.num_nodes,
        }
        if name:
            self.facts["device_name"] = name


class ResultsWriter(pl.Callback):
    """One ``metrics.csv`` row per validation (train/loss: the mean since the previous row);
    keeps the history for ``best`` and the last row for the progress line."""

    def __init__(self, tracker: RunTracker, clock: TrainClock):
        self.tracker, self.clock = tracker, clock
        self.last_step = int(tracker.rows[-1]["step"]) if tracker.rows else -1
        self.last_row: dict[str, Any] = {}

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        self.last_step = trainer.global_step  # every rank: run() decides on a final validation from it
        train_loss = pl_module.train_loss.take_mean()  # every rank, so each keeps its own window
        if trainer.global_rank != 0:
            return
        row: dict[str, Any] = {
            "step": trainer.global_step,
            "wall_s": round(self.clock.wall_s, 3),
            "lr": _lr(trainer),
            "train/loss": train_loss,
        }
        for k, v in trainer.callback_metrics.items():
            if k.startswith("val/"):
                row[k] = float(v)
        self.last_row = row
        self.tracker.log_eval(row)


class ProgressPrinter(pl.Callback):
    """One line per validation: step, the mean training loss since the previous line (the value
    metrics.csv holds), validation metrics, the memoryless baseline, this process's training
    steps/s (validation excluded) and an ETA at this process's overall pace.

    In a terminal, a live status line (step, steps/s, ETA; redrawn at most every ``redraw_s``) sits
    under them, so a long run shows it is moving between validations. Nothing live is written when
    the stream is not a terminal (logs, pipes, sweeps), and the live line reads no loss: a loss on
    the device would cost a synchronisation per redraw."""

    def __init__(
        self,
        label: str,
        max_steps: int,
        baseline: dict[str, float],
        writer: ResultsWriter,
        clock: TrainClock,
        stream=None,
        redraw_s: float = 0.2,
    ):
        self.label, self.max_steps, self.baseline = label, max_steps, baseline
        self.writer, self.clock = writer, clock
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.redraw_s, self._drawn = redraw_s, 0.0

    def _pace(self, step: int) -> list[str]:
        done = step - self.clock.process_first_step
        train_s, wall_s = self.clock.this_process_train_s, time.perf_counter() - self.clock.process_start
        if done > 0 and train_s > 0:
            return [f"{done / train_s:.1f} steps/s", f"ETA {duration((self.max_steps - step) * wall_s / done)}"]
        return []

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        now = time.perf_counter()
        if not self.live or trainer.global_rank != 0 or now - self._drawn < self.redraw_s:
            return
        self._drawn = now
        step = trainer.global_step
        line = "  ".join([f"[{self.label}] step {step:>6}/{self.max_steps}", *self._pace(step)])
        self.stream.write(f"\r{line}\033[K")  # redraw in place; \033[K clears what a longer line left
        self.stream.flush()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.sanity_checking or trainer.global_rank != 0:
            return
        step = trainer.global_step
        row = self.writer.last_row if self.writer.last_row.get("step") == step else {}
        parts = [
            f"[{self.label}] step {step:>6}/{self.max_steps}",
            f"train/loss(mean) {row.get('train/loss', float('nan')):.4f}",
        ]
        parts += [f"{k} {v:.4f}" for k, v in row.items() if k.startswith("val/")]
        parts.append("baseline " + " ".join(f"{k} {v:.4f}" for k, v in self.baseline.items()))
        parts += self._pace(step)
        print(("\r\033[K" if self.live else "") + "  ".join(parts), file=self.stream, flush=True)

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if self.live and trainer.global_rank == 0:
            self.stream.write("\r\033[K")  # the live line goes; the closing summary follows
            self.stream.flush()


class DivergenceStop(RunStopper):
    """Stop when the training loss is NaN/Inf or above ``bound``.

    The loss lives on the device (``module.LossMeter``) and reaches the host only every
    ``trainer.log_every_n_steps`` steps (and at each validation), so a loss that diverges at step
    k stops the run by step k + that interval; the reason names the steps it was seen in.
    """

    def __init__(self, bound: float | None):
        self.bound = bound

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._check(trainer, pl_module.train_loss)

    def on_train_end(self, trainer, pl_module) -> None:
        pl_module.train_loss.sync()  # the last steps, which no interval read covered
        self._check(trainer, pl_module.train_loss)

    def _check(self, trainer: pl.Trainer, meter: Any) -> None:
        worst, first, last = meter.take_worst()  # host values only: no device sync here
        if worst is None:
            return
        where = f"step {last}" if first == last else f"steps {first}-{last}"
        reason = None
        if not math.isfinite(worst):
            reason = f"non-finite training loss ({worst}) in {where}"
        elif self.bound is not None and worst > self.bound:
            reason = f"training loss {worst:.4g} > train.diverge_loss={self.bound} in {where}"
        # every rank reads its loss at the same steps; they stop together or a collective hangs
        if trainer.world_size > 1 and trainer.strategy.reduce_boolean_decision(reason is not None, all=False):
            reason = reason or f"training loss diverged on another rank in {where}"
        if reason:
            self.stop(trainer, Status.DIVERGED, reason)


class AtomicCheckpoint(pl.Callback):
    """``last.ckpt`` every ``every`` steps and at the last step (as Lightning users expect of
    ``last.ckpt``; ``seqbench eval`` and ``seqbench.load_model`` read the trained weights from it),
    written to a temp file and renamed into place, so a kill mid-write never leaves a truncated
    checkpoint.

    At a step that also validates (the trainer's ``val_check_interval``), the save waits for the end of
    that validation (this callback sits after ``ResultsWriter``), so ``last.ckpt`` at step S always comes
    after metrics.csv's row S: a checkpoint saved before it, killed before the row, resumed with the row
    missing for good (Lightning does not repeat the validation of the step it resumes at). A row written
    and then killed before the save is trimmed on resume and written again."""

    def __init__(self, path, every: int | None):
        self.path, self.every = path, every
        self.saved_step = -1
        self._after_validation = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        if self.every and step % self.every == 0 and step < trainer.max_steps:
            interval = trainer.val_check_interval  # steps (an int: check_val_every_n_epoch=None)
            if trainer.enable_validation and isinstance(interval, int) and step % interval == 0:
                self._after_validation = True  # saved in on_validation_end, after the row
            else:
                self.save(trainer)

    def on_validation_end(self, trainer, pl_module) -> None:
        if self._after_validation and not trainer.sanity_checking:
            self._after_validation = False
            self.save(trainer)

    def on_train_end(self, trainer, pl_module) -> None:
        # the final step (max_steps, an early stop, a divergence): a run shorter than ``every``
        # steps, or one ending between two saves, still leaves its trained state (null: never)
        if self.every:
            self.save(trainer)

    def save(self, trainer: pl.Trainer) -> None:
        if trainer.global_step == self.saved_step:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            trainer.save_checkpoint(tmp)
        except OSError:  # a full disk: the half-written copy would hold the space the last good one needs
            tmp.unlink(missing_ok=True)
            raise
        if trainer.global_rank == 0:
            os.replace(tmp, self.path)
        self.saved_step = trainer.global_step


class GracefulStop(RunStopper):
    """Ctrl-C or SIGTERM during training: finish the current step, write the checkpoint, stop.

    The handler only sets a flag; this callback acts on it at the end of a step, so the
    checkpoint's step is the step at which the signal arrived and a resume trains no step twice.
    A second signal raises ``KeyboardInterrupt`` at once (the user insists; nothing is saved), unless it
    repeats the first within ``signals.REPEAT_S`` (the same stop delivered twice: ``bench.core.signals``).
    Under several processes the ranks agree on stopping every ``trainer.log_every_n_steps``
    steps (one collective there, none per step).
    """

    def __init__(self, checkpoint: AtomicCheckpoint):
        self.checkpoint = checkpoint
        self.signal_name: str | None = None
        self._installed = False

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT/SIGTERM while the block runs (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in previous:
            signal.signal(s, self._handle)
        self._installed = True
        try:
            yield
        finally:
            self._installed = False
            for s, h in previous.items():
                signal.signal(s, h)

    def _handle(self, signum: int, frame: Any) -> None:
        if not signals.noted(signum):
            return  # the same stop delivered twice (to the process group and by a sweep's parent)
        if self.signal_name is not None:
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name

    def on_train_start(self, trainer, pl_module) -> None:
        # Lightning's own SIGTERM handler (installed by fit, removed at its teardown) raises
        # SIGTERMException at the next step end or in the middle of a validation, before any
        # checkpoint of that step: ours takes SIGTERM back for the rest of fit
        if self._installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._handle)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        asked = self.signal_name is not None
        if trainer.world_size > 1:
            if trainer.global_step % trainer.log_every_n_steps:
                return
            asked = trainer.strategy.reduce_boolean_decision(asked, all=False)
        if asked:
            self.checkpoint.save(trainer)
            self.stop(
                trainer,
                Status.INTERRUPTED,
                f"{self.signal_name or 'a signal'} at step {trainer.global_step}; checkpoint saved",
            )
            # leave fit now: a plain should_stop would first run a validation at this step, a metrics row
            # the uninterrupted run never has (and a wait the user did not ask for)
            raise StopNow(self.stop_reason)


class StopNow(Exception):
    """Raised by ``GracefulStop`` after its checkpoint to end ``fit`` at once; ``bench.training.train.fit``
    catches it and records the run as interrupted."""
