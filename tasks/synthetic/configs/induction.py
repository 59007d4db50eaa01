"""Induction heads (Olsson et al. 2022; the synthetic of Gu & Dao 2023, Sec. 4.1.2 and App. E.1.2).

Worked example (vocab=5, tokens a..e, trigger #)::

    input : c a # d b e a c #
    target: . . . . . . . . d      (. = not scored)

Random tokens, one trigger token ``#`` at a random position followed by a random token; the
sequence ends with ``#`` again, and the model must emit the token that followed the first ``#``:
find the earlier occurrence of the current token and copy what came after it, the two-step
circuit of an induction head. Only the last position is scored. Length is a sampling argument,
so a model trained at ``length`` is evaluated at longer ones with ``eval.lengths`` (Gu & Dao train
at 256 and test up to 2^20: Mamba extrapolates, attention with its positions does not, Table 2).

Memoryless baseline: a uniform guess, cross-entropy ``ln(vocab)`` and accuracy ``1 / vocab``.
Solved: ``val/acc >= 0.95``.

Differs from Gu & Dao's: their vocabulary is 16 with the trigger among its tokens; here the trigger
is a token of its own, never drawn as noise, so exactly one earlier occurrence exists.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig


@TASKS.config("induction")
class InductionConfig(TokenTaskConfig):
    """Induction heads: after `# x ... #`, emit x (Olsson et al. 2022; Gu & Dao 2023)."""

    name: Literal["induction"] = "induction"

    vocab: int = Field(16, ge=2, description="noise and answer tokens (Gu & Dao: 16); the trigger is one more")
    length: int = Field(64, ge=4, description="positions per sequence, the final trigger included")

    def seq_len(self) -> int:
        return self.length
