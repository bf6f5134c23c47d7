# pyhudi developer tasks. Needs only python3 (3.11+) and, for Spark, Java 17 (installed here when missing).

VENV ?= .venv
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?=
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

# Spark reads spark-defaults.conf and log4j2.properties from here (tests/conftest.py sets the same default).
export SPARK_CONF_DIR := $(CURDIR)/spark-conf
# Spark's Python workers must run the venv's interpreter (pyarrow, pyhudi), not whatever python3 is on PATH.
export PYSPARK_PYTHON := $(abspath $(VENV))/bin/python

.PHONY: install java zookeeper apache-hudi test test-fast demo lint bench bench-scale bench-compaction bench-long-run bench-spark-floor bench-metadata bench-record-index bench-sql bench-expression-index bench-concurrency kill-test

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install -e '.[test]'
	touch $@

java:
	@command -v java >/dev/null 2>&1 || { \
		$(SUDO) apt-get update && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y openjdk-17-jre-headless; }

# A ZooKeeper server for the ZooKeeper lock provider's tests (Debian's package; tests/conftest.py starts one per test
# process on a free port).
ZOOKEEPER_SERVER := /usr/share/zookeeper/bin/zkServer.sh

zookeeper: java
	@test -x $(ZOOKEEPER_SERVER) || { \
		$(SUDO) apt-get update && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y zookeeper; }

# Apache Hudi itself as a writer and reader for the interop tests: pyspark 3.5 in its own venv (the Hudi
# bundles on Maven Central are built for Spark 3.5 / Scala 2.12) and the bundles, each fetched only when
# missing and checked against Maven Central's .sha1. PYHUDI_JARS moves the jar cache.
HUDI_VENV ?= .venv-hudi
PYHUDI_JARS ?= $(HOME)/.cache/pyhudi/jars
export PYHUDI_JARS
HUDI_BUNDLES := $(PYHUDI_JARS)/hudi-spark3.5-bundle_2.12-0.15.0.jar $(PYHUDI_JARS)/hudi-spark3.5-bundle_2.12-1.2.0.jar

apache-hudi: $(HUDI_VENV)/.installed $(HUDI_BUNDLES) java
	$(HUDI_VENV)/bin/python tests/apache_hudi/bundles.py check

$(HUDI_VENV)/.installed: tests/apache_hudi/requirements.txt
	test -x $(HUDI_VENV)/bin/python || python3 -m venv $(HUDI_VENV)
	echo '*' > $(HUDI_VENV)/.gitignore
	$(HUDI_VENV)/bin/python -m pip install -r tests/apache_hudi/requirements.txt
	touch $@

$(PYHUDI_JARS)/%.jar:
	python3 tests/apache_hudi/bundles.py fetch $@

# Test processes (pytest-xdist): one per core of CI's 2-core machine; each holds its own SparkSession. A test
# file stays in one process (--dist loadfile), so its module fixtures (Apache Hudi's runs) are built once.
TEST_WORKERS ?= 2

test: $(VENV)/.installed java zookeeper apache-hudi
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

# The fast loop: the core without the JVM (Spark, ZooKeeper), S3 or the long runs.
test-fast: $(VENV)/.installed
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not spark and not apache_hudi and not s3 and not slow and not zookeeper" \
	  $(PYTEST_ARGS)

demo: $(VENV)/.installed java
	@test -f examples/quickstart.py || { echo "examples/quickstart.py is not written yet"; exit 1; }
	dir=$$(mktemp -d /tmp/pyhudi-demo-XXXXXX) && echo "demo table under $$dir" && \
		$(PYTHON) examples/quickstart.py "$$dir"

# ruff over the repository; mypy over the files [tool.mypy] in pyproject.toml names, strictly.
lint: $(VENV)/.installed
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

# ROWS=200000 for a quick run; results in bench/results/latest.json.
ROWS ?= 2000000

bench: $(VENV)/.installed java apache-hudi
	$(PYTHON) bench/run.py --rows $(ROWS)

# The 200k upsert into 2M- and 10M-row tables, COW and MOR; results in bench/results/scale.json.
bench-scale: $(VENV)/.installed
	$(PYTHON) bench/scale.py

# Snapshot read of the workload's MOR table with logs, its compaction, and the read after; bench/results/compaction.json.
bench-compaction: $(VENV)/.installed
	$(PYTHON) bench/compaction.py --rows $(ROWS)

# What Spark charges any Python data source for step B's input and step C's rows (the floors of pyhudi's B and C).
bench-spark-floor: $(VENV)/.installed java
	$(PYTHON) bench/spark_floor.py --rows $(ROWS)

# A 10,000-file v9 table with and without its metadata table: upsert cost, read planning by listing; bench/results/metadata.json.
bench-metadata: $(VENV)/.installed
	$(PYTHON) bench/metadata.py

# Commits per minute of 4 writers on disjoint partitions (optimistic concurrency control) against 1; bench/results/concurrency.json.
bench-concurrency: $(VENV)/.installed
	$(PYTHON) bench/concurrency.py

# The 200k upsert tagged by RECORD_INDEX against SIMPLE (2M rows) and into 20M rows; bench/results/record_index.json.
bench-record-index: $(VENV)/.installed
	$(PYTHON) bench/record_index.py

# UPDATE / DELETE / MERGE INTO over 1M rows through SQL vs the DataFrame writes doing the same; bench/results/sql_dml.json.
bench-sql: $(VENV)/.installed java
	$(PYTHON) bench/sql_dml.py

# An expression index's build and its upkeep in a 100k upsert into 1M rows; bench/results/expression_index.json.
bench-expression-index: $(VENV)/.installed
	$(PYTHON) bench/expression_index.py

# 300 small commits with table services on and off (COW and MOR): time, files and bytes; bench/results/long_run.json.
bench-long-run: $(VENV)/.installed
	$(PYTHON) bench/long_run.py

# SIGKILL a writer with every table service on KILLS times (half COW, half MOR) and check each time that
# pyhudi and hudi-rs read a whole snapshot, no commit the writer saw return is lost, and the next write works.
KILLS ?= 500
kill-test: $(VENV)/.installed
	PYTHONPATH=$(CURDIR)/tests$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) tests/system/test_sigkill.py $(KILLS)
