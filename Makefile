.DEFAULT_GOAL := help
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install wowgrass editable with test extras

test: $(STAMP)  ## run the test suite
	$(PY) -m pytest -q

clean:  ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache build *.egg-info

.PHONY: help install test clean
