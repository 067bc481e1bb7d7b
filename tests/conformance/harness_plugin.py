"""pytest plugin loaded (-p harness_plugin) into the run of google-cloud-storage's tests/conformance (run.py).

- Refuses, from Python, every connection outside 127.0.0.0/8 and ::1: nothing of the suite may leave the machine.
- Every generated test takes every resource fixture (bucket, object, notification, hmac_key, file_data), but a case
  only touches the resources of the operation it tests. The `notification` and `hmac_key` fixtures create a Pub/Sub
  notification config (which Silo does not serve, 501) and an HMAC key; for a case whose operation is neither
  `storage.notifications.*` nor `storage.hmacKey.*` they are not created, the case gets a placeholder it never reads.
  The cases of those operations keep the real fixtures (the notification ones are deselected in skips.txt).
- Scales the clients' retry back-off sleeps (CONFORMANCE_SLEEP_SCALE, below).
"""
import os
import sys
import time

import pytest

# Appended, not first: the suites around this plugin have modules of their own that nothing here may shadow.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import loopback_only  # noqa: E402


loopback_only.install("conformance harness")


class _NotCreated:
    """What an unused notification or HMAC key fixture holds: any use of it fails loudly."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        raise AssertionError(f"conformance harness: the {self._name} fixture was not created for this case")


_OWN_OPERATION = {"notification": "storage.notifications.", "hmac_key": "storage.hmacKey."}


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    prefix = _OWN_OPERATION.get(fixturedef.argname)
    if prefix is None or prefix in request.node.name:
        return None
    value = _NotCreated(fixturedef.argname)
    # As pytest's own setup does: the value is cached for the test, so teardown finds nothing to finalize.
    fixturedef.cached_result = (value, fixturedef.cache_key(request), None)
    return value


# The clients back off between retries (google-api-core: about 1 s, then 2 s, … with jitter; the resumable uploads
# likewise). The suite checks which requests are sent and retried, not how long the client waits between them, so
# every sleep in the test process is scaled by CONFORMANCE_SLEEP_SCALE (run.py: 0.1) to keep the run within CI's
# budget; 1 restores real waits.
_scale = float(os.environ.get("CONFORMANCE_SLEEP_SCALE", "1"))
if _scale != 1:
    _real_sleep = time.sleep

    def _scaled_sleep(seconds):
        _real_sleep(max(0.0, seconds) * _scale)

    time.sleep = _scaled_sleep
