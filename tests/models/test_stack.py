"""The residual ``stack`` around a sequence mixer: with the attention mixer it is the Transformer (the
same parameters compute the same function), every shipped mixer passes the plug-in property checks
(``seqbench.testing``), and those checks catch a mixer that reads the future."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS
from seqbench.models.base import build_model
from seqbench.testing import check_mixer, check_model
from tests.models.model_probe import token_spec

torch.set_num_threads(1)
SIZES = ["model.d_model=16", "model.n_layers=2", "model.d_ff=32"]


def _models(position: str):
    spec = token_spec(causal=True)
    common = [*SIZES, f"model.norm_position={position}", "task=copy", "tracking.wandb=off"]
    transformer = build_model(build_config(["model=transformer", "model.n_heads=2", *common]).model, spec)
    stack = build_model(build_config(["model=stack", "model.mixer_args.n_heads=2", *common]).model, spec)
    return transformer, stack


def _stack_key(key: str) -> str:
    """A transformer parameter's name in the stack: layers -> blocks, self_attn -> mixer, ff -> mlp."""
    key = re.sub(r"^backbone\.stack\.layers\.(\d+)\.self_attn\.", r"backbone.blocks.\1.mixer.", key)
    key = re.sub(r"^backbone\.stack\.layers\.(\d+)\.ff\.", r"backbone.blocks.\1.mlp.", key)
    return key.replace("backbone.stack.final_norm", "backbone.final_norm")


@pytest.mark.parametrize("position", ["post", "pre", "rezero", "none"])
def test_the_attention_stack_is_the_transformer(position):
    transformer, stack = _models(position)
    theirs = {_stack_key(k): v for k, v in transformer.state_dict().items()}
    assert set(theirs) == set(stack.state_dict())  # the same parameters, named for their place in the stack
    stack.load_state_dict(theirs)
    if position == "rezero":  # alpha starts at 0 (every block the identity): move it so the blocks count
        for m in (transformer, stack):
            for name, p in m.named_parameters():
                if name.endswith("alpha"):
                    p.data.fill_(0.5)
    x = torch.randint(0, 7, (3, 10), generator=torch.Generator().manual_seed(0))
    transformer.eval(), stack.eval()
    torch.testing.assert_close(stack(Batch(x=x, y=x))[0], transformer(Batch(x=x, y=x))[0])


@pytest.mark.parametrize("mixer", MIXERS.names())
def test_every_shipped_mixer_passes_the_plugin_checks(mixer):
    check_mixer(mixer, d_model=16)
    check_model("stack", f"model.mixer={mixer}", "model.d_model=16", "model.n_layers=1")


class FutureLeak(nn.Module):
    """Causal but for one channel, which reads the last position: the leak a probe must catch."""

    def __init__(self, d_model: int):
        super().__init__()
        self.lin = nn.Linear(d_model, d_model)

    def forward(self, x):
        y = self.lin(torch.cumsum(x, 1))  # (B, T, d): causal
        return y + x[:, -1:, :1]  # every position sees the last input's first channel


def test_check_mixer_catches_an_injected_future_leak():
    with pytest.raises(AssertionError, match="reads the future"):
        check_mixer(FutureLeak)


def test_a_leaking_plugin_is_refused_before_training():
    cfg = build_config(["model=stack", f"model.mixer={__name__}:FutureLeak", "model.d_model=8", "tracking.wandb=off"])
    with pytest.raises(UserError, match=r"model.mixer: .*FutureLeak reads the future"):
        build_model(cfg.model, token_spec(causal=True))


def test_mixer_args_are_validated_by_the_mixer():
    with pytest.raises(UserError, match=r"model.mixer_args.n_heads: 3 does not divide model.d_model=16"):
        build_config(["model=stack", "model.d_model=16", "model.mixer_args.n_heads=3"])
    cfg = build_config(["model=stack", "model.d_model=16"])
    assert cfg.model.mixer_args == {"n_heads": 4}  # every default filled in: the hash names the whole mixer
    assert build_config(["model=stack", "model.d_model=16", "model.mixer_args={}"]).config_hash() == cfg.config_hash()


@pytest.mark.parametrize("over", [["model.mixer=s4d"], ["model.mixer_args.n_heads=1"]])
def test_the_mixer_and_its_args_reach_the_stack(over):
    """``mixer`` and ``mixer_args`` (which tests/models/test_knobs_registry.py has no automatic alternative for):
    another mixer, or another value of one of its knobs, builds another function."""
    spec = token_spec(causal=True)
    common = ["model=stack", "model.d_model=16", "model.n_layers=1", "task=copy", "tracking.wandb=off"]
    x = torch.randint(0, 7, (2, 10), generator=torch.Generator().manual_seed(0))
    outs = []
    for extra in ([], over):
        torch.manual_seed(0)
        net = build_model(build_config([*common, *extra]).model, spec).eval()
        outs.append(net(Batch(x=x, y=x))[0])
    assert not torch.allclose(*outs)
