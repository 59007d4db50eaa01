"""Tests of sweeps/: specs, the runner, studies and storage, workers, signals and probes' frontiers."""
