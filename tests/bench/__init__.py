"""Tests of bench/: the CLI, the config and its overrides, user errors, plug-ins and start-up."""
