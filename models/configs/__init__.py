"""Every shipped model's and mixer's config, importing no torch: importing this package registers
each name, config class and one-line doc. The module of ``models/configs/NAME.py`` is
``models/NAME.py``, imported the first time its class is used (``MODELS.get(name).cls``)."""

from seqbench.models.configs import (  # noqa: F401  (registers)
    attention,
    gated_deltanet,
    hyena,
    linear_attention,
    mamba,
    mamba2,
    recurrent,
    s4d,
    seq2seq,
    stack,
    tcn,
    transformer,
    transformer_seq2seq,
)
