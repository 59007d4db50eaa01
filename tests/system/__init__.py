"""Checks that cross floors: layering, packaging, the docs' names, benchmarks, secrets, learning."""
