# torch.compile, opened up — the two commands a newcomer runs: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_SPEC ?= torch==2.13.0
CHAPTERS ?=
RUN_DIR ?= runs/latest

.PHONY: setup book test lint run publish clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[run,book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
	  echo "note: chromium not found; the browser test needs it (apt-get install chromium)"
	touch $(STAMP)

book: setup
	$(VENV)/bin/jupyter-book build . --warningiserror --nitpick --keep-going

test: setup
	$(PY) -m pytest

lint: setup
	$(PY) -m helpers lint

# On the GPU machine: execute + verify, then copy the verified outputs into chapters/.
run: setup
	$(PY) -m helpers run $(CHAPTERS) --out $(RUN_DIR)

publish: setup
	$(PY) -m helpers publish $(RUN_DIR)

clean:
	rm -rf _build runs
