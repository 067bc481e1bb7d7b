# The two commands of the README: `make run` and `make test`. Everything else is a step of those.
SWIFT ?= swift
ARGS ?=

.PHONY: deps build release run test unit integration gcs crash events hostile lint format bench perf-guard clean postgres-test \
	s3-test multinode pairs pairs-all tls schemathesis openapi-check fuzz-ci gcs-system gcs-postgres pyclients consumer docc clients \
	conformance console metrics ceph-test venvs

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The server binary with aggressive cross-module optimization, passed on the command line so that Package.swift
# carries no unsafe flag (SwiftPM refuses a product with one as a versioned dependency).
#
# A file target: `make test` runs its targets one by one, and most need the binary; it is built again only when
# something it is made from is newer (each no-op `swift build` of it costs seconds).
RELEASE_INPUTS := $(shell find Sources Plugins console -type f 2>/dev/null) Package.swift docs/openapi.json
release: deps .build/release/silo
.build/release/silo: $(RELEASE_INPUTS)
	$(SWIFT) build -c release -Xswiftc -cross-module-optimization --product silo
	@touch $@

# Runs the server on the embedded default (SQLite + local disk in ./silo-data, 127.0.0.1:9199).
run: release
	.build/release/silo serve $(ARGS)

# Every test: the format check, unit and live-socket suites, the binary's black-box checks, the GCS clients (on SQLite
# and PostgreSQL) and google-cloud-storage's own system tests and retry conformance suite, the kill -9 crash test, the
# hostile-input suite and schemathesis against a secured server, the stores on PostgreSQL and S3, two nodes.
TEST_TARGETS = deps lint unit integration gcs gcs-postgres gcs-system conformance clients pyclients consumer docc crash \
	events hostile schemathesis perf-guard postgres-test s3-test multinode pairs console metrics tls
# One target after another, each timed (the log then says where CI's minutes go); the first failure stops the run.
# Once the packages are in, every Python virtualenv the targets use is made in the background (`make venvs`, log in
# .build/venvs.log), while the builds and the unit tests run: the installs wait on the network, the builds on the
# CPU. A target that needs a venv still being made waits for it (scripts/python-venv.sh locks each), and makes it
# itself, reporting the error, if the background run failed.
test:
	@started=$$(date +%s); $(MAKE) --no-print-directory deps || { echo "make test: deps failed"; exit 1; }; \
	  echo "make test: deps took $$(( $$(date +%s) - started )) s"; \
	  mkdir -p .build; setsid nice -n 10 $(MAKE) --no-print-directory venvs >.build/venvs.log 2>&1 & venvs=$$!; \
	  trap 'kill -- -'$$venvs' 2>/dev/null || true' EXIT; \
	  for target in $(filter-out deps,$(TEST_TARGETS)); do started=$$(date +%s); \
	  $(MAKE) --no-print-directory $$target || { echo "make test: $$target failed"; exit 1; }; \
	  echo "make test: $$target took $$(( $$(date +%s) - started )) s"; done

# Every Python virtualenv of the test targets, as venv:requirements, in the order `make test` first needs them.
CLIENTS_REQUIREMENTS = .build/clients-requirements.txt
VENVS = gcs:tests/gcs/requirements.txt gcs-system:tests/gcs-system/requirements.txt \
	$(foreach r,$(wildcard tests/gcs-system/requirements-gcsfs-*.txt),$(r:tests/gcs-system/requirements-%.txt=%):$(r)) \
	clients:$(CLIENTS_REQUIREMENTS) pyclients:tests/pyclients/requirements.txt events:tests/events/requirements.txt \
	schemathesis:tests/schemathesis/requirements.txt seaweedfs:tests/s3/requirements.txt \
	console:tests/console/requirements.txt metrics:tests/metrics/requirements.txt tls:tests/tls/requirements.txt
venvs: $(CLIENTS_REQUIREMENTS)
	@for venv in $(VENVS); do started=$$(date +%s); \
	  scripts/python-venv.sh .venv/$${venv%%:*} $${venv#*:} || exit 1; \
	  echo "venvs: .venv/$${venv%%:*} took $$(( $$(date +%s) - started )) s"; done

$(CLIENTS_REQUIREMENTS): $(wildcard tests/clients/requirements/*.txt)
	@mkdir -p $(@D)
	cat $^ >$@

unit: deps
	# Every import of one of the package's modules is a dependency Package.swift declares (SwiftPM would also let
	# through a module that merely happens to be built first).
	SWIFT=$(SWIFT) python3 scripts/check-imports.py
	$(SWIFT) build --build-tests
	# A bound on the whole run: a hang fails fast instead of eating CI's 90 minutes.
	timeout -k 30 1500 $(SWIFT) test --skip-build --parallel
	# Every fuzz harness, linked against the debug build just made and run for 2 s from its seeds (under a minute in
	# all); `make fuzz-ci` builds them with the sanitizers and fuzzes.
	fuzz/smoke.sh

integration: release
	python3 tests/integration/serve_test.py --binary .build/release/silo
	python3 tests/integration/cli_test.py --binary .build/release/silo
	python3 tests/integration/emulator_control_test.py --binary .build/release/silo

# The metadata conformance suite and the PostgreSQL store's own tests against a throwaway PostgreSQL 15 cluster on
# 127.0.0.1 (scripts/with-postgres.sh starts it and stops it, also on failure).
postgres-test: deps
	$(SWIFT) build --build-tests
	scripts/with-postgres.sh $(SWIFT) test --skip-build --filter 'MetadataStoreConformanceTests|PostgresMetadataStoreTests|PostgresOutboxClaimTests|PostgresWriterLeaseTests'

crash: release
	python3 tests/crash/crash_test.py --binary .build/release/silo --rounds 10

# Storage events to a webhook receiver: counts per type across every kind of write, signatures, retries, and a
# kill -9 mid-delivery (docs/events.md); about a minute.
events: release
	scripts/python-venv.sh .venv/events tests/events/requirements.txt
	.venv/events/bin/python tests/events/events_test.py --binary .build/release/silo

# Attacks a live server on 127.0.0.1 (header injection, unauthorized writes, size caps, slowloris, floods, smuggling,
# malformed input, JSON and rules bombs) and checks it stays up and loses nothing; ~30 s (tests/hostile/README.md).
hostile: release
	python3 tests/hostile/hostile_test.py --binary .build/release/silo

lint:
	scripts/format.sh --check

format:
	scripts/format.sh

# Silo vs nginx / dd / curl / gcp-storage-emulator (bench/results/run.md; includes bench/sdk-download.sh).
bench: release
	bench/run

# Deterministic CI guard: system calls per request against bench/thresholds.json (no timing).
perf-guard: release
	bench/guard.sh

clean:
	rm -rf .build

# Every libFuzzer harness (fuzz/run), built with the sanitizers and run for 15 s each; fails on any finding
# (fuzz/RESULTS.md). Not part of `make test`: the sanitizer build of the fuzzed modules takes about 6 minutes on 2
# cores; `make unit` builds every harness against the debug build and runs each for 2 s instead (fuzz/smoke.sh).
fuzz-ci: deps
	fuzz/ci.sh

# The client matrix: gsutil, rclone, google-cloud-storage, obstore, polars, pyarrow, gcsfs, ... each doing its users'
# everyday workflow against a live Silo (tests/clients/README.md).
clients: release $(CLIENTS_REQUIREMENTS)
	scripts/python-venv.sh .venv/clients $(CLIENTS_REQUIREMENTS)
	SILO_BINARY=.build/release/silo PATH="$(CURDIR)/.venv/clients/bin:$$PATH" .venv/clients/bin/python -m pytest -q -n 2 \
	  tests/clients

# The GCS JSON API through the real Python clients (google-cloud-storage, gcsfs, firebase-admin) from PyPI.
gcs: release
	scripts/python-venv.sh .venv/gcs tests/gcs/requirements.txt
	SILO_BINARY=.build/release/silo .venv/gcs/bin/python -m pytest -q tests/gcs

# /metrics parsed by prometheus-client's parser, the access log, and a real Prometheus (Debian) scraping a secured
# server with its admin key (tests/metrics).
metrics: release
	scripts/python-venv.sh .venv/metrics tests/metrics/requirements.txt
	SILO_BINARY=.build/release/silo .venv/metrics/bin/python -m pytest -q tests/metrics

# `silo serve --tls-cert/--tls-key` against curl, google-cloud-storage, `silo cp` and SIGHUP reloads (tests/tls).
tls: release
	scripts/python-venv.sh .venv/tls tests/tls/requirements.txt
	SILO_BINARY=.build/release/silo .venv/tls/bin/python -m pytest -q tests/tls

# pyrebase4 and firebase-rest-api (the Python clients of the v0 REST API) against a secured server (tests/pyclients).
pyclients: release
	scripts/python-venv.sh .venv/pyclients tests/pyclients/requirements.txt
	SILO_BINARY=.build/release/silo .venv/pyclients/bin/python -m pytest -q tests/pyclients

# An app package that depends on SiloStorage by version (a tagged clone of this repository) builds, and its top-level
# seed code works against a live server (tests/consumer/run.sh).
consumer: release
	tests/consumer/run.sh .build/release/silo

# The web console (/console) driven in headless Chromium (Debian's chromium + chromium-driver, selenium from PyPI)
# through sign-in, uploads with a cut connection, browsing, previews, metadata, tokens, the rules playground, delete,
# and accessibility checks (docs/console.md). Screenshots of every step: .build/console-artifacts.
CONSOLE_ARTIFACTS ?= $(CURDIR)/.build/console-artifacts
console: release
	scripts/python-venv.sh .venv/console tests/console/requirements.txt
	@echo "console screenshots: $(CONSOLE_ARTIFACTS)"
	SILO_BINARY=.build/release/silo CONSOLE_ARTIFACTS=$(CONSOLE_ARTIFACTS) .venv/console/bin/python -m pytest -q tests/console
	@echo "console screenshots: $(CONSOLE_ARTIFACTS) ($$(ls $(CONSOLE_ARTIFACTS)/*.png | wc -l) files)"

# SiloStorage's DocC documentation, with the toolchain's docc (scripts/docc.sh).
docc: deps
	scripts/docc.sh

# The same tests with metadata on a throwaway PostgreSQL 15 (scripts/with-postgres.sh), bytes on local disk.
gcs-postgres: release
	scripts/python-venv.sh .venv/gcs tests/gcs/requirements.txt
	scripts/with-postgres.sh sh -c 'SILO_GCS_METADATA=$$SILO_TEST_POSTGRES_URL SILO_BINARY=.build/release/silo \
	  .venv/gcs/bin/python -m pytest -q tests/gcs'

# google-cloud-storage's retry conformance suite (tests/conformance of its PyPI sdist, driven by
# retry_strategy_test_data.json) against `silo serve --test-faults` in storage-testbench's place; about 30 s, four
# tests at a time. tests/conformance/README.md has the counts and every deselected test with its reason.
# SILO_BINARY=PATH tests that binary instead of building one; CONFORMANCE_REPORT_ONLY=1 reports without failing.
conformance: $(if $(SILO_BINARY),,release)
	tests/conformance/run.sh

# google-cloud-storage's own system tests (from its PyPI sdist) and gcsfs/pandas at two pinned versions against a live
# server; tests/gcs-system/STATUS.md has the counts and every deselected or self-skipped test with its reason.
# SILO_BINARY=PATH tests that binary instead of building one; GCS_SYSTEM_REPORT_ONLY=1 reports without failing.
gcs-system: $(if $(SILO_BINARY),,release)
	tests/gcs-system/run.sh

# docs/openapi.json is a valid OpenAPI 3.1 document (the server embeds the file itself at build time).
openapi-check:
	scripts/python-venv.sh .venv/schemathesis tests/schemathesis/requirements.txt
	.venv/schemathesis/bin/openapi-spec-validator docs/openapi.json

# schemathesis against a live secured `silo serve` (rules, HS256 tokens, admin key), bounded in examples and time:
# no 5xx, no crash, every answer as docs/openapi.json documents it (tests/schemathesis/run.sh). About 2 minutes.
schemathesis: release openapi-check
	SILO_BINARY=.build/release/silo tests/schemathesis/run.sh

# The blob conformance suite and the S3 tests against a throwaway SeaweedFS (pinned PyPI wheel, 127.0.0.1 only),
# stopped again however the tests end. S3_PORT / WEED_BASE_PORT move it off 18333 / 17001-17003.
S3_TESTS = BlobStoreConformanceTests|S3Conformance|S3LiveTests|S3OfflineTests|SigV4SignerTests
# One test at a time (--no-parallel): S3LiveTests bounds the process's resident memory while it writes 100 MiB, and
# tests running beside it (other blobs, other parts) once added 48.6 MiB of their own to that figure.
s3-test: deps
	$(SWIFT) build --build-tests
	@set -e; vars=$$(scripts/seaweedfs-up.sh); eval "$$vars"; \
	trap 'scripts/seaweedfs-down.sh "$$SEAWEEDFS_DIR"' EXIT; \
	$(SWIFT) test --skip-build --no-parallel --filter '$(S3_TESTS)'

# Two silo nodes on one PostgreSQL and one SeaweedFS: read-after-write, resumable across nodes, node death, races;
# then uploads to one node while the other restarts and collects garbage (every acknowledged upload must read back).
multinode: release
	scripts/with-services.sh sh -c 'python3 tests/multinode/multinode_test.py --binary .build/release/silo && \
	  python3 tests/multinode/restarts_under_uploads.py --binary .build/release/silo'

# The same S3 tests and both multinode checks with the RADOS Gateway of a one-host Ceph cluster (Debian's Ceph 16:
# monitor, manager, one BlueStore OSD on a sparse file, RGW on 127.0.0.1) as the S3 store instead of SeaweedFS, on a
# throwaway PostgreSQL (scripts/with-ceph.sh); docs/s3-engines.md lists what differs. Not part of `make test`: it
# installs Ceph (273 MiB), and the cluster and tests take 4-5 minutes on 2 shared cores (cluster start 35 s, S3 suites
# 1.5-2.5 min, multinode 2 min), on top of the builds.
ceph-test: release
	scripts/install-deps.sh ceph
	$(SWIFT) build --build-tests
	scripts/with-ceph.sh sh -c '$(SWIFT) test --skip-build --no-parallel --filter "$(S3_TESTS)" && \
	  python3 tests/multinode/multinode_test.py --binary .build/release/silo && \
	  python3 tests/multinode/restarts_under_uploads.py --binary .build/release/silo'

# The server suites again with both other stores at once, PostgreSQL + S3 (`make test`); `make pairs-all` runs
# every other pair of {SQLite, PostgreSQL} x {disk, S3}, three times as long. The default pair is SQLite + disk, and
# `gcs-postgres` runs the GCS clients on PostgreSQL + disk.
PAIRS ?= postgres s3
pairs: deps
	$(SWIFT) build --build-tests
	scripts/with-services.sh sh -c 'for pair in "$(PAIRS)"; do set -- $$pair; \
	  echo "== server suites on $$1 + $$2"; \
	  SILO_TEST_SERVER_METADATA=$$1 SILO_TEST_SERVER_BLOBS=$$2 $(SWIFT) test --skip-build --filter SiloServerTests || exit 1; done'

pairs-all:
	$(MAKE) pairs PAIRS='sqlite s3" "postgres disk" "postgres s3'
