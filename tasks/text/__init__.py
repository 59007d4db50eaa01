"""Real-text tasks (sentiment, language modelling) loaded through Hugging Face datasets.

``data`` is imported first: it sets HF_HUB_OFFLINE=1 (unless the user set it) before
anything can import ``datasets``.
"""
from seqbench.tasks.text import data  # noqa: F401  (offline flag first)
from seqbench.tasks.text import lm, sentiment  # noqa: F401  (registers)
