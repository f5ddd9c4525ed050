# The two commands a new user needs: `make demo` and `make test`. Both set everything up first.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
# Airflow has its own virtualenv (its pins are not dbt's); the DAG tests drive it from pytest.
AIRFLOW_VENV ?= .venv-airflow
export TIERLENS_HOME ?= $(CURDIR)/.tierlens
# dbt's saved parse, shared by every home the demo and the tests make (pipelines/tierlens/saved_parse.py):
# kept in the clone, so a run neither reads nor leaves one in ~/.cache
export TIERLENS_DBT_PARSE_CACHE ?= $(CURDIR)/.tierlens/dbt-parse
export DBT_SEND_ANONYMOUS_USAGE_STATS := False
export DO_NOT_TRACK := 1

.PHONY: demo test bench bench-spark setup system-deps python-venv airflow-venv matrix-roots clean dbt-sources lint-sql lint

setup: $(VENV)/.installed

# Debian packages for the integration tests (Slurm, XRootD, ...), listed in one file.
SYSTEM_PACKAGES := $(shell sed -e 's/\#.*//' deploy/ci/system-packages.txt)
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	  else echo "not root: cannot install $$missing; the tests that need them will fail in CI"; fi; \
	fi

# A Python that can make virtualenvs (Debian ships `venv` apart, as python3-venv): checked before
# either virtualenv is made, so the two can be made at once.
python-venv:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "tierlens needs Python 3.11 or newer as $(PYTHON)"; exit 1; }
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null || \
	  { echo "installing python3-venv (needs root)"; apt-get update -q && apt-get install -y -q python3-venv; }

$(VENV)/.installed: pyproject.toml | python-venv
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

airflow-venv: $(AIRFLOW_VENV)/.installed

$(AIRFLOW_VENV)/.installed: pyproject.toml deploy/airflow/requirements.txt | python-venv
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/pip install -q --upgrade pip
	$(AIRFLOW_VENV)/bin/pip install -q -r deploy/airflow/requirements.txt -e .
	@touch $@

demo: setup
	$(BIN)/tierlens demo

# Root filesystems of Debian 13 and unstable (their Slurm and XRootD) for the version matrix, kept in
# $(TIERLENS_MATRIX_CACHE) outside git and rebuilt only when a package version changes.
export TIERLENS_MATRIX_CACHE ?= /var/cache/tierlens-matrix
matrix-roots: setup system-deps
	$(BIN)/python tests/matrix/rootfs.py

# Two pytest-xdist workers (the machine's two cores; TEST_WORKERS=0 runs serially): each test file, or
# unit of files that share a resource, runs on one worker, longest first (tests/conftest.py).
TEST_WORKERS ?= 2
# The Debian packages first (apt takes one process at a time), then the two virtualenvs, the root
# filesystems and the lint at once: on a new machine those are mostly downloads.
test:
	$(MAKE) system-deps python-venv
	$(MAKE) -j3 --output-sync=target setup airflow-venv matrix-roots lint
	$(BIN)/pytest --durations=40 $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# ruff over the Python code ([tool.ruff] in pyproject.toml): the format, then the checks; first in make
# test: seconds, not minutes. `ruff format .` fixes the first.
lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python bench/ingest_bench.py
	$(BIN)/python bench/demo_bench.py

# DuckDB against local Spark at 1x and 10x the demo (about 20 minutes on 2 cores; Java 17).
bench-spark: setup
	$(BIN)/python bench/spark_bench.py --scales 1 10

# dbt/models/staging/_sources.yml from records.py and simulator/store.py (a test checks it is current).
dbt-sources: setup
	$(BIN)/python -m tierlens.warehouse.dbt_sources

# sqlfluff over the dbt project and sql/ (.sqlfluff); make test runs it as tests/test_dbt_lint.py.
lint-sql: setup
	$(BIN)/sqlfluff lint dbt sql

clean:
	rm -rf $(VENV) $(AIRFLOW_VENV) .tierlens .pytest_cache
