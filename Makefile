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

# `make bench` lists the benchmarks of benchmarks/README.md; `make bench NAME ARGS='...'` runs one.
ifeq (bench,$(firstword $(MAKECMDGOALS)))
BENCH_NAME := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
.PHONY: $(BENCH_NAME)
$(BENCH_NAME):
	@:
endif

bench: env
	@$(PY) benchmarks/_common.py $(BENCH_NAME) $(ARGS)

clean-env:
	rm -rf $(VENV)
