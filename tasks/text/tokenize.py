"""Tokenizers for the real-text tasks (characters, words, byte-level BPE).

The config (no torch) is in ``tasks/text/configs/tokenize.py``, where the family is documented."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import numpy as np
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from seqbench.tasks.text.configs.tokenize import EOS, KINDS, MIN_BPE_VOCAB, PAD, SOS, SPECIALS, UNK  # noqa: F401  (the configs, re-exported beside their modules)


class TextTokenizer:
    """One trained tokenizer; ``to_json``/``from_json`` round-trip it through the cache."""

    def __init__(self, kind: str, lowercase: bool, chars: list[str] | None = None, tok: Tokenizer | None = None):
        if kind not in KINDS:
            raise ValueError(f"tokenizer must be one of {KINDS}, got {kind!r}")
        self.kind, self.lowercase, self.chars, self.tok = kind, lowercase, chars, tok
        if kind == "char":
            assert chars is not None
            cps = np.array([ord(c) for c in chars], dtype=np.int64)
            order = np.argsort(cps)
            self._cp_sorted = cps[order]
            self._cp_ids = order.astype(np.int32) + len(SPECIALS)
            self._id_to_str = [*SPECIALS, *chars]
        else:
            assert tok is not None
            self._id_to_str = [tok.id_to_token(i) or "" for i in range(tok.get_vocab_size())]  # ids are contiguous

    # -- training ---------------------------------------------------------------------
    @classmethod
    def train(cls, kind: str, texts: Iterable[str], vocab_size: int, lowercase: bool = False) -> TextTokenizer:
        texts = list(texts)
        if kind == "char":
            counts: Counter[str] = Counter()
            for t in texts:
                counts.update(t.lower() if lowercase else t)
            chars = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
            return cls(kind, lowercase, chars=chars[: max(0, vocab_size - len(SPECIALS))])
        if kind == "word":
            tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
            tok.pre_tokenizer = pre_tokenizers.Whitespace()  # runs of word characters; punctuation apart
            trainer: trainers.Trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS))
        else:
            tok = Tokenizer(models.BPE(unk_token="<unk>"))
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # any text, no <unk>
            tok.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(
                vocab_size=vocab_size,
                special_tokens=list(SPECIALS),
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False,
            )
        if lowercase:
            tok.normalizer = normalizers.Lowercase()
        tok.train_from_iterator(texts, trainer)
        return cls(kind, lowercase, tok=tok)

    @property
    def _trained(self) -> Tokenizer:
        """The word or BPE model (a char tokenizer has none)."""
        assert self.tok is not None, f"a {self.kind} tokenizer has no trained model"
        return self.tok

    @property
    def vocab_size(self) -> int:
        return len(self._id_to_str)

    # -- encoding ---------------------------------------------------------------------
    def _char_ids(self, text: str) -> np.ndarray:
        if self.lowercase:
            text = text.lower()
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)  # (N,) code points
        if not len(self._cp_sorted):
            return np.full(len(cps), UNK, dtype=np.int32)
        pos = np.searchsorted(self._cp_sorted, cps).clip(max=len(self._cp_sorted) - 1)
        return np.where(self._cp_sorted[pos] == cps, self._cp_ids[pos], UNK).astype(np.int32)

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        """Token ids per text (no specials added)."""
        if self.kind == "char":
            return [self._char_ids(t) for t in texts]
        return [np.asarray(e.ids, dtype=np.int32) for e in self._trained.encode_batch(texts, add_special_tokens=False)]

    def encode_stream(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, chars per token) for one contiguous text; word level ends each line with <eos>."""
        if self.kind == "char":
            ids = self._char_ids(text)
            return ids, np.ones(len(ids), dtype=np.int32)
        word = self.kind == "word"
        lines = text.split("\n") if word else text.splitlines(keepends=True)
        if word and lines and lines[-1] == "":
            lines.pop()  # "a\nb\n" is two lines, each closed by <eos>
        encs = self._trained.encode_batch(lines, add_special_tokens=False)
        ids_parts, n_parts = [], []
        for line, enc in zip(lines, encs):
            ids = np.asarray(enc.ids, dtype=np.int32)
            ends = (
                np.maximum.accumulate(np.asarray([e for _, e in enc.offsets], dtype=np.int64))
                if len(ids)
                else np.zeros(0, np.int64)
            )
            n = np.diff(ends, prepend=0)  # chars since the previous token's end (leading space included)
            rest = len(line) - (int(ends[-1]) if len(ends) else 0)  # trailing chars not inside any token
            if word:
                ids = np.append(ids, EOS)
                n = np.append(n, rest + 1)  # <eos> stands for the newline (and trailing spaces)
            elif len(n):
                n[-1] += rest
            elif rest:  # a line that produced no token (cannot happen for byte-level BPE)
                continue
            ids_parts.append(ids)
            n_parts.append(n)
        if not ids_parts:
            return np.zeros(0, np.int32), np.zeros(0, np.int32)
        return np.concatenate(ids_parts).astype(np.int32), np.concatenate(n_parts).astype(np.int32)

    def decode(self, ids: Iterable[int]) -> str:
        ids = [int(i) for i in ids]
        if self.kind == "char":
            return "".join(self._id_to_str[i] if i >= len(SPECIALS) else ("\n" if i == EOS else "") for i in ids)
        if self.kind == "word":
            out: list[str] = []
            for i in ids:
                if i == EOS:
                    out.append("\n")
                elif i >= len(SPECIALS) or i == UNK:
                    out.append(self._id_to_str[i] if not out or out[-1] == "\n" else " " + self._id_to_str[i])
            return "".join(out)
        return self._trained.decode(ids, skip_special_tokens=True)

    # -- persistence --------------------------------------------------------------------
    def to_json(self) -> str:
        body = {"chars": self.chars} if self.kind == "char" else {"tokenizer": self._trained.to_str()}
        return json.dumps({"kind": self.kind, "lowercase": self.lowercase, **body})

    @classmethod
    def from_json(cls, text: str) -> TextTokenizer:
        d = json.loads(text)
        if d["kind"] == "char":
            return cls("char", d["lowercase"], chars=d["chars"])
        return cls(d["kind"], d["lowercase"], tok=Tokenizer.from_str(d["tokenizer"]))
