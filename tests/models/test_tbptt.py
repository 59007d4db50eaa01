"""``model.tbptt``: truncated backpropagation through time for the recurrent models.

The forward values are the whole sequence's; the gradient of a loss at step t reaches the inputs of
its own chunk (from ``t - t % k``) and none before; models without a recurrence refuse the field."""

from __future__ import annotations

import pytest
import torch

from seqbench.bench.config import build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS
from seqbench.bench.training.module import build_task
from seqbench.models.base import build_model

RECURRENT = ["rnn", "irnn", "lstm", "gru"]


def _backbone(model: str, tbptt: int | None, n_layers: int = 2):
    torch.manual_seed(0)
    cfg = build_config({}, ["task=adding", f"model={model}", "model.d_model=8", f"model.n_layers={n_layers}"])
    spec = build_task(cfg).spec
    full = build_model(cfg.model, spec).backbone
    cut = build_model(MODELS.get(model).config_cls(**{**cfg.model.model_dump(), "tbptt": tbptt}), spec).backbone
    cut.load_state_dict(full.state_dict())
    return full, cut


@pytest.mark.parametrize("model", RECURRENT)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_forward_values_are_the_untruncated_ones(model, k):
    full, cut = _backbone(model, k)
    x = torch.randn(3, 11, 2)
    h_full, s_full = full(x)
    h_cut, s_cut = cut(x)
    torch.testing.assert_close(h_cut, h_full)
    for a, b in zip(s_cut if isinstance(s_cut, tuple) else [s_cut], s_full if isinstance(s_full, tuple) else [s_full]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("model", RECURRENT)
def test_forward_values_with_lengths_and_a_carried_state(model):
    full, cut = _backbone(model, 3)
    x, lengths = torch.randn(4, 10, 2), torch.tensor([10, 2, 7, 3])  # rows that end before, at and after a chunk
    h0 = full(torch.randn(4, 5, 2))[1]  # a state carried in from an earlier batch
    h_full, s_full = full(x, lengths, h0)
    h_cut, s_cut = cut(x, lengths, h0)
    torch.testing.assert_close(h_cut, h_full)
    for a, b in zip(s_cut if isinstance(s_cut, tuple) else [s_cut], s_full if isinstance(s_full, tuple) else [s_full]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("model", RECURRENT)
def test_gradient_stops_at_the_chunk_start(model):
    k, T, t = 4, 14, 10  # the loss at step 10 lies in the chunk [8, 12)
    full, cut = _backbone(model, k)
    for net, first in ((cut, t - t % k), (full, 0)):
        x = torch.randn(2, T, 2, requires_grad=True)
        h, _ = net(x)
        h[:, t].sum().backward()
        reach = x.grad.abs().sum(dim=(0, 2))  # (T,)
        assert (reach[:first] == 0).all(), f"{model}: gradient before step {first}"
        assert (reach[first : t + 1] > 0).all(), f"{model}: no gradient inside the window"
        assert (reach[t + 1 :] == 0).all()  # causal: later inputs never matter


def test_no_truncation_when_the_window_covers_the_sequence():
    full, cut = _backbone("lstm", 20)
    x = torch.randn(2, 12, 2, requires_grad=True)
    cut(x)[0][:, -1].sum().backward()
    assert (x.grad.abs().sum(dim=(0, 2)) > 0).all()


@pytest.mark.parametrize("model", ["transformer", "tcn"])
def test_a_model_without_a_recurrence_refuses_it(model):
    with pytest.raises(UserError, match=rf"^model\.tbptt: unknown field for model {model} \((rnn|irnn|lstm|gru)"):
        build_config({}, [f"model={model}", "model.tbptt=8"])


@pytest.mark.parametrize("value, says", [(0, "greater than or equal to 1"), (-3, "greater than or equal to 1")])
def test_the_window_is_at_least_one_step(value, says):
    with pytest.raises(UserError, match=rf"model\.tbptt.*{says}"):
        build_config({}, ["model=lstm", f"model.tbptt={value}"])


def test_bidirectional_is_refused():
    with pytest.raises(UserError, match=r"model\.tbptt: 4 truncates a left-to-right recurrence.*bidirectional=false"):
        build_config({}, ["task=adding", "model=lstm", "model.bidirectional=true", "model.tbptt=4"])


def test_unset_keeps_the_config_hash():
    plain = build_config({}, ["model=lstm"])
    assert build_config({}, ["model=lstm", "model.tbptt=null"]).config_hash() == plain.config_hash()
    assert build_config({}, ["model=lstm", "model.tbptt=8"]).config_hash() != plain.config_hash()
