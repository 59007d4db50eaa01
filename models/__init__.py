"""Model registry entries: importing this package registers every shipped architecture."""
from models import recurrent  # noqa: F401  (registers)
