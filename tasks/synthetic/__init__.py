"""Synthetic long-dependency tasks, generated from the seed on the training device."""
from seqbench.tasks.synthetic import adding, assoc_recall, copy, reverse, selective_copy, sort  # noqa: F401  (registers)
