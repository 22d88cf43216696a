# The README's commands. A fresh machine needs only Python >= 3.11 and pip: everything else is
# installed into a virtual environment here ($(VENV)) from pyproject.toml.
#   make lab    JupyterLab on copies of notebooks/ in build/lab/ (CPU backend; `make lab GPU=1`
#               adds the gpu extra)
#   make test   the test suite without the tests marked slow (CUDA kernels through Numba's
#               simulator), then the API reference (make docs): what CI runs
#   make test-all   every test, slow ones included, then make docs
#   make docs   the performance page and README Status table from benchmarks/results, then
#               the guide, the notebooks (executed on the CPU) and API reference (Sphinx)
#               into build/docs/html
#   make demo   run every notebook headless and write HTML to build/
#   make browser-deps   Debian's chromium for the browser test (apt-get, as root; .ci/run)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS := lab,test,docs$(if $(GPU),$(comma)gpu)
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
PYTEST_ARGS ?= -n auto --dist loadgroup

# Numba's OpenMP threads spin while waiting by default; on a shared or small machine (Binder,
# a laptop running JupyterLab) that turns millisecond calls into tens of milliseconds.
# MALLOC_TRIM_THRESHOLD_ (as Dask sets for its workers): glibc gives freed memory back to the
# system instead of keeping it for later, which held ~50 MB more in notebook 07's kernel.
KERNEL_ENV := OMP_WAIT_POLICY=PASSIVE MALLOC_TRIM_THRESHOLD_=65536
RUN_ENV := $(if $(GPU),,SPHGPU_BACKEND=cpu) $(KERNEL_ENV)
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))

.PHONY: lab lab-notebooks test test-all docs install clean demo browser-deps

install: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

# JupyterLab works on copies of the notebooks in $(LAB_DIR), so running and saving them never
# changes the tracked files. A copy is replaced only when notebooks/ has a newer version
# (cp -u); delete $(LAB_DIR) to start again from the tracked notebooks.
LAB_DIR ?= build/lab

lab: $(STAMP) lab-notebooks
	$(RUN_ENV) $(PY) -m jupyter lab --notebook-dir=$(LAB_DIR) \
		$(if $(filter 0,$(shell id -u)),--allow-root)

lab-notebooks:
	mkdir -p $(LAB_DIR)
	cp -u $(NOTEBOOKS) $(LAB_DIR)/

# `slow`: tests over ~20 s on the 2-core CI machine (pyproject's markers), left to test-all so
# that CI's `make test` keeps within its time. `timing`: panel interactions timed against their
# budget, run alone after the parallel run (beside the other workers and the browser test
# their times on two cores doubled: 1.45 s for a 0.6 s interaction)
# Every stage runs even when an earlier one fails (a failed browser test used to stop make
# before the timing tests and the docs ever ran); the target fails at the end, naming them.
test: $(STAMP) browser-deps
	@failed=""; \
	$(PY) -m pytest -m "not slow and not timing" $(PYTEST_ARGS) || failed="$$failed tests"; \
	$(PY) -m pytest -m "timing and not slow" || failed="$$failed timing-tests"; \
	$(MAKE) docs || failed="$$failed docs"; \
	if [ -n "$$failed" ]; then echo "make test: failed stages:$$failed"; exit 1; fi; \
	echo "make test: every stage passed"

test-all: $(STAMP) browser-deps
	@failed=""; \
	$(PY) -m pytest -m "not timing" $(PYTEST_ARGS) || failed="$$failed tests"; \
	$(PY) -m pytest -m timing || failed="$$failed timing-tests"; \
	$(MAKE) docs || failed="$$failed docs"; \
	if [ -n "$$failed" ]; then echo "make test-all: failed stages:$$failed"; exit 1; fi; \
	echo "make test-all: every stage passed"

# -W: a warning fails the build. Needs neither a GPU nor a network. The notebooks are executed
# (myst-nb, docs/conf.py) on the CPU, GPU=1 or not: the pages show the Binder-sized run; a
# notebook that fails fails the build. About 1.5 min of the build on two cores.
docs: $(STAMP)
	$(PY) docs/make_performance.py
	SPHGPU_BACKEND=cpu OMP_WAIT_POLICY=PASSIVE \
		$(PY) -m sphinx -W --keep-going -q -b html docs build/docs/html
	@echo "Documentation in build/docs/html/index.html"

demo: $(STAMP)
	mkdir -p build
	$(RUN_ENV) $(PY) -m jupyter nbconvert --to html --execute --output-dir build \
		--ExecutePreprocessor.timeout=600 $(NOTEBOOKS)
	@echo "HTML of every notebook in build/"

# The browser test drives the system chromium (Debian's package); Playwright downloads nothing.
# healpy-data: HEALPix's pixel-window FITS files, which tests/sht/test_pixwin.py compares the
# shipped tables with (the tests skip that comparison without them).
browser-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="chromium"; \
	[ -f /usr/share/healpy/data/pixel_window_n0002.fits ] || missing="$$missing healpy-data"; \
	if [ -z "$$missing" ]; then \
		echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null); healpy-data: present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	else \
		echo "missing Debian packages:$$missing (not root with apt-get): tests/browser and" \
		     "the FITS comparisons of tests/sht/test_pixwin.py are skipped without them"; \
	fi

clean:
	rm -rf $(VENV) build .pytest_cache
