"""Tests of sweeps/claims/: the claim judge, its calibration, the registry and ``seqbench verify``."""
