"""Tests of tasks/: the synthetic and text tasks, their baselines and data."""
