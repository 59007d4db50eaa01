"""Harness overhead: the same model, batches and steps through seqbench's ``train_run()`` and through
a plain PyTorch loop written here; prints the step-time ratio and the data-generation share.

    python benchmarks/overhead.py                       # d_model 64 and 256, LSTM on copy, CPU
    python benchmarks/overhead.py --d-models 32,256 --model gru --steps 300 --rounds 3
    python benchmarks/overhead.py --device cuda --d-models 64,1024 --set task.delay=100

Both paths do identical work per step: materialise the synthetic batch from its key on the
device, forward, the task's loss, backward, clip the global norm to ``optim.grad_clip``,
Adam step, LR schedule step, zero grads (the per-step losses are compared to prove it).
Per step, after ``--warmup`` steps: the process CPU time (robust on a shared machine, with
one intra-op thread everything runs on this process's main thread) and the median
wall-clock interval between step ends (the seqbench side measures both with a callback;
validation runs only after the last step, test is off). Rounds alternate seqbench/plain;
the fastest round of each is reported. Data generation share = CPU time in
``task.materialize`` over CPU time of the plain loop. Model GFLOP/s: the model's analytic forward + backward
FLOPs per token (``bench/training/flops.py``) times the tokens of a step, over the plain loop's step (CPU
time on a CPU, the window's wall clock on a GPU); left out for a model without a FLOP count.

``--device cuda``: the same three paths on the GPU (fp32). CUDA work is asynchronous, so a
step's end on the host says nothing about the GPU: the wall-clock figure is the mean step time
over the window from step ``--warmup`` to the last step, with ``torch.cuda.synchronize()`` at
both ends of the window only (never per step, which would add the very host syncs this
measures). The losses are kept on the device and read after the run for the same reason.
The CPU column is then the host's CPU time per step: launch and bookkeeping cost.
Targets (issue 7): ratio <= 1.10 at small sizes on CPU, <= 1.03 at d_model >= 256; (issue 15)
on a GPU, wall clock, seqbench <= 1.05x bare Lightning at d_model 64 and <= 1.03x at >= 256.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

import pytorch_lightning as pl
import torch

from seqbench.bench.config import build_config
from seqbench.bench.training.flops import flops_per_token
from seqbench.bench.training.schedules import lr_multiplier
from seqbench.bench.training.train import build_task, train_run
from seqbench.models.base import build_model
from seqbench.tasks.synthetic.base import BatchKey


def now() -> tuple[float, float]:
    """(wall, process CPU) seconds: CPU time is what the step cost this process, whatever else ran."""
    return time.perf_counter(), time.process_time()


class Window:
    """Where the timed window starts and ends; on CUDA the clock is read after a synchronize there."""

    def __init__(self, cuda: bool, warmup: int, steps: int):
        self.cuda, self.edges = cuda, {warmup, steps - 1}

    def stamp(self, ends: list[tuple[float, float]]) -> None:
        if self.cuda and len(ends) in self.edges:
            torch.cuda.synchronize()
        ends.append(now())


class StepClock(pl.Callback):
    def __init__(self, window: Window):
        self.window = window
        self.ends: list[tuple[float, float]] = []
        self.losses: list[torch.Tensor] = []  # on the device: reading them per step would sync

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.losses.append((outputs["loss"] if isinstance(outputs, dict) else outputs).detach())
        self.window.stamp(self.ends)


def to_floats(losses: list[torch.Tensor]) -> list[float]:
    return torch.stack(losses).float().cpu().tolist()


def step_times(ends: list[tuple[float, float]], warmup: int, cuda: bool) -> tuple[float, float]:
    """Wall-clock per step (CPU: median interval between step ends; CUDA: mean over the synchronised
    window) and mean process CPU time per step."""
    n = len(ends) - warmup - 1
    wall = [b[0] - a[0] for a, b in zip(ends[warmup:], ends[warmup + 1 :])]
    cpu = (ends[-1][1] - ends[warmup][1]) / n
    return ((ends[-1][0] - ends[warmup][0]) / n if cuda else statistics.median(wall)), cpu


def seqbench_run(cfg, window: Window, extra: tuple = ()) -> tuple[list[tuple[float, float]], list[float]]:
    clock = StepClock(window)
    train_run(cfg, callbacks=[clock, *extra], progress=False)
    return clock.ends, to_floats(clock.losses)


class BareModule(pl.LightningModule):
    """The least a Lightning user writes: same model, loss, optimizer, schedule; no logging."""

    def __init__(self, cfg, task):
        super().__init__()
        self.cfg, self.task = cfg, task
        self.net = build_model(cfg.model, task.spec)
        self.losses: list[float] = []

    def train_dataloader(self):
        return self.task.loader("train", self.cfg.train.batch_size)

    def on_after_batch_transfer(self, batch, dataloader_idx):
        return self.task.materialize(batch, self.device)

    def training_step(self, batch, batch_idx):
        out, _ = self.net(batch)
        return self.task.loss(out, batch)

    def configure_optimizers(self):
        o, t = self.cfg.optim, self.cfg.train
        opt = torch.optim.Adam(self.net.parameters(), lr=o.lr, weight_decay=o.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda s: lr_multiplier(
                s, warmup_steps=o.warmup_steps, max_steps=t.max_steps, schedule=o.schedule, min_ratio=o.min_lr_ratio
            ),
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def bare_lightning_run(cfg, window: Window, extra: tuple = ()) -> tuple[list[tuple[float, float]], list[float]]:
    torch.set_num_threads(cfg.train.threads or torch.get_num_threads())
    pl.seed_everything(cfg.seed, verbose=False)
    module = BareModule(cfg, build_task(cfg))
    clock = StepClock(window)
    trainer = pl.Trainer(
        max_steps=cfg.train.max_steps,
        accelerator=cfg.train.accelerator,
        devices=1,
        logger=False,
        callbacks=[clock, *extra],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        gradient_clip_val=cfg.optim.grad_clip,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        use_distributed_sampler=False,
    )
    trainer.fit(module)
    return clock.ends, to_floats(clock.losses)


def plain_run(cfg, window: Window) -> tuple[list[tuple[float, float]], list[float], float]:
    """The loop a researcher would write by hand; returns step ends, losses, data-generation seconds."""
    torch.set_num_threads(cfg.train.threads or torch.get_num_threads())
    pl.seed_everything(cfg.seed, verbose=False)
    task = build_task(cfg)
    device = torch.device("cuda" if window.cuda else "cpu")
    net = build_model(cfg.model, task.spec).to(device)
    o, t = cfg.optim, cfg.train
    opt = torch.optim.Adam(net.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: lr_multiplier(
            s, warmup_steps=o.warmup_steps, max_steps=t.max_steps, schedule=o.schedule, min_ratio=o.min_lr_ratio
        ),
    )
    L = cfg.task.seq_len()
    ends, losses, gen_s = [], [], 0.0
    net.train()
    for i in range(t.max_steps):
        g0 = time.process_time()
        batch = task.materialize(BatchKey(("train", i, 0, L, t.batch_size)), device)
        gen_s += time.process_time() - g0
        out, _ = net(batch)
        loss = task.loss(out, batch)
        loss.backward()
        if o.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), o.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        window.stamp(ends)
    return ends, to_floats(losses), gen_s


def bench_config(args: argparse.Namespace, d_model: int, steps: int, cuda: bool, out_dir: str):
    """The RunConfig every path of these benchmarks trains: ``args``' task, model, batch size and ``--set``
    overrides at ``d_model`` for ``steps`` steps, validation only after the last, no test split, no W&B."""
    return build_config(
        {},
        [
            f"task={args.task}",
            f"model={args.model}",
            f"model.d_model={d_model}",
            f"train.batch_size={args.batch_size}",
            f"train.max_steps={steps}",
            f"train.val_every={steps}",
            "train.val_batches=1",
            "eval.test=false",
            "tracking.wandb=off",
            f"train.accelerator={'gpu' if cuda else 'cpu'}",
            f"out_dir={out_dir}",
            *args.set,
        ],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="copy")
    ap.add_argument("--model", default="lstm")
    ap.add_argument("--d-models", default="64,256", help="comma-separated widths")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--set", nargs="*", default=["task.delay=20"], help="extra RunConfig overrides")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where all three paths train")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("error: --device: cuda requested but no CUDA device is visible; use --device cpu", file=sys.stderr)
        raise SystemExit(2)
    if args.warmup + 2 > args.steps:
        print(f"error: --warmup: {args.warmup} leaves no timed steps of --steps {args.steps}", file=sys.stderr)
        raise SystemExit(2)
    where = torch.cuda.get_device_name() if cuda else "CPU"
    print(
        f"{where}: per-step {'host ' if cuda else ''}CPU ms (wall-clock "
        f"{'mean over a synchronised window' if cuda else 'median'} in brackets); ratios against the plain loop"
    )
    print(f"{'d_model':>7} {'plain':>15} {'bare Lightning':>22} {'seqbench':>22} {'data gen':>9}")
    for d in [int(x) for x in args.d_models.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = bench_config(args, d, args.steps, cuda, tmp)
            window = Window(cuda, args.warmup, args.steps)
            res: dict[str, list[tuple[float, float]]] = {"plain": [], "bare": [], "seqbench": []}
            gen, diff = [], 0.0
            for _ in range(args.rounds):
                ends_s, loss_s = seqbench_run(cfg, window)
                ends_b, loss_b = bare_lightning_run(cfg, window)
                ends_p, loss_p, gen_s = plain_run(cfg, window)
                res["seqbench"].append(step_times(ends_s, args.warmup, cuda))
                res["bare"].append(step_times(ends_b, args.warmup, cuda))
                res["plain"].append(step_times(ends_p, args.warmup, cuda))
                gen.append(gen_s / (ends_p[-1][1] - ends_p[0][1]) * (len(ends_p) - 1) / len(ends_p))
                diff = max(
                    diff, *(abs(a - b) for a, b in zip(loss_s, loss_p)), *(abs(a - b) for a, b in zip(loss_b, loss_p))
                )
            # the fastest round of each: the one least disturbed by other processes
            best = {k: (min(r[1] for r in v), min(r[0] for r in v)) for k, v in res.items()}
            pc, pw = best["plain"]

            def cell(k: str, best: dict = best, pc: float = pc, pw: float = pw) -> str:
                c, w = best[k]
                return f"{c * 1e3:.2f} ({w * 1e3:.2f}) x{c / pc:.3f} [x{w / pw:.3f}]"

            fpt = flops_per_token(cfg, build_task(cfg).spec)
            rate = (
                f"   {fpt * cfg.train.batch_size * cfg.task.mean_train_positions() / (pw if cuda else pc) / 1e9:.1f}"
                " model GFLOP/s (plain)"
                if fpt
                else ""
            )
            print(
                f"{d:>7} {pc * 1e3:>7.2f} ({pw * 1e3:.2f}) {cell('bare'):>22} {cell('seqbench'):>22} "
                f"{statistics.median(gen):>8.1%}   max |loss diff| {diff:.1e}{rate}",
                flush=True,
            )


if __name__ == "__main__":
    main()
