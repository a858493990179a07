# The two commands of the README. Each creates the environment first when needed.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test env bench clean-env

env:
	@bash scripts/setup-env.sh $(VENV)

demo: env
	$(VENV)/bin/bitextforge run recipes/quickstart.yaml

test: env
	$(PY) -m pytest -q tests

bench: env
	$(PY) tests/bench/bench_core.py

clean-env:
	rm -rf $(VENV)
