"""Every registered model on every compatible task: shapes, backward, two optimizer steps.

Parametrized over the registries, so a new task or model is covered the day it lands.
"""

from __future__ import annotations

import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import OutputKind
from seqbench.bench.training.module import SeqModule
from seqbench.bench.training.train import build_task
from tests.helpers import compatible_pairs, tiny_overrides

PAIRS = compatible_pairs()


def _first_batch(task, module):
    key = next(iter(task.loader("train", 4, n_batches=1)))
    return task.materialize(key, torch.device("cpu"))


@pytest.mark.parametrize("task_name, model_name", PAIRS)
def test_forward_backward_two_steps(task_name, model_name, tmp_path):
    cfg = build_config({}, tiny_overrides(task_name, model_name, tmp_path))
    task = build_task(cfg)
    module = SeqModule(cfg, task)
    opt = torch.optim.Adam(module.parameters(), lr=1e-2)
    batch = _first_batch(task, module)
    losses = []
    for _ in range(2):
        out, _ = module.net(batch)
        kind, B = task.spec.output_kind, batch.size
        if kind is OutputKind.TOKENS:
            assert out.shape == (B, batch.x.shape[1], task.spec.n_classes)
        elif kind is OutputKind.CLASS:
            assert out.shape == (B, task.spec.n_classes)
        elif kind is OutputKind.REGRESSION:
            assert out.shape == (B,)
        else:
            assert out.shape[:2] == batch.y.shape[:2] and out.shape[2] == task.spec.n_classes
        loss = task.loss(out, batch)
        assert torch.isfinite(loss)
        opt.zero_grad()
        loss.backward()
        grads = [p.grad for p in module.net.parameters() if p.requires_grad]
        assert any(g is not None and g.abs().sum() > 0 for g in grads)
        opt.step()
        losses.append(loss.item())
    assert losses[0] != losses[1]  # the step changed the model


@pytest.mark.parametrize("task_name, model_name", PAIRS[:: max(1, len(PAIRS) // 6)])
def test_full_run_through_the_harness(task_name, model_name, tmp_path):
    from seqbench.bench.training.train import train_run

    r = train_run(build_config({}, tiny_overrides(task_name, model_name, tmp_path)), progress=False)
    assert r["status"] == "completed" and r["steps"] == 2
    assert "val/loss" in r["final"] and "test/loss" in r["final"]
