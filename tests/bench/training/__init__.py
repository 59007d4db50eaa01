"""Tests of bench/training/: a run end to end, resume, progress, DDP, diagnostics, FLOPs, cost, tracking."""
