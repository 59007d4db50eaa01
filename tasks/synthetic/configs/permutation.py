"""Permutation: the word problem of a finite group, the running product of group elements (Liu et
al. 2023, "Transformers learn shortcuts to automata"; Merrill, Petty & Sabharwal 2024, "The
Illusion of State in State-Space Models").

Each token is a permutation of ``{0, ..., k-1}``, named by its index in ``itertools.permutations``
order (S_k: all of them; A_k: the even ones, in the same order; Z2 is S2). Worked example
(group=S3, scored=every; a permutation ``p`` written as its images ``p(0) p(1) p(2)``)::

    tokens: 0 = 012 (identity), 1 = 021, 2 = 102, 3 = 120, 4 = 201, 5 = 210
    input : 1 2 3 5
    target: 1 4 0 5              state_t = state_{t-1} o x_t, starting at the identity

Composition: ``state_t(i) = state_{t-1}(x_t(i))``, so the target after ``t`` tokens is
``x_1 o x_2 o ... o x_t`` (as arrays, ``state_t = state_{t-1}[x_t]``); the other order is the same
task with every token and target replaced by its inverse. The group is not commutative: the word
``2 1`` gives 3, ``1 2`` gives 4.

Why the groups: a recurrence with ``|G|`` states solves every word problem at every length, while a
fixed-depth Transformer or linear state-space model computes only TC0 functions (Merrill et al.).
That covers the solvable groups (Z2, S3, A4, S4: constant-depth shortcuts, Liu et al., via
Krohn-Rhodes) but not the non-solvable ones (A5, S5), whose word problems are NC1-complete
(Barrington 1989): out of their reach at growing lengths unless TC0 = NC1.

Training batches each draw a length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer lengths with ``eval.lengths``.

Memoryless baseline (sees the current element and its position, nothing earlier): the product of a
prefix of ``t >= 2`` elements is ``(x_1 o ... o x_{t-1}) o x_t``, whose first factor is uniform over
``G`` (the first token is, and multiplying by a fixed element permutes G) and independent of ``x_t``;
so the product is uniform: accuracy ``1/|G|``, cross-entropy ``ln |G|``. The first position's product
is its token (accuracy 1, loss 0). ``scored=every``: accuracy over all scored positions
(``sum_n (1 + (n-1)/|G|) / sum_n n``), loss the mean of each length's per-position loss
(``mean_n (n-1) ln|G| / n``); ``scored=last``: the last position's values averaged over the drawn
lengths. At the defaults (S5, |G| = 120, lengths 1-40, every): accuracy ``46.5 / 820 = 0.056707``,
loss ``ln 120 * (1 - H_40 / 40) = 4.275405`` (``H_40`` the 40th harmonic number).
Solved: ``val/acc >= 0.95``.

Differs from the papers: both train at a fixed sequence length (the question there is the depth a
length needs, or whether a shortcut is found), while here training draws lengths from 1-40 and
longer lengths are a test of length generalisation (Delétang et al.'s protocol). Merrill et al.
also compare A5 with groups of the same order (A4 x Z5, Z60), not offered here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("permutation")
class PermutationConfig(LengthRangeConfig):
    """Running product of permutations: the group word problem (S5, A5, ...; Liu et al. 2023, Merrill et al. 2024)."""

    name: Literal["permutation"] = "permutation"

    group: Literal["Z2", "S3", "A4", "S4", "A5", "S5"] = Field(
        "S5", description="the group; S5 (default) and A5 are non-solvable, the hard case of both papers"
    )
    scored: Literal["last", "every"] = Field(
        "every",
        description="every (default): the product of each prefix, labelled as in Liu et al. and Merrill et al., "
        "so each step teaches one transition; last: one label per sequence",
    )
