"""Gradient diagnostics (``diagnostics.gradients=true``): why a model does or does not learn.

At step 0 and every ``diagnostics.every`` optimizer steps the callback records, into
``<run_dir>/diagnostics.json`` (and W&B scalars under ``diag/``):

- **gradient through time**: ``||dL/dx_t||`` for every position t, where x is the sequence
  the backbone reads (the input encoder's output, (B, T, d_in)) and L is the task's loss
  restricted to the *loss positions*. It is the total derivative along every path from
  position t to the loss, so for a single-layer RNN it equals ``W_ih^T diag(f'(a_t)) dL/dh_t``
  and carries the product of recurrent Jacobians prod_k dh_{k+1}/dh_k that vanishes or
  explodes (Pascanu et al. 2013); for attention and convolutions it shows how far back the
  loss still reaches. Why the input and not the backbone's output h: the gradient with
  respect to the output tensor h_t is only the head's local gradient at t (zero wherever no
  loss is taken); the through-time part lives inside the fused cuDNN/ATen kernel. One
  zero-valued leaf added to the backbone's input on recording steps exposes the total
  derivative without per-step hooks, so fused kernels stay in use and the values are
  unchanged. Costs one extra backward pass per record.
- **distance** of position t from the loss positions (``loss_positions``): the score mask
  (``Batch.score_mask``; else every position whose target is not IGNORE; pooled outputs: the
  last valid position). On causal tasks distance(t) = s - t for the nearest loss position
  s >= t (positions after the last loss position are left out); on non-causal tasks
  distance(t) = min |s - t|. Copy: recall positions at distance 0, the last blank before
  them at 1, ..., the first symbol at ``delay + n_symbols``. Pooled tasks with mean/max/
  attention pooling still measure from the last position (a reference, not the only path).
- **W_hh spectral norm**: largest singular value of every parameter named ``weight_hh_l<k>``
  (fused recurrent layers; LSTM/GRU store their gates stacked, 4H x H / 3H x H).
- **layer gradient norms**: L2 norm of the gradients per layer, grouped by module path
  (``layer_group``), and the **global norm before clipping** (Lightning calls
  ``on_before_optimizer_step`` after backward and AMP unscaling, before gradient clipping).

The file's layout is typed once in ``bench.core.diagnostics_format`` (``Record``), which this writer and
the dashboard's reader share.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn

from seqbench.bench.core.artifacts import atomic_write
from seqbench.bench.core.contract import IGNORE, Batch, OutputKind, TaskSpec
from seqbench.bench.core.diagnostics_format import FILENAME, DiagnosticsFile, Record, ThroughTime, read_diagnostics

_RNN_PARAM = re.compile(r"^(weight|bias)_(ih|hh|hr)_l(\d+)(_reverse)?$")
DEFINITIONS = {
    "through_time": "mean ||dL/dx_t|| over (sequence, position) pairs at each distance from the loss positions; "
    "x = backbone input, L = loss at the loss positions only",
    "by_position": "mean over the batch of ||dL/dx_t|| at each position t",
    "distance": "causal tasks: s - t for the nearest loss position s >= t; non-causal: min |s - t|",
    "w_hh_spectral_norm": "largest singular value of each weight_hh_l<k> (gates stacked for LSTM/GRU)",
    "layer_grad_norm": "L2 norm of parameter gradients per layer group (module path), before clipping",
    "global_grad_norm": "L2 norm of all gradients before clipping (what optim.grad_clip compares to)",
}


def layer_group(name: str) -> str:
    """Layer a parameter belongs to, from its module path.

    ``backbone.stack.layers.3.ff.w1.weight`` -> ``backbone.stack.layers.3`` (first numbered
    container); ``backbone.rnn.weight_hh_l1_reverse`` -> ``backbone.rnn.l1`` (fused RNN layer);
    anything else -> its module (``head.weight`` -> ``head``).
    """
    parts = name.removeprefix("_orig_mod.").split(".")
    for i, p in enumerate(parts[:-1]):
        if p.isdigit():
            return ".".join(parts[: i + 1])
    m = _RNN_PARAM.match(parts[-1])
    if m:
        return ".".join(parts[:-1] + [f"l{m.group(3)}"])
    return ".".join(parts[:-1]) or parts[0]


def loss_positions(batch: Batch, spec: TaskSpec, T: int) -> torch.Tensor:
    """(B, T) bool: where the loss is taken (see the module docstring)."""
    if spec.output_kind is OutputKind.TOKENS:
        if batch.score_mask is not None:
            return batch.score_mask.bool()
        return batch.y != IGNORE
    B = batch.x.shape[0]
    last = (
        torch.full((B,), T - 1, device=batch.x.device)
        if batch.lengths is None
        else (batch.lengths.to(batch.x.device) - 1).clamp_min(0)
    )
    mask = torch.zeros(B, T, dtype=torch.bool, device=batch.x.device)
    mask[torch.arange(B, device=mask.device), last] = True
    return mask


def distances(mask: torch.Tensor, causal: bool) -> torch.Tensor:
    """(B, T) long distance of each position from the loss positions in ``mask``; -1 where none applies."""
    B, T = mask.shape
    pos = torch.arange(T, device=mask.device).expand(B, T)
    big = 2 * T + 1
    nxt = torch.where(mask, pos, torch.full_like(pos, big))
    nxt = nxt.flip(1).cummin(1).values.flip(1)  # (B, T) nearest loss position at or after t
    d = nxt - pos
    if not causal:
        prv = torch.where(mask, pos, torch.full_like(pos, -big)).cummax(1).values  # at or before t
        d = torch.minimum(d, pos - prv)
    return torch.where(d < T, d, torch.full_like(d, -1))


def through_time(
    grad: torch.Tensor, mask: torch.Tensor, causal: bool, lengths: torch.Tensor | None = None
) -> ThroughTime:
    """Aggregate ||grad[b, t]|| by distance from the loss positions; grad is (B, T, d)."""
    B, T, _ = grad.shape
    norms = grad.detach().float().norm(dim=-1)  # (B, T)
    d = distances(mask, causal)
    if lengths is not None:
        d = d.masked_fill(torch.arange(T, device=d.device)[None, :] >= lengths.to(d.device)[:, None], -1)
    keep = d >= 0
    n = int(d.max().item()) + 1 if keep.any() else 0
    count = torch.bincount(d[keep], minlength=n).double()
    total = torch.bincount(d[keep], weights=norms[keep].double(), minlength=n)
    hit = count > 0
    return ThroughTime(
        distance=torch.arange(n)[hit.cpu()].tolist(),
        grad_norm=(total[hit] / count[hit]).tolist(),
        count=count[hit].long().tolist(),
        by_position=norms.mean(0).tolist(),
    )


def spectral_norms(net: nn.Module) -> dict[str, float]:
    """Largest singular value of every recurrent matrix ``weight_hh_l<k>``."""
    out = {}
    for name, p in net.named_parameters():
        if name.rsplit(".", 1)[-1].startswith("weight_hh"):
            out[name.removeprefix("_orig_mod.")] = float(torch.linalg.matrix_norm(p.detach().float(), ord=2))
    return out


def grad_norms(net: nn.Module) -> tuple[dict[str, float], float]:
    """Gradient L2 norm per ``layer_group`` (network order) and over all parameters."""
    sq: dict[str, float] = {}
    for name, p in net.named_parameters():
        if p.grad is not None:
            g = layer_group(name)
            sq[g] = sq.get(g, 0.0) + float(p.grad.detach().float().pow(2).sum())
    return {k: math.sqrt(v) for k, v in sq.items()}, math.sqrt(sum(sq.values()))


class GradientDiagnostics(pl.Callback):
    """Records the quantities above into ``<run_dir>/diagnostics.json`` (rank 0 only), in the format
    ``bench.core.diagnostics_format`` defines."""

    def __init__(self, every: int, run_dir: Path | str):
        self.every = every
        self.path = Path(run_dir) / FILENAME
        self.records: list[Record] = []
        self._handles: list[Any] = []
        self._rec: dict[str, Any] | None = None
        self._z: torch.Tensor | None = None
        self._seen: tuple[Batch, torch.Tensor] | None = None

    # -- hooks that expose the backbone input and the model output for one step ----------------
    def _arm(self, net: nn.Module) -> None:
        backbone = getattr(net, "backbone", None)
        if backbone is None:  # full models (seq2seq) have no single backbone input to measure
            return

        def add_leaf(_mod, args):
            if self._z is not None:
                return None
            self._z = torch.zeros_like(args[0], requires_grad=True)
            return (args[0] + self._z, *args[1:])  # value unchanged; d(x + z)/dz = I

        def keep_output(_mod, args, output):
            if self._seen is None:
                self._seen = (args[0], output[0])

        self._handles = [backbone.register_forward_pre_hook(add_leaf), net.register_forward_hook(keep_output)]

    def _disarm(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles, self._z, self._seen = [], None, None

    def on_train_start(self, trainer, pl_module) -> None:
        if self.path.exists():  # resumed run: keep the records from before the checkpoint
            old = read_diagnostics(self.path).records
            self.records = [r for r in old if r.step < trainer.global_step]

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_rank != 0 or trainer.global_step % self.every:
            return
        self._rec = {"step": trainer.global_step}
        self._arm(getattr(pl_module.net, "_orig_mod", pl_module.net))

    def on_before_backward(self, trainer, pl_module, loss) -> None:
        if self._rec is None:
            return
        self._rec["loss"] = float(loss.detach())
        if self._z is not None and self._seen is not None:
            batch, out = self._seen
            spec = pl_module.spec
            mask = loss_positions(batch, spec, self._z.shape[1])
            scored = batch
            if spec.output_kind is OutputKind.TOKENS:  # the loss at the loss positions only
                scored = dataclasses.replace(batch, y=batch.y.masked_fill(~mask, IGNORE))
            (g,) = torch.autograd.grad(pl_module.task.loss(out, scored), self._z, retain_graph=True, allow_unused=True)
            if g is not None:
                self._rec["through_time"] = through_time(g, mask, spec.causal, batch.lengths)
        self._disarm()

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        if self._rec is None:
            return
        rec, self._rec = self._rec, None
        self._disarm()
        net = pl_module.net
        rec["layer_grad_norm"], _ = grad_norms(net)
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        rec["global_grad_norm"] = math.sqrt(sum(float(p.grad.detach().float().pow(2).sum()) for p in params))
        rec["w_hh_spectral_norm"] = spectral_norms(net)
        record = Record(**rec)
        self.records.append(record)
        atomic_write(self.path, DiagnosticsFile(definitions=DEFINITIONS, records=self.records).to_text())
        if trainer.logger is not None:
            trainer.logger.log_metrics(scalars(record), step=trainer.global_step)

    def on_train_end(self, trainer, pl_module) -> None:
        self._disarm()
        self._rec = None


def scalars(rec: Record) -> dict[str, float]:
    """The W&B view of one record: norms, spectral norms and the through-time curve at 0, 1, 2, 4, ..."""
    out = {"diag/global_grad_norm": rec.global_grad_norm}
    out.update({f"diag/grad_norm/{k}": v for k, v in rec.layer_grad_norm.items()})
    out.update({f"diag/w_hh_sigma_max/{k}": v for k, v in rec.w_hh_spectral_norm.items()})
    tt = rec.through_time
    if tt and tt.distance:
        by_d = dict(zip(tt.distance, tt.grad_norm))
        k = 0
        while k <= max(by_d):
            if k in by_d:
                out[f"diag/grad_through_time/d{k}"] = by_d[k]
            k = 1 if k == 0 else 2 * k
    return out
