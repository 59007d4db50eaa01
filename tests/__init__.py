"""seqbench's test suite, laid out by floor as the package is (bench/, models/, tasks/, sweeps/, reports/,
seqbench/), with system/ for the checks that cross floors; the support modules shared across floors sit here."""
