"""seqbench: measure what the textbooks claim about sequence architectures."""
__version__ = "0.1.0"
