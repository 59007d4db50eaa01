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
knob with its value, so the config hash names the whole mixer. The mixer is resolved and its config
validated once per validation of this config and kept on it (``mixer_entry``, ``mixer_config``): the
stack's build, its FLOP count and its position signal read them, never the registry again. The mixer
itself is built and called by the ``Mixer`` protocol (``models/configs/mixer.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.errors import UserError, validation_problems
from seqbench.bench.core.registry import MIXERS, MODELS, Entry, UnknownNameError
from seqbench.models.configs.base import Dropout, Layers, ModelConfig, head_macs, input_width
from seqbench.models.configs.blocks import IN_ATTENTION, NormKind, NormPosition, rope_problem
from seqbench.models.configs.mixer import MixerConfig

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

    # The mixer, resolved once per validation (``_resolve_mixer``): its registry entry (class, origin) and its
    # validated config; building the stack, counting FLOPs and choosing positions read these.
    _mixer_entry: Entry[Any] | None = PrivateAttr(None)
    _mixer_config: MixerConfig | None = PrivateAttr(None)

    @field_validator("mixer", mode="after")
    @classmethod
    def _known_mixer(cls, mixer: str) -> str:
        """An unknown name is refused here, beside the other fields' errors, with the list and the nearest
        match; an import path is imported and registered (or says why it cannot be). A registered name is
        only checked: ``_resolve_mixer`` looks it up, once the other fields are valid."""
        if mixer in MIXERS.names():
            return mixer
        try:
            MIXERS.get(mixer)
        except (UnknownNameError, UserError) as e:
            raise ValueError(str(e)) from None
        return mixer

    @model_validator(mode="after")
    def _resolve_mixer(self):
        """Resolve ``mixer`` (a name, or an import path imported and registered here) and validate
        ``mixer_args`` by the mixer's config, once, keeping both (``mixer_entry``, ``mixer_config``).

        ``mixer_args`` is then what that config made of it, every default filled in (the config hash names
        the whole mixer). The field is frozen; it is set here, inside its own validation, where it gets its
        final value. The width is in the validation context (heads must divide it), so this runs after the
        fields, ``d_model`` among them, were validated."""
        _, config = self._resolved()
        object.__setattr__(self, "mixer_args", config.args())  # frozen field, final value (docstring)
        self._check_inner_positions(config)
        return self

    def _resolved(self) -> tuple[Entry[Any], MixerConfig]:
        """The mixer's entry and validated config, looked up at the first call of a validated config (or of
        one unpickled: ``__getstate__``), then kept."""
        if self._mixer_entry is not None and self._mixer_config is not None:
            return self._mixer_entry, self._mixer_config
        try:  # unknown names fail here with the list; an import path that does not resolve says why
            entry = MIXERS.get(self.mixer)
        except (UnknownNameError, UserError) as e:
            raise ValueError(f"model.mixer: {e}") from None
        try:  # the context gives a mixer's validators the width it is built at (heads must divide it)
            config = entry.config_cls.model_validate(
                {**self.mixer_args, "name": self.mixer}, context={"d_model": self.d_model}
            )
        except ValidationError as e:
            own = [f for f in entry.config_cls.model_fields if f != "name"]
            problems = validation_problems(e, prefix="model.mixer_args.", allowed_fields=lambda loc: own)
            raise ValueError("; ".join(problems)) from None
        self._mixer_entry, self._mixer_config = entry, config
        return entry, config

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the resolved mixer (resolved again on first use): a plug-in's config class is made
        at run time (``bench/plugins.py``) and pickle cannot find it by name, and ``ddp_spawn`` pickles the
        config with the model."""
        state = super().__getstate__()
        private = {**(state.get("__pydantic_private__") or {}), "_mixer_entry": None, "_mixer_config": None}
        return {**state, "__pydantic_private__": private}

    def _check_inner_positions(self, mixer: MixerConfig) -> None:
        """rope and alibi live inside the mixer (``MixerConfig.inner_positions``): refuse the others."""
        if self.pos_encoding not in IN_ATTENTION:
            return
        if self.pos_encoding not in mixer.inner_positions:
            takes = [m for m in MIXERS.names() if self.pos_encoding in MIXERS.get(m).config_cls.inner_positions]
            raise ValueError(
                f"model.pos_encoding: {self.pos_encoding} acts inside attention, and mixer {self.mixer} has "
                f"no attention; choose auto, none, sinusoidal or learned, or model.mixer={' or '.join(takes)}"
            )
        if self.pos_encoding == "rope":  # a mixer with rope has heads (their width must be even)
            problem = rope_problem(self.d_model, mixer.args()["n_heads"], "model.mixer_args.n_heads")
            if problem:
                raise ValueError(problem)

    def mixer_entry(self) -> Entry[Any]:
        """The mixer's registry entry: its class (``cls``, imported on first use) and where it came from
        (``origin``: ``seqbench`` or the plug-in's entry point or import path)."""
        return self._resolved()[0]

    def mixer_config(self) -> MixerConfig:
        """The mixer's validated config (its ``complexity``, ``needs_positions``, ``forward_macs``)."""
        return self._resolved()[1]

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
