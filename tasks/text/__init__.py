"""Real-text tasks (sentiment, language modelling) loaded through Hugging Face datasets.

Importing them changes no environment: ``data.import_datasets`` sets HF_HUB_OFFLINE=1 (unless the
user set it) when a task first loads data, before ``datasets`` is imported.
"""

from seqbench.tasks.text import configs  # noqa: F401  (registers)
