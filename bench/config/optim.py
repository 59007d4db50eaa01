"""The ``optim`` section: the optimizer and its learning-rate schedule (``OptimConfig``), and ``ADAM_BETAS``,
the (beta1, beta2) an Adam-family optimizer gets when none are given."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from seqbench.bench.core.schema import ADDED_LATER, Section

ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's default (beta1, beta2)


class OptimConfig(Section):
    optimizer: Literal["adam", "adamw", "sgd", "radam"] = Field("adam", description="optimizer family")
    lr: float = Field(1e-3, gt=0, description="peak learning rate (after warmup)")
    weight_decay: float = Field(0.0, ge=0, description="L2 (adam/sgd/radam) or decoupled (adamw) decay")
    momentum: float = Field(0.9, ge=0, lt=1, description="sgd momentum")
    # a list (not a tuple) so Section's bool guard sees its items: `optim.betas=[false, 0.98]` is refused
    betas: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=lambda: list(ADAM_BETAS),
        min_length=2,
        max_length=2,
        description="adam/adamw/radam (beta1, beta2), each in [0, 1); Vaswani et al. and Xiong et al. use "
        "[0.9, 0.98]; sgd refuses them (it has optim.momentum)",
        json_schema_extra=ADDED_LATER,
    )
    # ADDED_LATER: unset, the config hash is the one runs recorded before the field existed
    beta2: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="adam/adamw/radam beta2 alone (as Hugging Face's adam_beta2), in place of betas[1]: a "
        "sweep's values are scalars, so sweep this to vary beta2; null = betas[1]",
        json_schema_extra=ADDED_LATER,
    )
    warmup_steps: int = Field(0, ge=0, description="linear warmup from 0 to lr over these steps")
    schedule: Literal["constant", "linear", "cosine", "inverse_sqrt"] = Field(
        "constant", description="shape after warmup"
    )
    # ADDED_LATER: unset, the config hash is the one runs recorded before the field existed
    decay_from: int | None = Field(
        None,
        ge=0,
        description="step the decay (linear, cosine, inverse_sqrt) starts from; null = the end of "
        "warmup. Set it to the warmup arm's warmup_steps so that a no-warmup arm differs by the warmup only "
        "(inverse_sqrt after no warmup otherwise decays from step 1)",
        json_schema_extra=ADDED_LATER,
    )
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="floor of linear/cosine decay as a fraction of lr")
    grad_clip: float | None = Field(1.0, gt=0, description="clip the global gradient norm to this; null = off")

    @model_validator(mode="after")
    def _betas_need_adam(self) -> OptimConfig:
        if self.optimizer == "sgd" and self.betas != list(ADAM_BETAS):
            raise ValueError(
                f"optim.betas: {self.betas} has no effect on sgd (it uses optim.momentum); "
                "choose optim.optimizer from adam, adamw, radam or leave betas out"
            )
        if self.beta2 is None:
            return self
        if self.optimizer == "sgd":
            raise ValueError(
                f"optim.beta2: {self.beta2} has no effect on sgd (it uses optim.momentum); "
                "choose optim.optimizer from adam, adamw, radam or leave beta2 out"
            )
        if self.betas[1] != ADAM_BETAS[1] and self.betas[1] != self.beta2:
            raise ValueError(
                f"optim.beta2: {self.beta2} and optim.betas: {self.betas} both set beta2; keep one "
                "(betas: [beta1, beta2], or beta2 alone)"
            )
        return self

    @property
    def adam_betas(self) -> tuple[float, float]:
        """(beta1, beta2) as the optimizer gets them: optim.beta2, when set, in place of betas[1]."""
        return (self.betas[0], self.betas[1] if self.beta2 is None else self.beta2)
