"""Multi-process runs that keep one run's files whole: seqbench starts the processes itself.

Left to itself, Lightning's ``ddp`` (what strategy ``auto`` picks for ``devices>1``) re-launches
the whole command line once per extra rank: each copy makes its own run folder and a second
"completed" summary. Its ``ddp_spawn`` trains in child processes and hands back only the weights
and ``callback_metrics``: the results rows, the training-loss means, the step count and a
divergence reason stay in the children, and every later ``validate``/``test`` spawns again.

So whenever a run needs more than one process on a node (``train.devices`` > 1, ``devices=auto``
with several GPUs, any ``*_spawn``/``notebook``/``fork`` strategy, or ``num_nodes`` > 1), seqbench
launches the processes the way ``torchrun`` would: each one runs the ordinary in-process path
(fit, final validation, test) with ``LOCAL_RANK``/``NODE_RANK``/``WORLD_SIZE``/``MASTER_*`` set, so
Lightning (``ddp``, or the strategy named, e.g. ``fsdp``) creates no processes of its own; rank 0
writes ``metrics.csv``/``results.json``/``diagnostics.json`` into the one run folder the parent
created, and the parent returns what rank 0 wrote. Synthetic tasks shard their streams by rank;
evaluation metrics are reduced across ranks by torchmetrics; ``train/loss`` in ``metrics.csv`` is
rank 0's running mean.

Processes started by someone else (``torchrun``, a cluster scheduler) are detected from their
environment and run in place; they, and runs over several nodes, must be told one ``run_id`` so
that every process writes into the same folder.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Protocol

import torch
import torch.multiprocessing as mp

from seqbench.bench.config import RunConfig, TrainConfig
from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import Results, Status, read_results
from seqbench.bench.core.errors import UserError

if TYPE_CHECKING:  # names only: train passes its run_in_process in, tracking's tracker travels through
    import pytorch_lightning as pl

    from seqbench.bench.training.tracking import RunTracker

SPAWN_STRATEGIES = ("ddp_spawn", "ddp_notebook", "ddp_fork")


def spawned(strategy: str) -> bool:
    """Whether the strategy name asks for processes spawned from this one."""
    return strategy.split("_find_unused")[0] in SPAWN_STRATEGIES


class InProcess(Protocol):
    """What each launched process runs: ``bench.training.train.run_in_process``."""

    def __call__(
        self, cfg: RunConfig, tracker: RunTracker, callbacks: Sequence[pl.Callback], progress: bool, *, strategy: str
    ) -> Results: ...


def processes_per_node(train: TrainConfig) -> int:
    """Training processes this node runs: ``train.devices``, or every visible GPU for ``auto``
    (Lightning's own count: CPU and MPS give one)."""
    if train.devices != "auto":
        return int(train.devices)

    if train.accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available():
        return torch.cuda.device_count()
    return 1


def launched_outside() -> bool:
    """Whether this process is one rank of a job someone else launched (torchrun, SLURM ...)."""
    return "LOCAL_RANK" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


def needs_launch(train: TrainConfig) -> bool:
    """Whether seqbench must start the training processes itself (see the module docstring)."""
    if launched_outside():
        return False
    return spawned(train.strategy) or processes_per_node(train) > 1 or train.num_nodes > 1


def check_shared_run_id(cfg: RunConfig) -> None:
    """Several independently started processes agree on one run folder only through ``run_id``."""
    if cfg.run_id is not None:
        return
    if launched_outside():
        raise UserError(
            "run_id: processes started by torchrun or a scheduler must share one run folder; "
            "give every rank the same run_id=NAME"
        )
    if cfg.train.num_nodes > 1:
        raise UserError(
            "run_id: a run over train.num_nodes > 1 must name its one run folder; give every node "
            "the same run_id=NAME (and MASTER_ADDR, MASTER_PORT, NODE_RANK in the environment)"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_strategy(strategy: str) -> str:
    """The Lightning strategy each launched process runs (it must not spawn or re-launch)."""
    if strategy == "auto":
        return "ddp"
    for name in SPAWN_STRATEGIES:
        strategy = strategy.replace(name, "ddp")
    return strategy


def launch(
    cfg: RunConfig, tracker: RunTracker, callbacks: Sequence[pl.Callback], progress: bool, target: InProcess
) -> Results:
    """Run ``target(cfg, tracker, callbacks, progress, strategy=...)`` (``bench.training.train.run_in_process``,
    passed in so this module needs nothing from train) in one process per device of this node;
    returns the results rank 0 wrote."""
    t = cfg.train
    if t.num_nodes > 1:
        missing = [k for k in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK") if k not in os.environ]
        if missing:
            raise UserError(
                f"train.num_nodes: a {t.num_nodes}-node run needs {', '.join(missing)} set in the "
                "environment of every node"
            )
    nprocs = processes_per_node(t)
    env = {
        "MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
        "MASTER_PORT": os.environ.get("MASTER_PORT", str(_free_port())),
        "NODE_RANK": os.environ.get("NODE_RANK", "0"),
        "WORLD_SIZE": str(nprocs * t.num_nodes),
    }
    ctx = mp.start_processes(
        _worker,
        args=(target, cfg, tracker, list(callbacks), progress, env, _rank_strategy(t.strategy)),
        nprocs=nprocs,
        join=False,
        start_method="spawn",
    )
    with _forward_sigterm([p.pid for p in ctx.processes]):
        while not ctx.join():
            pass
    if env["NODE_RANK"] != "0":  # node 0 writes the results
        return {"run_id": tracker.run_id, "status": Status.NODE_DONE}
    results = read_results(tracker.dir)
    if results is None:
        raise RuntimeError(f"the training processes ended without writing {tracker.dir / artifacts.RESULTS}")
    if results.get("status") == "interrupted":
        raise KeyboardInterrupt
    return results


@contextmanager
def _forward_sigterm(pids: list[int]) -> Iterator[None]:
    """While the ranks train: SIGTERM to this process goes on to them (each saves and stops at a
    step boundary); Ctrl-C already reaches them through the terminal's process group, so here it
    is ignored instead of tearing the ranks down mid-step."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: FrameType | None) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, forward),
        signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
    }
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _worker(
    local_rank: int,
    target: InProcess,
    cfg: RunConfig,
    tracker: RunTracker,
    callbacks: list[pl.Callback],
    progress: bool,
    env: dict[str, str],
    strategy: str,
) -> None:
    os.environ.update(env, LOCAL_RANK=str(local_rank))
    try:
        target(cfg, tracker, callbacks, progress, strategy=strategy)
    except KeyboardInterrupt:  # rank 0 has written status "interrupted"; the parent re-raises
        pass
