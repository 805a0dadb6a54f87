.DEFAULT_GOAL := help
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Blender as a Python module (PyPI bpy 5.0.1: CPython 3.11 only, ~1 GB) in its own venv, so .venv stays
# lean; the Blender tests find it here or at $$WOWGRASS_BPY_PYTHON (tests/blender_session.py)
BPY_VENV   ?= .venv-bpy
BPY_PYTHON ?= python3.11

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,bench,workbench]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install wowgrass editable with test extras

test: $(STAMP)  ## run the test suite
	$(PY) -m pytest -q

demo: $(STAMP)  ## render the sample world to demo.png (1280x720), print frame stats; then a window if a display exists
	$(PY) -m wowgrass view --output demo.png --size 1280x720 --camera -28,-38,71 --target -62,-95,58 --frames 5 --stats
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
		echo "opening the window (Esc closes it)"; \
		$(PY) -m wowgrass view --window --camera -28,-38,71 --target -62,-95,58 --stats || echo "no window (see above); demo.png is written"; \
	else echo "no DISPLAY: window step skipped (demo.png is the frame)"; fi

mutate: $(STAMP)  ## mutation testing (mutmut) of the modules users rely on, one at a time: MODULES="capacity light" for some
	$(PY) -c "import mutmut" 2>/dev/null || $(PY) -m pip install -q -e '.[mutate]'
	nice -n 10 $(PY) benchmarks/mutate.py $(MODULES)

vectors: $(STAMP)  ## regenerate docs/client-scatter-vectors.json from the shared real tiles ($$WOWGRASS_REALDATA)
	$(PY) -m wowgrass.grass.vectors $${WOWGRASS_REALDATA:-../shared/realdata} docs/client-scatter-vectors.json

blender-extension: $(STAMP)  ## build dist/wowgrass-blender.zip (Blender 4.2+ extension, installs offline)
	$(PY) -m wowgrass.blender.package -o dist/wowgrass-blender.zip

bpy: $(BPY_VENV)/.installed  ## Blender as a Python module in $(BPY_VENV) (CPython 3.11; the Blender tests use it)

$(BPY_VENV)/.installed:
	test -x $(BPY_VENV)/bin/python || $(BPY_PYTHON) -m venv $(BPY_VENV)
	$(BPY_VENV)/bin/python -m pip install -q 'bpy==5.0.1' 'platformdirs>=3'
	touch $@

clean:  ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache build *.egg-info

.PHONY: help install test clean demo vectors blender-extension bpy mutate
