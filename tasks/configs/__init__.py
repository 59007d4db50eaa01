"""The config base classes shared by every task (no torch)."""
