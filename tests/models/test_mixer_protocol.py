"""The ``Mixer`` protocol (``models/configs/mixer.py``): every shipped mixer implements it as written (its
constructor takes ``causal`` by keyword, its ``forward`` takes ``valid=None``, and padding never reaches a
real position's output), and the signature check below refuses a mixer that drops either. A plug-in
written before the protocol (no ``causal``, ``forward(x)``) still runs in the stack, adapted once at build
time with its parameter names kept; one that follows it gets ``causal`` and the padding mask. A stack's
config resolves its mixer once and keeps it, also across pickling."""

from __future__ import annotations

import inspect
import pickle

import pytest
import torch
from torch import nn

from seqbench.bench.config import build_config
from seqbench.bench.core.contract import Batch
from seqbench.bench.core.registry import MIXERS
from seqbench.models.base import build_model
from seqbench.models.configs.mixer import Mixer
from seqbench.models.s4d import S4D
from seqbench.models.stack import make_mixer
from seqbench.plugin import Mixer as ExportedMixer
from tests.models.model_probe import VOCAB, tiny_config, token_spec

torch.set_num_threads(1)
NAMES = MIXERS.names()
D, T = 16, 8

# What the protocol's own signatures ask for, read from it, so this test follows the protocol as written.
_INIT = inspect.signature(Mixer.__init__).parameters
KEYWORDS = [n for n, p in _INIT.items() if p.kind is p.KEYWORD_ONLY]  # ["causal"]
FORWARD = [n for n in inspect.signature(Mixer.forward).parameters if n not in ("self", "x")]  # ["valid"]


def protocol_problems(cls: type) -> list[str]:
    """What the signatures of ``cls`` lack of ``Mixer``'s: a positional ``d_model``, each keyword-only
    constructor argument (``causal``), each ``forward`` argument after ``x`` with its default (``valid=None``)."""
    problems = []
    init = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if not init or init[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        problems.append("__init__ takes no positional d_model")
    names = {p.name: p for p in init}
    for k in KEYWORDS:
        if k not in names or names[k].kind not in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            problems.append(f"__init__ takes no keyword {k}")
    forward = inspect.signature(cls.forward).parameters
    for k in FORWARD:
        want = inspect.signature(Mixer.forward).parameters[k].default
        if k not in forward or forward[k].default is not want:
            problems.append(f"forward takes no {k}={want!r}")
    return problems


def test_the_protocol_names_causal_and_valid_and_is_exported_without_torch():
    assert KEYWORDS == ["causal"] and FORWARD == ["valid"]
    assert ExportedMixer is Mixer  # seqbench.plugin re-exports it (tests/bench/test_plugins_lazy.py: no torch there)
    for word in ("causal", "valid", "<= t", "padding"):
        assert word in (Mixer.__doc__ or "")


@pytest.mark.parametrize("name", NAMES)
def test_every_shipped_mixer_has_the_protocol_signatures(name):
    assert protocol_problems(MIXERS.get(name).cls) == []


class NoCausal(S4D):
    """A shipped mixer with ``causal`` dropped from its constructor."""

    def __init__(self, d_model: int, d_state: int = 64):
        super().__init__(d_model, d_state)


class NoValid(S4D):
    """A shipped mixer whose ``forward`` lost ``valid``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x)


def test_the_signature_check_refuses_a_mixer_without_causal_or_valid():
    assert protocol_problems(NoCausal) == ["__init__ takes no keyword causal"]
    assert protocol_problems(NoValid) == ["forward takes no valid=None"]


def _padded() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (2, T, D), valid (2, T) with the second sequence 5 long, and x with only its padding changed."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, T, D, generator=g)
    valid = torch.arange(T)[None, :] < torch.tensor([T, 5])[:, None]  # (2, T)
    other = torch.where(valid[..., None], x, torch.randn(2, T, D, generator=g))  # padding changed only
    return x, valid, other


# every mixer, both forms (linear attention's non-causal form summed padded keys until Nov 28 2026)
@pytest.mark.parametrize("name, causal", [(n, c) for n in NAMES for c in (True, False)])
def test_padding_never_reaches_a_real_position(name, causal):
    """Built as the stack builds it, called with a padding mask: (B, T, d) out, finite, outputs at real
    positions unmoved when only padded inputs change, and an all-True mask the same as none."""
    torch.manual_seed(0)
    mixer = make_mixer(MIXERS.get(name), D, tiny_config("stack", mixer=name).mixer_args, causal).eval()
    x, valid, other = _padded()
    with torch.no_grad():
        a, b = mixer(x, valid=valid), mixer(other, valid=valid)
        full = torch.ones_like(valid)
        torch.testing.assert_close(mixer(x, valid=full), mixer(x, valid=None))
    assert a.shape == x.shape and torch.isfinite(a).all()
    torch.testing.assert_close(a[valid], b[valid], atol=1e-5, rtol=1e-4)


def test_the_stack_hands_the_padding_mask_to_its_mixer():
    """Non-causal attention in the stack: padded tokens would move the real outputs if the mask did not
    reach the mixer."""
    torch.manual_seed(0)
    net = build_model(
        tiny_config("stack", mixer="attention", mixer_args={"n_heads": 2}), token_spec(causal=False)
    ).eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, VOCAB, (2, T), generator=g)
    lengths = torch.tensor([T, 5])
    y = x.clone()
    y[1, 5:] = (y[1, 5:] + 1) % VOCAB
    with torch.no_grad():
        a = net(Batch(x=x, y=x, lengths=lengths))[0]
        b = net(Batch(x=y, y=y, lengths=lengths))[0]
    torch.testing.assert_close(a[1, :5], b[1, :5])


class OldShift(nn.Module):
    """A plug-in written before the protocol: no ``causal``, ``forward(x)``."""

    def __init__(self, d_model: int, shift: int = 1):
        super().__init__()
        self.shift, self.lin = shift, nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        past = nn.functional.pad(x, (0, 0, self.shift, 0))[:, : x.shape[1]]  # (B, T, d): x shifted back
        return self.lin(torch.cat([x, past], -1))


class NewShift(OldShift):
    """The same plug-in following the protocol; it records what it was given."""

    def __init__(self, d_model: int, shift: int = 1, *, causal: bool):
        super().__init__(d_model, shift)
        self.causal, self.seen = causal, []

    def forward(self, x, valid=None):
        self.seen.append(valid)
        return super().forward(x)


def _stack(mixer: str, *over: str):
    return build_config(
        ["model=stack", f"model.mixer={__name__}:{mixer}", "model.d_model=8", "model.n_layers=1", *over]
    )


def test_a_plugin_written_before_the_protocol_still_runs_with_its_parameter_names():
    net = build_model(_stack("OldShift").model, token_spec(causal=True))
    assert {k for k in net.state_dict() if ".mixer.f." in k} == {
        "backbone.blocks.0.mixer.f.lin.weight",
        "backbone.blocks.0.mixer.f.lin.bias",
    }  # no wrapper module: the runs of this plug-in recorded before the protocol still load
    x = torch.randint(0, VOCAB, (2, T))
    out = net(Batch(x=x, y=x, lengths=torch.tensor([T, 5])))[0]  # the mask is dropped for forward(x)
    assert out.shape == (2, T, 5)
    pickle.loads(pickle.dumps(net))  # the adaptation (a forward pre-hook) pickles, as ddp_spawn needs


def test_a_plugin_that_follows_the_protocol_gets_causal_and_the_mask():
    net = build_model(_stack("NewShift").model, token_spec(causal=False))
    mixer = net.backbone.blocks[0].mixer.f
    assert mixer.causal is False
    mixer.seen.clear()
    x = torch.randint(0, VOCAB, (2, T))
    lengths = torch.tensor([T, 5])
    net(Batch(x=x, y=x, lengths=lengths))
    assert len(mixer.seen) == 1 and torch.equal(mixer.seen[0], torch.arange(T)[None, :] < lengths[:, None])


def test_the_stack_config_resolves_its_mixer_once(monkeypatch):
    """One registry lookup and one validation of the mixer's config per validation of the stack's config;
    building a 3-layer stack, its FLOP count and its position signal add none."""
    calls = {"get": 0, "validate": 0}
    get, config_cls = MIXERS.get, MIXERS.get("mamba").config_cls
    validate = config_cls.model_validate

    def counting_get(name):
        calls["get"] += 1
        return get(name)

    def counting_validate(*args, **kwargs):
        calls["validate"] += 1
        return validate(*args, **kwargs)

    monkeypatch.setattr(MIXERS, "get", counting_get)
    monkeypatch.setattr(config_cls, "model_validate", counting_validate)
    cfg = tiny_config("stack", mixer="mamba", n_layers=3, mixer_args={"d_state": 4})
    assert calls == {"get": 1, "validate": 1}
    assert cfg.mixer_args == {**config_cls(name="mamba").args(), "d_state": 4}  # every default filled in
    build_model(cfg, token_spec(causal=True))
    cfg.forward_macs(token_spec(causal=True), 16, None), cfg.positions(), cfg.label()
    assert calls == {"get": 1, "validate": 1}


def test_a_stack_config_with_a_plugin_mixer_pickles():
    """The resolved mixer is left out of the pickle (a plug-in's config class is made at run time and pickle
    cannot find it) and resolved again on first use."""
    cfg = _stack("OldShift", "model.mixer_args.shift=2").model
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.mixer_config() == cfg.mixer_config()
    assert back.mixer_entry() is cfg.mixer_entry()
