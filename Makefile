# torch.compile, opened up — the two commands a newcomer runs: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_SPEC ?= torch==2.13.0
CHAPTERS ?=
RUN_DIR ?= runs/latest

.PHONY: setup book test lint sync lab run publish clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[run,book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	.ci/install-chromium
	touch $(STAMP)  # only reached when every step above succeeded

book: setup
	$(VENV)/bin/jupyter-book build . --warningiserror --nitpick --keep-going

test: setup
	$(PY) -m pytest

lint: setup
	$(PY) -m helpers lint

# After editing a chapter's text source sources/chNN_*.md: write its cells into chapters/chNN_*.ipynb
# (outputs kept). jupytext syncs from whichever of the pair was saved last (jupytext.toml pairs them).
sync: setup
	$(VENV)/bin/jupytext --sync chapters/ch*.ipynb

# Open the chapters in JupyterLab (installed into .venv on first use).
lab: setup
	$(PY) -c "import jupyterlab" 2>/dev/null || $(PY) -m pip install -q jupyterlab
	$(VENV)/bin/jupyter lab chapters/

# On the GPU machine: execute + verify, then copy the verified outputs into chapters/.
run: setup
	$(PY) -m helpers run $(CHAPTERS) --out $(RUN_DIR)

publish: setup
	$(PY) -m helpers publish $(RUN_DIR)

clean:
	rm -rf _build runs
