from seqbench.bench.cli import main

raise SystemExit(main())
