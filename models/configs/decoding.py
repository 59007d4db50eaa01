"""The encoder-decoder interface shared by ``seq2seq`` and ``transformer_seq2seq``.

A subclass implements three things:

- ``encode(batch) -> state``: a dict of tensors with the batch on dim 0 (memory, masks,
  recurrent state), so beam search can expand and reorder it with ``index_select``;
- ``step(tokens (N,), state) -> (logits (N, V), state)``: one decoder step;
- ``forward(batch, state=None) -> (logits (B, T_out, V), None)``: teacher forcing on
  ``batch.aux["y_in"]`` (<sos> then the target shifted right).

and gets ``generate`` (greedy, or beam search of ``decode.beam_width``) and ``score``
(log-likelihood of given outputs) here. Generated rows end at the first <eos>; every
position after it holds the pad id.
"""

from __future__ import annotations

from pydantic import Field

from seqbench.bench.core.schema import Section


class DecodeConfig(Section):
    beam_width: int = Field(1, ge=1, description="beams at evaluation; 1 = greedy decoding")
    max_len: int | None = Field(
        None,
        ge=1,
        description="most generated tokens (incl. <eos>); null = the length the task asks for (its reference length)",
    )
