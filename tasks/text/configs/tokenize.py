"""Tokenizers for the text tasks: char, word (frequency-ranked) and byte-level BPE.

Every vocabulary starts with the specials ``<pad>`` 0, ``<unk>`` 1, ``<sos>`` 2, ``<eos>`` 3
and is trained on the training split only. word and BPE use the ``tokenizers`` library;
char is a numpy lookup table over code points (a 4 MB corpus encodes in well under a second).

Example (word, lowercase)::

    tok = TextTokenizer.train("word", ["The cat sat.", "the dog"], vocab_size=100, lowercase=True)
    tok.encode_batch(["the cat"])  # [array([4, 5])]  ("the" is the most frequent word)

For language modelling, ``encode_stream`` also returns how many characters of the text each
token accounts for (whitespace counts towards the next token), so bits per character can be
measured exactly for any tokenizer: the counts of a split sum to its length in characters.
"""

from __future__ import annotations

SPECIALS = ("<pad>", "<unk>", "<sos>", "<eos>")
PAD, UNK, SOS, EOS = range(4)
MIN_BPE_VOCAB = 256 + len(SPECIALS) + 1  # byte alphabet + specials + at least one merge
KINDS = ("char", "word", "bpe")
