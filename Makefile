# The two commands of the README. Each creates the environment first when needed.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test env bench clean-env

env:
	@bash scripts/setup-env.sh $(VENV)

demo: env
	$(VENV)/bin/bitextforge run recipes/quickstart.yaml

# One pytest worker per core (pytest-xdist); each test file stays on one worker (loadfile), so the
# models a module's fixtures load are loaded once. PYTHONDONTWRITEBYTECODE is emptied: the suite
# starts a few hundred bitextforge subprocesses, and without .pyc files each one compiles core/ and
# plugins/ again. PYTEST_ARGS adds options: make test PYTEST_ARGS=--durations=10
PYTEST_ARGS ?=
test: env
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n auto --dist loadfile $(PYTEST_ARGS) tests

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
