# The commands of the README:   make serve   |   make test   |   make test-fast
# Each creates/reuses .venv and installs what it needs. `make test` is what CI runs (.ci/run):
# lint, types, the documentation site (`make docs`) and the whole suite, for which it also
# provides Docker, the sandbox image and chromium. `make test-fast` is the inner loop: the tests
# that need neither Docker nor the `slow` marker, nothing started or built for them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall only when the dependency declarations change.
DEPS_HASH := $(shell cat pyproject.toml tests/fixtures/referee_plugin_demo/pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
TORCH := torch==2.13.0

.PHONY: serve test test-fast lint typecheck docs pytest docker chromium sandbox-image image postgres-image bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	# torch first and pinned: any other version would download gigabytes of CUDA wheels.
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -c <(echo $(TORCH)) -e '.[dev,train,docs,trainers,ray,postgres]' -e tests/fixtures/referee_plugin_demo
	# verl and OpenRLHF, for the adapter tests that drive their reward classes: without their
	# dependencies (GPU builds, clashing pins); the `trainers` extra has what their reward code imports.
	$(BIN)/pip install -q --no-deps $$($(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["tool"]["referee"]["trainers-no-deps"])')
	rm -f $(VENV)/.deps-* && touch $(STAMP)

serve: $(STAMP)
	@./scripts/ensure-docker.sh && $(BIN)/referee sandbox build || \
		echo "serve: no Docker engine: the code verifier will answer status=error" >&2
	$(BIN)/referee serve

docker:
	./scripts/ensure-docker.sh

# Debian's chromium, for the dashboard's browser test (driven by Playwright, nothing downloaded).
chromium:
	./scripts/ensure-chromium.sh

sandbox-image: $(STAMP) docker
	$(BIN)/referee sandbox build

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Wall-clock bounds in the tests scale with REFEREE_TEST_TIME_FACTOR (tests/timing.py): 2 by
# default here, for shared 2-core CI machines; REFEREE_TEST_TIME_FACTOR=1 checks the stated limits.
# --durations=15: the slowest tests, to see which ones deserve the `slow` marker.
pytest: $(STAMP) sandbox-image chromium
	REFEREE_TEST_TIME_FACTOR=$${REFEREE_TEST_TIME_FACTOR:-2} $(BIN)/pytest -q --durations=15

# No Docker engine, image or chromium: DOCKER_HOST points at no socket, so a test that reaches
# for Docker without its `docker` marker fails here instead of passing on a machine that has one.
test-fast: $(STAMP)
	DOCKER_HOST=unix:///nonexistent REFEREE_TEST_TIME_FACTOR=$${REFEREE_TEST_TIME_FACTOR:-2} \
		$(BIN)/pytest -q -m "not docker and not slow" --durations=10

# The documentation site (mkdocs.yml, docs/): strict, so a broken link or a docstring the API
# reference cannot render fails the build. The banner Material prints about MkDocs 2.0 is noise here.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: lint typecheck docs pytest

# The service image (see Dockerfile): wheels built here, so the build needs no registry.
image: $(STAMP) docker
	./scripts/build-service-image.sh

# PostgreSQL for docker-compose.yml's `shared` profile (referee-postgres:15, docker/postgres/):
# Debian's postgresql in a debootstrap'd base, so no registry either; a no-op while its recipe
# is unchanged. The compose test builds it itself (tests/service_image/service_image.py).
postgres-image: docker
	./scripts/build-postgres-image.sh

# Benchmarks print JSON/tables; the anchors (Math-Verify, reasoning-gym) only ever live here.
bench: $(STAMP) sandbox-image
	$(BIN)/pip install -q -c <(echo $(TORCH)) -e '.[bench]'
	test -x .venv-bench/bin/python || ($(PYTHON) -m venv .venv-bench && .venv-bench/bin/pip install -q reasoning-gym)
	$(BIN)/python -m bench.bench_groups_overhead
	$(BIN)/python -m bench.bench_math
	$(BIN)/python -m bench.bench_sandbox
	$(BIN)/python -m bench.bench_code_throughput
	$(BIN)/python -m bench.bench_sessions
	$(BIN)/python -m bench.bench_logic

clean:
	rm -rf $(VENV) dist site .pytest_cache .mypy_cache .ruff_cache
