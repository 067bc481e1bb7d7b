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
import ipaddress
import json
import os
import socket
import time

import pytest

_markers = None


def _loopback(host):
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        if not _loopback(str(address[0])):
            raise ConnectionRefusedError(f"gcs-system harness: no connection outside loopback ({address[0]})")


def _connect(self, address):
    _check(self, address)
    return _real_connect(self, address)


def _connect_ex(self, address):
    _check(self, address)
    return _real_connect_ex(self, address)


def _getaddrinfo(host, *args, **kwargs):
    if host is not None and not _loopback(host if isinstance(host, str) else host.decode()):
        raise socket.gaierror(socket.EAI_NONAME, f"gcs-system harness: only loopback names resolve ({host})")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _connect
socket.socket.connect_ex = _connect_ex
socket.getaddrinfo = _getaddrinfo


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
