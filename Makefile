# The two commands of the README. Each creates the environment first when needed.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-long env bench clean-env

env:
	@bash scripts/setup-env.sh $(VENV)

demo: env
	$(VENV)/bin/bitextforge run recipes/quickstart.yaml

# One pytest worker per core and one more (pytest-xdist): many tests wait (on a server, a killed
# run, Ray starting), and the extra worker runs another file meanwhile (docs/testing.md has the
# timings). Each test file stays on one worker (loadfile), so the models a module's fixtures load
# are loaded once, and the files are handed out longest first, in the order tests/conftest.py
# gives them (--no-loadscope-reorder: pytest-xdist's own order, most tests first, left a 60-second
# file of 4 tests to the end). PYTHONDONTWRITEBYTECODE is emptied: the suite starts a few hundred
# bitextforge subprocesses, and without .pyc files each one compiles core/ and plugins/ again.
# `make test` runs every test but the long checks (marked `long`: Ray clusters, killed and resumed
# runs, trainings to a quality bar, installs, the browser); `make test-long` runs those, and
# .ci/run runs both. PYTEST_ARGS adds options: make test PYTEST_ARGS=--durations=10;
# TEST_WORKERS=2 sets the number of workers.
PYTEST_ARGS ?=
TEST_WORKERS ?= $(shell expr $$(nproc) + 1)
PYTEST = PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: env
	$(PYTEST) -m "not long" $(PYTEST_ARGS) tests

test-long: env
	$(PYTEST) -m long $(PYTEST_ARGS) tests

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
