"""The real-text tasks' configs, importing no torch or datasets: importing this package registers
each task. The module of ``tasks/text/configs/NAME.py`` is ``tasks/text/NAME.py``."""

from seqbench.tasks.text.configs import lm, sentiment  # noqa: F401  (registers)
