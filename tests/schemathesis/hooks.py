"""Schemathesis hooks for Silo (loaded through SCHEMATHESIS_HOOKS by run.py).

Two things OpenAPI cannot say about Silo's answers, both stated in docs/openapi.json with an extension, so the
conformance checks can honour them instead of being switched off:

- `x-silo-empty-body: true` on a response object: that status may come with no body and no Content-Type (a
  resumable start, an intermediate chunk, a query or cancel answer 200 with headers only, while a finalize answers
  200 with JSON on the same URL).
- `x-silo-media-query` on an operation: when the request's query matches it (`{}`: always), a 2xx body is the
  object's own bytes under its stored Content-Type, not the JSON the same status documents for metadata.

`silo_content_type_conformance` and `silo_response_schema_conformance` are the built-in checks with exactly these
two exemptions; run.py enables them in place of `content_type_conformance` and `response_schema_conformance`.
`silo_not_a_server_error` is `not_a_server_error` except for a 5xx the operation documents by its exact code (the
501 of a GCS method Silo does not serve, the 503 of a busy upload session): that is an answer the document
promises, not a crash; any other 5xx still fails. Everything else is delegated unchanged.

Also serializers for `multipart/related` (the two-part uploads of both APIs) and `multipart/mixed` (batches), which
schemathesis does not ship.
"""
import json
import secrets

import schemathesis
from schemathesis.core.transport import response_content_type
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance
from schemathesis.transport.requests import REQUESTS_TRANSPORT


def _response_definition(case, response):
    found = case.operation.responses.find_by_status_code(response.status_code)
    return None if found is None else found.definition


def _empty_allowed(case, response):
    if response.content or response_content_type(response) is not None:
        return False
    definition = _response_definition(case, response)
    return bool(definition and definition.get("x-silo-empty-body"))


def _is_media_request(case, response):
    if not 200 <= response.status_code < 300:
        return False
    switch = case.operation.definition.raw.get("x-silo-media-query")
    if switch is None:
        return False
    query = case.query or {}
    return all(str(query.get(name)) == value for name, value in switch.items())


@schemathesis.check
def silo_not_a_server_error(ctx, response, case):
    if response.status_code >= 500 and str(response.status_code) in case.operation.definition.raw.get("responses", {}):
        return True
    return not_a_server_error(ctx, response, case)


@schemathesis.check
def silo_content_type_conformance(ctx, response, case):
    if _empty_allowed(case, response):
        return True
    return content_type_conformance(ctx, response, case)


@schemathesis.check
def silo_response_schema_conformance(ctx, response, case):
    if _empty_allowed(case, response) or _is_media_request(case, response):
        return True
    return response_schema_conformance(ctx, response, case)


@REQUESTS_TRANSPORT.serializer("multipart/related")
def multipart_related(ctx, value):
    """Metadata JSON part, then the media part, in the byte layout the Firebase JS SDK sends."""
    boundary = "silo" + secrets.token_hex(8)
    if isinstance(value, dict):
        metadata, media = value.get("metadata", {}), value.get("media", b"")
    else:
        metadata, media = value, b""
    metadata_bytes = metadata if isinstance(metadata, bytes) else json.dumps(metadata).encode()
    if isinstance(media, str):
        media = media.encode("utf-8", "surrogatepass")
    elif not isinstance(media, bytes):
        media = json.dumps(media).encode()
    body = (
        f"--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n".encode()
        + metadata_bytes
        + f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        + media
        + f"\r\n--{boundary}--".encode()
    )
    return {"data": body, "headers": {"Content-Type": f"multipart/related; boundary={boundary}"}}


@REQUESTS_TRANSPORT.serializer("multipart/mixed")
def multipart_mixed(ctx, value):
    """A batch of two calls: a listing, then the generated text as the embedded request (fuzzing the call parser)."""
    boundary = "silo" + secrets.token_hex(8)
    if isinstance(value, bytes):
        embedded = value
    elif isinstance(value, str):
        embedded = value.encode("utf-8", "surrogatepass")
    else:
        embedded = json.dumps(value).encode()
    body = (
        f"--{boundary}\r\nContent-Type: application/http\r\nContent-ID: <list>\r\n\r\n".encode()
        + b"GET /storage/v1/b/demo.appspot.com/o?maxResults=1 HTTP/1.1\r\n\r\n"
        + f"\r\n--{boundary}\r\nContent-Type: application/http\r\nContent-ID: <fuzz>\r\n\r\n".encode()
        + embedded
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return {"data": body, "headers": {"Content-Type": f'multipart/mixed; boundary="{boundary}"'}}
