"""The synthetic tasks' configs, importing no torch: importing this package registers each task.
The module of ``tasks/synthetic/configs/NAME.py`` is ``tasks/synthetic/NAME.py``, imported when the
task's class is first used."""

from seqbench.tasks.synthetic.configs import (  # noqa: F401  (registers)
    adding,
    assoc_recall,
    compression,
    copy,
    fuzzy_recall,
    induction,
    memorization,
    noisy_recall,
    reverse,
    selective_copy,
    sort,
)
