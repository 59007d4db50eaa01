"""The synthetic tasks' configs, importing no torch: importing this package registers each task.
The module of ``tasks/synthetic/configs/NAME.py`` is ``tasks/synthetic/NAME.py``, imported when the
task's class is first used."""

from seqbench.tasks.synthetic.configs import (  # noqa: F401  (registers)
    adding,
    assoc_recall,
    binary_addition,
    compression,
    copy,
    cycle_navigation,
    duplicate_string,
    even_pairs,
    fuzzy_recall,
    induction,
    memorization,
    modular_arithmetic,
    noisy_recall,
    parity,
    permutation,
    reverse,
    selective_copy,
    sort,
    stack_manipulation,
)
