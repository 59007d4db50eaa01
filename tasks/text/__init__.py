"""Real-text tasks (sentiment, language modelling) loaded through Hugging Face datasets."""
