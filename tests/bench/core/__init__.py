"""Tests of bench/core/: artifacts, provenance, statistics, the table writer, disk trouble."""
