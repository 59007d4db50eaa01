"""Recurrent backbones on PyTorch's fused kernels (cuDNN on GPU): rnn, irnn, lstm, gru.

- ``rnn``: Elman RNN, h_t = tanh(W_ih x_t + W_hh h_{t-1} + b); ``recurrent_init`` picks PyTorch's
  uniform W_hh (spectral radius about 1/sqrt(3)) or an orthogonal one (every singular value 1, so
  only tanh saturation can make the gradient through time vanish: Saxe et al. 2014, Henaff et al. 2016).
- ``irnn``: ReLU RNN with W_hh = I and zero bias at init (Le, Jaitly & Hinton 2015).
- ``lstm``: forget-gate bias ``forget_bias`` at init (PyTorch's default is 0, with which
  gradient through time decays about as fast as a tanh RNN's; 1 is Jozefowicz et al. 2015).
- ``gru``.
All support stacking (``n_layers``) and ``bidirectional`` (refused on causal tasks).

``tbptt: k`` trains with truncated backpropagation through time (Williams & Peng 1990's BPTT(k; k);
Sutskever 2013; Mikolov 2012): the recurrence runs over chunks of k steps and the hidden state is
detached between chunks, so the forward values are those of the whole sequence while a loss at step
t sends gradient back only to the start of its chunk (``t - t % k``), never more than k - 1 steps.
Only the recurrent models have the field: ``model.tbptt`` on any other model is refused.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.schema import ADDED_LATER
from seqbench.models.configs.base import Dropout, Layers, ModelConfig, head_macs, input_width

GATES = {"rnn": 1, "lstm": 4, "gru": 3}  # weight blocks per cell (i, f, g, o / r, z, n)


def rnn_stack_macs(d_in: int, hidden: int, n_layers: int, gates: int, directions: int = 1) -> int:
    """MACs per position of a stacked (bi)RNN: each cell multiplies input and hidden state by
    ``gates`` blocks of ``hidden`` rows; layers above the first read ``directions * hidden``."""
    total = 0
    for layer in range(n_layers):
        width = d_in if layer == 0 else directions * hidden
        total += directions * gates * hidden * (width + hidden)
    return total


class RecurrentConfig(ModelConfig):
    complexity = ("O(T·d²)", 1)  # T sequential steps of d x d products
    gates: ClassVar[int]

    n_layers: Layers = 1
    dropout: Dropout = 0.0
    bidirectional: bool = Field(False, description="run a second RNN right-to-left (non-causal tasks only)")
    # ADDED_LATER: unset, the config hash is the one runs recorded before the field existed
    tbptt: int | None = Field(
        None,
        ge=1,
        description="truncated BPTT window: run the recurrence in chunks of this many steps and detach "
        "the hidden state between them (same forward values; gradient reaches at most tbptt - 1 steps "
        "back); null = backpropagate through the whole sequence",
        json_schema_extra=ADDED_LATER,
    )

    @model_validator(mode="after")
    def _tbptt_one_direction(self) -> RecurrentConfig:
        if self.tbptt is not None and self.bidirectional:
            raise ValueError(
                f"model.tbptt: {self.tbptt} truncates a left-to-right recurrence, but a bidirectional "
                "model's right-to-left pass would restart at every chunk; set model.bidirectional=false "
                "or model.tbptt=null"
            )
        return self

    def sees_future(self) -> bool:
        return self.bidirectional

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        dirs = 2 if self.bidirectional else 1
        d_in = input_width(self, spec.vocab_size, spec.input_dim)
        body = T * rnn_stack_macs(d_in, self.d_model, self.n_layers, self.gates, dirs)
        return body + head_macs(spec, dirs * self.d_model, T)


class OrthogonalInitConfig(RecurrentConfig):
    """rnn, lstm and gru (not irnn, whose W_hh is the identity by definition)."""

    # ADDED_LATER: at "default" the config hash is the one runs recorded before the field existed.
    recurrent_init: Literal["default", "orthogonal"] = Field(
        "default",
        description="W_hh at init: PyTorch's uniform +-1/sqrt(d) (rnn: spectral radius ~0.58) or "
        "orthogonal per gate block (all singular values 1: a tanh RNN's gradient then vanishes only "
        "through tanh saturation)",
        json_schema_extra=ADDED_LATER,
    )


@MODELS.config("rnn")
class RNNConfig(OrthogonalInitConfig):
    """Vanilla (Elman) tanh RNN: the textbook case of vanishing gradients through time."""

    name: Literal["rnn"] = "rnn"
    gates = GATES["rnn"]


@MODELS.config("irnn")
class IRNNConfig(RecurrentConfig):
    """ReLU RNN with identity recurrent init and zero bias (Le, Jaitly & Hinton 2015)."""

    name: Literal["irnn"] = "irnn"
    gates = GATES["rnn"]
    recurrent_init_scale: float = Field(1.0, gt=0, description="W_hh = scale * I at init (Le et al. use 1)")


@MODELS.config("lstm")
class LSTMConfig(OrthogonalInitConfig):
    """Long short-term memory: gated cell state bridges long delays."""

    name: Literal["lstm"] = "lstm"
    gates = GATES["lstm"]
    forget_bias: float = Field(1.0, description="forget-gate bias at init (PyTorch default 0; 1 bridges longer delays)")


@MODELS.config("gru")
class GRUConfig(OrthogonalInitConfig):
    """Gated recurrent unit (Cho et al. 2014)."""

    name: Literal["gru"] = "gru"
    gates = GATES["gru"]
