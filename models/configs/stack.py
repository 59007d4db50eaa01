"""``stack``: one residual stack around any sequence mixer, so that only the mixer differs.

Zoology (Arora et al. 2023, ``LanguageModel`` around a ``sequence_mixer``) and MAD (Poli et al.
2024) compare mixers this way: the same embedding, norm placement, MLP and head around each one.
``model=stack model.mixer=mamba`` is a Mamba stack; ``model.mixer=attention`` is the Transformer
(``model=transformer`` keeps its own config and hash); ``model.mixer=pkg.module:Class`` is a
plug-in. Each block is ``Residual(mixer)`` then, with ``mlp=true``, ``Residual(MLP)``, with the
placements of ``models/configs/blocks.py`` (post / pre / rezero / none), so depth, norm placement
and warmup sweeps apply to every mixer.

``mixer_args`` are the mixer's own knobs, validated by its config (``models/configs/NAME.py``) or,
for a plug-in, by its ``Config`` class when it declares one; the resolved config records every
knob with its value, so the config hash names the whole mixer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.errors import UserError, validation_problems
from seqbench.bench.core.registry import MIXERS, MODELS, UnknownNameError
from seqbench.models.configs.base import Dropout, Layers, ModelConfig, head_macs, input_width
from seqbench.models.configs.blocks import IN_ATTENTION, NormKind, NormPosition, rope_problem

DEFAULT_MIXER = "attention"


@MODELS.config("stack")
class StackConfig(ModelConfig):
    """Residual stack around a sequence mixer (attention, mamba, s4d, linear_attention, hyena or a plug-in)."""

    name: Literal["stack"] = "stack"
    mixer: str = Field(
        DEFAULT_MIXER,
        min_length=1,
        description="sequence mixer: a name from `seqbench list` "
        "(mixers) or a plug-in class by import path, pkg.module:Class",
    )
    mixer_args: dict[str, Any] = Field(
        default_factory=dict,
        description="the mixer's own knobs, e.g. "
        "{d_state: 16}; validated by the mixer's config, every default filled in",
    )
    n_layers: Layers = 2
    dropout: Dropout = 0.0
    mlp: bool = Field(
        True,
        description="a feed-forward sublayer after each mixer (Transformer, Zoology, MAD); "
        "false = mixer blocks only (the Mamba paper's stack)",
    )
    d_ff: int | None = Field(None, ge=1, description="feed-forward width; null = 4 * d_model")
    norm_position: NormPosition = Field(
        "pre", description="residual placement: post (original), pre (+ final norm), rezero (alpha=0), none"
    )
    norm: NormKind = Field("layernorm", description="normalisation layer used by post/pre placement")
    pos_encoding: Literal["auto", "none", "sinusoidal", "learned", "rope", "alibi"] = Field(
        "auto",
        description="position signal; auto = sinusoidal for mixers that need one (attention, linear "
        "attention), none for those that order the sequence themselves (recurrences, convolutions); "
        "rope and alibi act inside attention (mixer=attention only)",
    )
    max_len: int = Field(2048, ge=1, description="positions a learned encoding has (longer inputs are refused)")

    def label(self) -> str:
        """``stack-mamba``; a plug-in by import path gives its class name (``stack-TokenShift``)."""
        return f"stack-{self.mixer.rpartition(':')[2]}"

    @field_validator("mixer_args", mode="after")
    @classmethod
    def _mixer_args(cls, args: dict[str, Any], info: Any) -> dict[str, Any]:
        mixer = info.data.get("mixer")
        if mixer is None:  # the mixer field failed; its own error says why
            return args
        config_cls = MIXERS.get(mixer).config_cls
        try:  # the context gives a mixer's validators the width it is built at (heads must divide it)
            return config_cls.model_validate(
                {**args, "name": mixer}, context={"d_model": info.data.get("d_model")}
            ).args()
        except ValidationError as e:
            own = [f for f in config_cls.model_fields if f != "name"]
            problems = validation_problems(e, prefix="model.mixer_args.", allowed_fields=lambda loc: own)
            raise ValueError("; ".join(problems)) from None

    @field_validator("mixer", mode="after")
    @classmethod
    def _known_mixer(cls, mixer: str) -> str:
        try:  # unknown names fail here with the list; an import path that does not resolve says why
            MIXERS.get(mixer)
        except (UnknownNameError, UserError) as e:
            raise ValueError(str(e)) from None
        return mixer

    @model_validator(mode="after")
    def _positions_inside_the_mixer(self):
        """rope and alibi live inside the mixer (``MixerConfig.inner_positions``): refuse the others."""
        if self.pos_encoding not in IN_ATTENTION:
            return self
        mixer = self.mixer_config()
        if self.pos_encoding not in mixer.inner_positions:
            takes = [m for m in MIXERS.names() if self.pos_encoding in MIXERS.get(m).config_cls.inner_positions]
            raise ValueError(
                f"model.pos_encoding: {self.pos_encoding} acts inside attention, and mixer {self.mixer} has "
                f"no attention; choose auto, none, sinusoidal or learned, or model.mixer={' or '.join(takes)}"
            )
        if self.pos_encoding == "rope":  # a mixer with rope has heads (their width must be even)
            problem = rope_problem(self.d_model, mixer.n_heads, "model.mixer_args.n_heads")
            if problem:
                raise ValueError(problem)
        return self

    def mixer_config(self) -> Any:
        """The mixer's validated config (its ``complexity``, ``needs_positions``, ``forward_macs``)."""
        return MIXERS.get(self.mixer).config_cls.model_validate(
            {**self.mixer_args, "name": self.mixer}, context={"d_model": self.d_model}
        )

    def positions(self) -> str:
        """The position signal, ``auto`` resolved (``models/configs/blocks.py`` says where each acts)."""
        if self.pos_encoding != "auto":
            return self.pos_encoding
        return "sinusoidal" if self.mixer_config().needs_positions else "none"

    def max_positions(self) -> int | None:
        return self.max_len if self.pos_encoding == "learned" else None

    def ff_width(self) -> int:
        return self.d_ff or 4 * self.d_model

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int | None:
        d, d_in = self.d_model, input_width(self, spec.vocab_size, spec.input_dim)
        mixer = self.mixer_config().forward_macs(d, T)
        if mixer is None:
            return None
        proj = T * d_in * d if d_in != d else 0
        mlp = 2 * T * d * self.ff_width() if self.mlp else 0
        return proj + self.n_layers * (mixer + mlp) + head_macs(spec, d, T)
