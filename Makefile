# The two commands of the README: `make run` and `make test`. Everything else is a step of those.
SWIFT ?= swift
ARGS ?=

.PHONY: deps build release run test unit integration gcs crash lint format bench perf-guard clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product silo

# Runs the server on the embedded default (SQLite + local disk in ./silo-data, 127.0.0.1:9199).
run: release
	.build/release/silo serve $(ARGS)

# Every test: the format check, unit and live-socket suites, the binary's black-box checks, the kill -9 crash test.
test: deps lint unit integration gcs crash

unit: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel

integration: release
	python3 tests/integration/serve_test.py --binary .build/release/silo

crash: release
	python3 tests/crash/crash_test.py --binary .build/release/silo --rounds 10

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

# The GCS JSON API through the real Python clients (google-cloud-storage, gcsfs, firebase-admin) from PyPI.
gcs: release
	scripts/python-venv.sh .venv/gcs tests/gcs/requirements.txt
	SILO_BINARY=.build/release/silo .venv/gcs/bin/python -m pytest -q tests/gcs
