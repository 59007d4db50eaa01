"""Model registry entries: importing this package registers every shipped architecture."""
from seqbench.models import recurrent, seq2seq, tcn, transformer, transformer_seq2seq  # noqa: F401  (registers)
