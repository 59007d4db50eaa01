"""Task registry entries: importing this package registers every shipped task's config (no torch);
a task's module is imported when its class is first used. Plug-ins arrive by entry point or import
path (``bench/plugins.py``)."""

from seqbench.tasks import (
    synthetic,  # noqa: F401  (registers)
    text,  # noqa: F401  (registers)
)
