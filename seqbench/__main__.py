from seqbench.bench.cli import entry

entry()
