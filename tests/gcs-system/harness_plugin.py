"""pytest plugin loaded (-p harness_plugin) into every run of run.py, around tests that are not ours.

- Writes a line per test start and end to $GCS_SYSTEM_MARKERS, so the exchanges the capture relay recorded can be
  attributed to the test that made them (tests run one at a time).
- Refuses, from Python, every connection to an address outside 127.0.0.0/8 and ::1: the tests under it were written
  for Google's servers, and none of their traffic may leave the machine (run.py also points every proxy variable at
  a dead loopback port, which covers gRPC's C core).
- GCS_SYSTEM_PROPAGATION_SECONDS (run.py sets 0): the upstream helper await_config_changes_propagate() sleeps 12 s
  after bucket configuration changes for Google's propagation delay; Silo applies a change in the same transaction,
  so the wait only costs time. Calls that pass their own duration (a retention period that must really elapse) keep it.
"""
import json
import os
import sys
import time

import pytest

# Appended, not first: the suites around this plugin have modules of their own that nothing here may shadow.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import loopback_only  # noqa: E402

_markers = None


loopback_only.install("gcs-system harness")


def _mark(nodeid, phase):
    global _markers
    path = os.environ.get("GCS_SYSTEM_MARKERS")
    if not path:
        return
    if _markers is None:
        _markers = open(path, "a", buffering=1)
    _markers.write(json.dumps({"t": time.time(), "run": os.environ.get("GCS_SYSTEM_LABEL", ""),
                               "test": nodeid, "phase": phase}) + "\n")


def pytest_runtest_logstart(nodeid, location):
    _mark(nodeid, "start")


def pytest_runtest_logfinish(nodeid, location):
    _mark(nodeid, "end")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    seconds = os.environ.get("GCS_SYSTEM_PROPAGATION_SECONDS")
    if seconds is None:
        return
    import sys
    for name, module in list(sys.modules.items()):
        if name.endswith("system._helpers") and hasattr(module, "await_config_changes_propagate"):
            original = module.await_config_changes_propagate

            def shortened(sec=None, _original=original):
                return _original(float(seconds) if sec is None else sec)

            module.await_config_changes_propagate = shortened
