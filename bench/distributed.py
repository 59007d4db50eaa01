"""Spawned multi-process runs (``train.strategy=ddp_spawn``) that keep one run's files whole.

Lightning's own ``ddp_spawn`` trains in child processes and hands back only the weights and
``callback_metrics``: the results rows, the training-loss averages, the step count and a
divergence reason stay in the children, and every later ``validate``/``test`` spawns again.
So seqbench launches the processes itself, the way ``torchrun`` would: each one runs the
ordinary in-process path (fit, final validation, test) under Lightning's ``ddp`` strategy
with ``LOCAL_RANK``/``WORLD_SIZE``/``MASTER_*`` set (Lightning then creates no processes of
its own), rank 0 writes ``metrics.csv``/``results.json``/``diagnostics.json`` into the run
folder the parent created, and the parent returns what rank 0 wrote. Synthetic tasks shard
their streams by rank; evaluation metrics are reduced across ranks by torchmetrics;
``train/loss`` in ``metrics.csv`` is rank 0's running mean.
"""
from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from seqbench.bench import artifacts
from seqbench.bench.artifacts import Results, read_results

if TYPE_CHECKING:
    from seqbench.bench.config import RunConfig
    from seqbench.bench.tracking import RunTracker

SPAWN_STRATEGIES = ("ddp_spawn", "ddp_notebook", "ddp_fork")


def spawned(strategy: str) -> bool:
    """Whether seqbench launches the processes for this Lightning strategy name."""
    return strategy.split("_find_unused")[0] in SPAWN_STRATEGIES


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class InProcessRun(Protocol):
    """What each spawned process runs: ``bench.train.run_in_process`` (passed in, so this module
    never imports the training module that imports it)."""

    def __call__(self, cfg: RunConfig, tracker: RunTracker, callbacks: Sequence[Any], progress: bool, *,
                 strategy: str) -> Results: ...


def launch(cfg: RunConfig, tracker: RunTracker, callbacks: Sequence[Any], progress: bool,
           target: InProcessRun | None = None) -> Results:
    """Run ``target`` on ``cfg`` in ``train.devices`` spawned processes on this node; returns rank 0's
    results. ``target`` must be a module-level function (the spawned processes import it by name)."""
    import torch.multiprocessing as mp

    from seqbench.bench.errors import UserError

    if target is None:  # until bench/train.py passes target=run_in_process (tests/test_layering.py KNOWN)
        from seqbench.bench.train import run_in_process as target

    t = cfg.train
    if t.devices == "auto":
        raise UserError(f"train.devices: set a number of processes for strategy {t.strategy!r}, e.g. "
                        "train.devices=2")
    env = {"MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
           "MASTER_PORT": os.environ.get("MASTER_PORT", str(_free_port())),
           "NODE_RANK": os.environ.get("NODE_RANK", "0"), "WORLD_SIZE": str(t.devices * t.num_nodes)}
    strategy = t.strategy.replace("ddp_spawn", "ddp").replace("ddp_notebook", "ddp").replace("ddp_fork", "ddp")
    mp.start_processes(_worker, args=(target, cfg, tracker, list(callbacks), progress, env, strategy),
                       nprocs=t.devices, join=True, start_method="spawn")
    results = read_results(tracker.dir)
    if results is None:
        raise RuntimeError(f"the training processes ended without writing {tracker.dir / artifacts.RESULTS}")
    if results.get("status") == "interrupted":
        raise KeyboardInterrupt
    return results


def _worker(local_rank: int, target: InProcessRun, cfg: RunConfig, tracker: RunTracker, callbacks: list[Any],
            progress: bool, env: dict[str, str], strategy: str) -> None:
    os.environ.update(env, LOCAL_RANK=str(local_rank))
    try:
        target(cfg, tracker, callbacks, progress, strategy=strategy)
    except KeyboardInterrupt:  # rank 0 has written status "interrupted"; the parent re-raises
        pass
