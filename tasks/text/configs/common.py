"""Config fields every text task shares: where the text comes from, how it is split and tokenized."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.tasks.configs.base import TaskConfig
from seqbench.tasks.text.configs.tokenize import MIN_BPE_VOCAB


class TextTaskConfig(TaskConfig):
    """Subclasses set ``name`` and may change the defaults (e.g. char tokens for ``lm``)."""

    subset: str | None = Field(None, description="hub dataset configuration name, e.g. wikitext-2-raw-v1")
    tokenizer: Literal["char", "word", "bpe"] = Field(
        "word", description="char, word (frequency-ranked) or byte-level BPE, trained on the training split"
    )
    vocab_size: int = Field(8000, ge=8, description="vocabulary cap including <pad> <unk> <sos> <eos>")
    lowercase: bool = Field(False, description="lowercase before tokenizing")
    val_fraction: float = Field(0.1, gt=0, lt=0.5, description="share of the data held out for validation")
    test_fraction: float = Field(0.1, gt=0, lt=0.5, description="share of the data held out for testing")
    split_seed: int = Field(
        0,
        ge=0,
        description="seed of the split, apart from the run seed so every seed trains and validates on the same data",
    )
    cache_dir: str | None = Field(None, description="tokenized-data cache; None: <HF datasets cache>/seqbench")

    @model_validator(mode="after")
    def _bpe_vocab(self):
        if self.tokenizer == "bpe" and self.vocab_size < MIN_BPE_VOCAB:
            raise ValueError(
                f"task.vocab_size: byte-level BPE needs at least {MIN_BPE_VOCAB} "
                f"(256 bytes + 4 specials + merges), got {self.vocab_size}"
            )
        return self
