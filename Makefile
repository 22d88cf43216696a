# The README's commands. A fresh machine needs only Python >= 3.11 and pip: everything else is
# installed into a virtual environment here ($(VENV)) from pyproject.toml.
#   make lab    JupyterLab on notebooks/ (CPU backend; `make lab GPU=1` adds the gpu extra)
#   make test   the whole test suite (CUDA kernels through Numba's simulator)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS := lab,test$(if $(GPU),$(comma)gpu)
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
PYTEST_ARGS ?= -n auto

.PHONY: lab test install clean

install: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

lab: $(STAMP)
	$(if $(GPU),,SPHGPU_BACKEND=cpu) $(PY) -m jupyter lab --notebook-dir=notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build .pytest_cache
