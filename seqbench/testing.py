"""Property checks for plug-in authors: the checks seqbench's own registry-wide tests run on every
shipped mixer, model and task, to run in a plug-in's own CI::

    from seqbench.testing import check_mixer, check_model, check_task

    def test_my_mixer():
        check_mixer(MyMixer, d_model=16, d_state=8)   # the class and its mixer_args

Each raises ``AssertionError`` naming the property that failed, and returns None when all hold.
"""

from __future__ import annotations

from typing import Any

import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch, OutputKind, TaskSpec
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS
from seqbench.bench.plugins import register
from seqbench.models.base import build_model
from seqbench.models.stack import build_mixer, probe_mixer

__all__ = ["check_mixer", "check_model", "check_task"]


def check_mixer(cls: type | str, d_model: int = 16, T: int = 12, **mixer_args: Any) -> None:
    """A mixer class (or a registered name / import path) built as the stack builds it (the
    ``seqbench.plugin.Mixer`` protocol: ``Cls(d_model, causal=True, **mixer_args)``, ``causal`` left out
    for an older plug-in whose constructor does not take it): (B, T, d_model) out, finite; causal
    (outputs up to t never move when only later inputs change, at every t); gradients reach every
    parameter and are finite. The probe part is what the stack applies to a plug-in before training."""
    name = _mixer_name(cls)
    args = MIXERS.get(name).config_cls.model_validate({**mixer_args, "name": name}, context={"d_model": d_model})
    try:
        module = build_mixer(name, d_model, args.args(), causal=True)
    except UserError as e:  # a plug-in refused by the stack's probe: the same words
        raise AssertionError(str(e)) from None
    problem = probe_mixer(module, d_model, causal=True, T=T, cut=T // 2)
    assert problem is None, f"{name}: {problem}"
    x = torch.randn(3, T, d_model, generator=torch.Generator().manual_seed(1))
    module.eval()
    with torch.no_grad():
        base = module(x)
        for t in range(T - 1):  # causality at every cut, not only the probe's
            y = x.clone()
            y[:, t + 1 :] += 1.0
            moved = (module(y)[:, : t + 1] - base[:, : t + 1]).abs().max().item()
            assert moved <= 1e-4, (
                f"{name}: output at positions <= {t} moved by {moved:.2e} when only later inputs changed"
            )
    module.train()
    x.requires_grad_(True)
    module(x).square().mean().backward()
    for pname, p in module.named_parameters():
        assert p.grad is not None, f"{name}: parameter {pname} gets no gradient"
        assert torch.isfinite(p.grad).all(), f"{name}: parameter {pname} has a non-finite gradient"
    assert x.grad is not None and torch.isfinite(x.grad).all(), f"{name}: no finite gradient to the input"


def _mixer_name(cls: type | str) -> str:
    if isinstance(cls, str):
        MIXERS.get(cls)
        return cls
    name = next((e.name for e in MIXERS if e._cls is cls), None)
    if name is None:
        name = f"{cls.__module__}:{cls.__qualname__}"
        register(MIXERS, name, cls, f"seqbench.testing.check_mixer({cls.__qualname__})")
    return name


def check_model(model: str, *overrides: str, T: int = 12) -> None:
    """A model (a registered name or ``pkg.module:Class``), with ``model.*`` overrides, on a causal
    per-step task: (B, T, classes) logits; causal (outputs before t ignore inputs after t); finite
    gradients to every parameter."""
    cfg = build_config(["task=copy", f"model={model}", "tracking.wandb=off", *overrides]).model
    spec = TaskSpec(OutputKind.TOKENS, n_classes=5, causal=True, vocab_size=7, dependency=4)
    torch.manual_seed(0)
    net = build_model(cfg, spec).eval()
    x = torch.randint(0, 7, (3, T), generator=torch.Generator().manual_seed(0))
    out = net(Batch(x=x, y=x))[0]
    assert out.shape == (3, T, 5), f"{model}: logits {tuple(out.shape)}, expected (3, {T}, 5)"
    cut = T // 2
    y = x.clone()
    y[:, cut + 1 :] = (y[:, cut + 1 :] + 1) % 7
    moved = (net(Batch(x=y, y=y))[0][:, : cut + 1] - out[:, : cut + 1]).abs().max().item()
    assert moved <= 1e-5, f"{model}: outputs up to {cut} moved by {moved:.2e} when only later inputs changed"
    net.train()
    net(Batch(x=x, y=x))[0].logsumexp(-1).mean().backward()
    for pname, p in net.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), (
            f"{model}: parameter {pname} gets no finite gradient"
        )


def check_task(task: str, *overrides: str) -> None:
    """A task (a registered name or ``pkg.module:Class``): batches are rebuilt from (seed, split,
    index) (the same twice, different across splits and seeds); the spec follows the declared facts;
    the memoryless baseline reports the primary metric and is not itself "solved"."""
    from seqbench.bench.training.module import build_task  # the training floor: imported on use

    def first(seed: int, split: str = "train") -> Batch:
        t = build_task(build_config([f"task={task}", f"seed={seed}", "tracking.wandb=off", *overrides]))
        return t.materialize(next(iter(t.loader(split, 4, n_batches=1))), torch.device("cpu"))

    a, b = first(0), first(0)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y), f"{task}: the same (seed, split, index) gave two batches"
    assert not torch.equal(first(0, "val").x, a.x), f"{task}: train and val batches are the same"
    assert not torch.equal(first(1).x, a.x), f"{task}: seeds 0 and 1 gave the same batch"
    t = build_task(build_config([f"task={task}", "tracking.wandb=off", *overrides]))
    facts = t.cfg.facts
    assert (t.spec.output_kind, t.spec.causal) == (facts.output_kind, facts.causal), f"{task}: spec differs from facts"
    base = t.baseline()
    assert facts.primary in base, f"{task}: baseline() lacks the primary metric {facts.primary!r}"
    assert not t.solved({f"val/{facts.primary}": base[facts.primary]}), (
        f"{task}: the memoryless baseline counts as solved"
    )
