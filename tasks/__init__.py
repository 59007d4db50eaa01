"""Task registry entries: importing this package registers every shipped task."""
from tasks import synthetic  # noqa: F401  (registers)
from tasks import text  # noqa: F401  (registers)
