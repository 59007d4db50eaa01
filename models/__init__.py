"""Model registry entries. Importing this package registers every shipped architecture's config
(``models/configs/``, no torch); a family's module (``models/NAME.py``, torch) is imported when its
class is first used. Plug-ins from other packages arrive by entry point or import path
(``bench/plugins.py``)."""

from seqbench.models import configs  # noqa: F401  (registers)
