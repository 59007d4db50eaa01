"""Tests of seqbench/: the notebook API."""
