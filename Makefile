# torch.compile, opened up — the two commands a newcomer runs: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_SPEC ?= torch==2.13.0
# A laptop without a GPU can take PyTorch's CPU-only build (no CUDA libraries: a much smaller venv):
# make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu. Empty = pip's default index.
TORCH_INDEX ?=
CHAPTERS ?=
RUN_DIR ?= runs/latest
STUDENT_DIR ?= runs/student
# gpu-bundle/gpu-run: the GPU machine's Python, the wheel folder, where gpu-run installs it (on
# PYTHONPATH), and SHARD=i/n to run every n-th chapter starting at the i-th
GPU_PYTHON ?= 3.12
BUNDLE ?= gpu-bundle
GPU_SITE ?= .gpu-site
SHARD ?=
# JOBS: notebooks executed at once by `make run`; GPU_JOBS: by `make gpu-run` (besides the chapters marked
# `course.alone`, which measure alone, one at a time, after the others). 10 on the 16-core H200 host kept
# every figure true: runs A, B, C of daec73d took 338, 332 and 320 s, the sharing chapters but the longest
# at nice 5 (ch29, the longest, then took 104-113 s; at d480b1c, without nice, 151 s and 394-425 s in all)
JOBS ?= 1
GPU_JOBS ?= 10

.PHONY: setup book test lint sync lab run publish gpu-bundle gpu-run student grade clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e ".[run,book,test,zoo]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	.ci/install-chromium
	.ci/install-actionlint
	.ci/install-mathjax
	touch $(STAMP)  # only reached when every step above succeeded

# MathJax comes from the pinned npm package in .ci/.mathjax (copied into _build/html/_static/mathjax by
# _ext/page_assets.py); the build stops when it is missing, never falling back to a CDN.
book: setup
	.ci/install-mathjax
	$(VENV)/bin/jupyter-book build . --warningiserror --nitpick --keep-going

test: setup
	$(PY) -m pytest

lint: setup
	$(PY) -m helpers lint

# After editing a chapter's text source sources/chNN_*.md: write its cells into chapters/chNN_*.ipynb
# (outputs kept). jupytext syncs from whichever of the pair was saved last (jupytext.toml pairs them).
sync: setup
	$(VENV)/bin/jupytext --sync chapters/ch*.ipynb

# Open the chapters in JupyterLab (installed into .venv on first use). Jupyter refuses to start as root
# unless told (containers, CI images): root gets --allow-root. LAB_ARGS passes more options, e.g.
# LAB_ARGS="--no-browser --port 8899".
LAB_ARGS ?=
lab: setup
	$(PY) -c "import jupyterlab" 2>/dev/null || $(PY) -m pip install -q jupyterlab
	$(VENV)/bin/jupyter lab chapters/ $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# On the GPU machine: execute + verify, then copy the verified outputs into chapters/.
run: setup
	$(PY) -m helpers run $(CHAPTERS) --out $(RUN_DIR) --jobs $(JOBS)

publish: setup
	$(PY) -m helpers publish $(RUN_DIR) $(CHAPTERS)

# On a machine with network: the wheels a GPU machine needs to run the chapters (papermill, nbclient,
# ipykernel, ipywidgets, nbformat, jupytext (publish reads the text sources) and their requirements; never torch) for Python $(GPU_PYTHON) → $(BUNDLE)/.
gpu-bundle: setup
	rm -rf $(BUNDLE)
	$(PY) -m pip download -q --only-binary=:all: --python-version $(GPU_PYTHON) --implementation cp \
	    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	    --platform manylinux1_x86_64 -d $(BUNDLE) papermill ipykernel ipywidgets nbclient nbformat jupytext \
	    transformers==5.24.0
	# the triage zoo's vision models, without their requirement on torch (the GPU machine's own torch is used):
	# torchvision 0.26 is the release for torch 2.11
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version $(GPU_PYTHON) --implementation cp \
	    --platform manylinux_2_28_x86_64 -d $(BUNDLE) timm==1.0.31 torchvision==0.26.0
	@ls $(BUNDLE) | wc -l | xargs echo "gpu-bundle: wheels in $(BUNDLE)/:"

# On the GPU machine (torch preinstalled, no network needed): install what is missing from $(BUNDLE)/,
# then execute and verify every chapter (or CHAPTERS, or SHARD=i/n) → $(RUN_DIR), which `make publish`
# accepts on a machine with the repository. Without a .git folder, set COURSE_GIT_COMMIT to this tree's commit.
gpu-run:
	@test -d .git || test -n "$$COURSE_GIT_COMMIT" || { echo "error: no .git here; set COURSE_GIT_COMMIT=<commit of this tree> so the run can be published" >&2; exit 2; }
	$(PYTHON) .ci/gpu-install $(BUNDLE) $(GPU_SITE)
	PYTHONPATH=$(CURDIR)/$(GPU_SITE) $(PYTHON) -m ipykernel install --user --name python3 >/dev/null
	PYTHONPATH=$(CURDIR)/$(GPU_SITE) $(PYTHON) -m helpers run $(CHAPTERS) $(if $(SHARD),--shard $(SHARD)) --out $(RUN_DIR) --timeout 300 --jobs $(GPU_JOBS)

# The student edition: the book's chapters (or CHAPTERS="ch05 ch06") without solutions, into STUDENT_DIR;
# STUDENT_OUTPUTS=book keeps the book's outputs (they can answer a "predict" exercise), none clears them.
# The instructor's targets make the venv only when it is missing (`make setup` refreshes it): a fresh clone
# gives pyproject.toml a newer time than the venv's stamp, which must not reinstall everything.
STUDENT_OUTPUTS ?= none
student:
	@test -f $(STAMP) || $(MAKE) setup
	$(PY) -m helpers student $(CHAPTERS) --out $(STUDENT_DIR) --outputs $(STUDENT_OUTPUTS)

# Grade the notebooks in SUBMISSIONS (a folder, with one subfolder per student if the LMS exports so) on CPU
# → SUBMISSIONS/grades (or GRADES); GRADE_ARGS passes more options, e.g. GRADE_ARGS="--timeout 600".
SUBMISSIONS ?=
GRADES ?=
GRADE_ARGS ?=
grade:
	@test -n "$(SUBMISSIONS)" || { echo "error: say which folder: make grade SUBMISSIONS=path/to/folder" >&2; exit 2; }
	@test -f $(STAMP) || $(MAKE) setup
	$(PY) -m helpers grade $(SUBMISSIONS) $(if $(GRADES),--out $(GRADES)) $(GRADE_ARGS)

clean:
	rm -rf _build runs
