"""Tests of bench/commands/: the commands as functions and command lines (compare, eval, probe)."""
