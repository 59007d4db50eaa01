"""Tests of models/: every registered model and mixer, their knobs, causality and positions."""
