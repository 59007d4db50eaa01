"""Task registry entries: importing this package registers every shipped task."""
from seqbench.tasks import synthetic  # noqa: F401  (registers)
from seqbench.tasks import text  # noqa: F401  (registers)
