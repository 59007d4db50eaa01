"""Task registry entries: importing this package registers every shipped task."""
from seqbench.tasks import (
    synthetic,  # noqa: F401  (registers)
    text,  # noqa: F401  (registers)
)
