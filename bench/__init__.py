"""seqbench's harness: the ground (``core``), config, training, the commands and the CLI.

The package version is ``seqbench.__version__`` (from the installed metadata)."""
