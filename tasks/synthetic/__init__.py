"""Synthetic long-dependency tasks, generated from the seed on the training device."""

from seqbench.tasks.synthetic import configs  # noqa: F401  (registers)
