"""Temporal convolutional network: measured receptive field, the dependency warning, knobs."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch

from seqbench.bench.core.contract import Batch
from seqbench.models.configs.tcn import ReceptiveFieldWarning, receptive_field
from tests.models.model_probe import build, fingerprint, same, tiny_config, token_spec

torch.set_num_threads(1)


@pytest.mark.parametrize("kernel_size,n_levels", [(2, 1), (2, 3), (3, 2), (4, 2)])
def test_receptive_field_matches_the_gradient_footprint(kernel_size, n_levels):
    cfg = tiny_config("tcn", kernel_size=kernel_size, n_levels=n_levels, weight_norm=False)
    net = build(cfg, dataclasses.replace(token_spec(), dependency=0)).eval()
    T = receptive_field(kernel_size, n_levels) + 10
    x = torch.randn(1, T, 16, requires_grad=True)
    h, _ = net.backbone(x)
    h[0, -1].sum().backward()
    seen = (x.grad[0].abs().sum(-1) > 0).nonzero().flatten()
    assert net.backbone.receptive_field == receptive_field(kernel_size, n_levels)
    assert int(seen.min()) == T - net.backbone.receptive_field
    assert int(seen.max()) == T - 1


def test_warns_once_when_the_dependency_exceeds_the_receptive_field():
    cfg = tiny_config("tcn", kernel_size=2, n_levels=2)  # receptive field 7
    with pytest.warns(ReceptiveFieldWarning, match=r"receptive field 7 < task dependency 50.*model\.n_levels") as rec:
        build(cfg, dataclasses.replace(token_spec(), dependency=50))
    assert len([w for w in rec if issubclass(w.category, ReceptiveFieldWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReceptiveFieldWarning)
        build(cfg, dataclasses.replace(token_spec(), dependency=7))


def test_variable_lengths_leave_valid_steps_alone():
    net = build(tiny_config("tcn"), token_spec()).eval()
    x = torch.randint(0, 7, (2, 12))
    lengths = torch.tensor([12, 5])
    noisy = x.clone()
    noisy[1, 5:] = (noisy[1, 5:] + 1) % 7
    a, b = net(Batch(x=x, y=x, lengths=lengths))[0], net(Batch(x=noisy, y=x, lengths=lengths))[0]
    torch.testing.assert_close(a[1, :5], b[1, :5])


KNOBS = [
    ("d_model", 8),
    ("kernel_size", 3),
    ("n_levels", 3),
    ("dropout", 0.5),
    ("weight_norm", False),
    ("embedding", "onehot"),
]


@pytest.mark.parametrize("field,value", KNOBS, ids=[f"{f}={v}" for f, v in KNOBS])
def test_every_tcn_knob_reaches_the_model(field, value):
    x = torch.randint(0, 7, (3, 10))
    batch = Batch(x=x, y=x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReceptiveFieldWarning)
        base = fingerprint(build(tiny_config("tcn"), token_spec()), batch)
        other = fingerprint(build(tiny_config("tcn", **{field: value}), token_spec()), batch)
    assert not same(base, other)


def test_n_layers_is_refused_naming_the_depth_knob_and_the_fields():
    from seqbench.bench.config import build_config
    from seqbench.bench.core.errors import UserError

    with pytest.raises(UserError) as e:
        build_config({}, ["model=tcn", "model.n_layers=4"])
    assert str(e.value) == (
        "model.n_layers: a tcn has no n_layers; its depth is model.n_levels (block i has "
        "dilation 2^i); allowed: name, d_model, embedding, dropout, kernel_size, n_levels, "
        "weight_norm"
    )
    with pytest.raises(UserError, match="^model.n_layers: a tcn has no n_layers"):
        build_config({}, ["model=tcn", "model.n_layers=true"])  # not the number 1


def test_a_config_written_with_the_old_universal_n_layers_still_loads():
    # config.yaml of tcn runs made before models declared their own fields carries n_layers: 1
    from seqbench.bench.config import validate

    cfg = validate({"task": {"name": "adding", "length": 8}, "model": {"name": "tcn", "n_layers": 1, "n_levels": 3}})
    assert cfg.model.n_levels == 3 and "n_layers" not in cfg.model.model_dump()
