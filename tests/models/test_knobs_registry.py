"""Registry-wide: every field of every registered model config changes the built model.

A field counts as reaching the model when changing it changes the parameter shapes, the
module structure (repr), or the outputs for a fixed input and seed. New models are covered
the day they land; a field that does nothing fails here.
"""

from __future__ import annotations

import typing
from typing import get_args

import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.training.train import build_task
from seqbench.models.base import build_model
from tests.helpers import TINY_TASK, tiny_overrides

# Fields whose effect needs a setting other than the tiny default to show (field -> extra overrides).
CONTEXT = {
    "teacher_forcing_end": {"teacher_forcing": 1.0},
    "teacher_forcing_decay_steps": {"teacher_forcing_end": 0.0},
    "max_len": {"pos_encoding": "learned"},
}


def _alternative(field, default):
    ann = field.annotation
    args = typing.get_args(ann)
    if ann is bool:
        return not default
    lits = [a for a in args if not isinstance(a, type)] if typing.get_origin(ann) is typing.Literal else []
    if lits:
        return next(v for v in lits if v != default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default * 2 if default else 2  # doubling keeps divisibility rules (d_model % n_heads)
    if isinstance(default, float):
        return min(0.5, default * 0.5 + 0.3) if default < 1 else default * 2
    optional_lits = [v for a in args if typing.get_origin(a) is typing.Literal for v in typing.get_args(a)]
    if default is None and optional_lits:  # Literal[...] | None, None = "as another field": its last value
        return optional_lits[-1]
    if default is None and (float in args):
        return 0.25
    if default is None and (int in args):
        return 3
    return None


def _task_for(model_name: str) -> str:
    kinds = MODELS.get(model_name).config_cls.supported_kinds
    return next(
        t.name
        for t in TASKS
        if t.config_cls.facts.output_kind in kinds and t.name in TINY_TASK and "text" not in t.cls.__module__
    )


def _fingerprint(cfg, task, seed=0):
    torch.manual_seed(seed)
    net = build_model(cfg.model, task.spec)
    key = next(iter(task.loader("train", 4, n_batches=1)))
    batch = task.materialize(key, torch.device("cpu"))
    net.train()
    torch.manual_seed(1)
    out, _ = net(batch)
    net.eval()
    with torch.no_grad():
        out_eval, _ = net(batch)
    shapes = [tuple(p.shape) for p in net.parameters()]
    return shapes, repr(net), out.detach(), out_eval


# Covered elsewhere because they need a non-causal task or a training step to show:
EXEMPT = {
    "bidirectional": "tests/models/test_knobs.py::test_recurrent_width_depth_dropout_direction",
    "teacher_forcing": "tests/models/test_seq2seq.py (knob tests spy on the decoder inputs during training)",
    "teacher_forcing_end": "tests/models/test_seq2seq.py",
    "teacher_forcing_decay_steps": "tests/models/test_seq2seq.py",
    "decode": "tests/models/test_seq2seq.py (beam width spied on the beam call)",
    "tbptt": "tests/models/test_tbptt.py (the forward is the same by design; the gradient cut is tested there)",
}
CASES = [
    (m.name, f) for m in MODELS for f in m.config_cls.model_fields if f not in ("name", "embedding") and f not in EXEMPT
]


@pytest.mark.parametrize("model_name, field", CASES)
def test_every_model_field_reaches_the_model(model_name, field, tmp_path):
    fields = MODELS.get(model_name).config_cls.model_fields
    default = fields[field].default
    alt = _alternative(fields[field], default)
    if alt is None:
        pytest.skip(f"no automatic alternative for {field} (covered by the model's own tests)")
    task_name = _task_for(model_name)
    extra = {f"model.{k}": v for k, v in CONTEXT.get(field, {}).items() if k in fields}
    base = tiny_overrides(task_name, model_name, tmp_path, **extra)
    cfg_a = build_config({}, base)
    try:
        cfg_b = build_config({}, base + [f"model.{field}={alt}"])
    except UserError as e:
        # refusing a field outright is also honest (e.g. tcn's depth is n_levels, not n_layers)
        assert str(e).startswith(f"model.{field}:"), e
        return
    task = build_task(cfg_a)
    a, b = _fingerprint(cfg_a, task), _fingerprint(cfg_b, task)
    same_out = a[2].shape == b[2].shape and torch.allclose(a[2], b[2]) and torch.allclose(a[3], b[3])
    assert a[0] != b[0] or a[1] != b[1] or not same_out, f"model.{field}: {default!r} -> {alt!r} changed nothing"


SYNTHETIC_CASES = [
    (t.name, f) for t in TASKS if "synthetic" in t.cls.__module__ for f in t.config_cls.model_fields if f != "name"
]


@pytest.mark.parametrize("task_name, field", SYNTHETIC_CASES)
def test_every_synthetic_task_field_changes_the_data(task_name, field, tmp_path):
    """(Text tasks' fields are covered in tests/tasks/test_sentiment.py, test_lm.py, test_text_data.py.)"""
    model = next(
        m.name for m in MODELS if TASKS.get(task_name).config_cls.facts.output_kind in m.config_cls.supported_kinds
    )
    base = tiny_overrides(task_name, model, tmp_path)
    cfg_a = build_config({}, base)
    current = getattr(cfg_a.task, field)
    choices = get_args(type(cfg_a.task).model_fields[field].annotation)  # a Literal's other values
    alts = [c for c in choices if c != current] if isinstance(current, str) else [current * 2, current + 1, current - 1]
    for alt in alts:
        try:
            cfg_b = build_config({}, base + [f"task.{field}={alt}"])
            break
        except UserError:
            continue
    else:
        pytest.fail(f"task.{field}: no valid alternative to {current}")
    a, b = build_task(cfg_a), build_task(cfg_b)

    def data(task):  # a few batches: a task that draws its length per batch may draw one a knob cannot touch
        batches = [task.materialize(k, torch.device("cpu")) for k in task.loader("train", 4, n_batches=4)]
        return task.spec, [b.x for b in batches], [b.y for b in batches]

    def same(u, v):
        return all(p.shape == q.shape and torch.equal(p, q) for p, q in zip(u, v))

    (sa, xa, ya), (sb, xb, yb) = data(a), data(b)
    changed = sa != sb or not (same(xa, xb) and same(ya, yb))
    assert changed, f"task.{field}: {current} -> {alt} changed neither the spec nor the data"
