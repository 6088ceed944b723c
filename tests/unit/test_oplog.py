"""Operational log format: JSON fields after the plain line, placeholders, tracebacks, redacted access logs."""

from __future__ import annotations

import logging

import orjson

from service.oplog import PLAIN_FORMAT, JsonFieldsFormatter, RedactQueryString, extra_fields


def record(msg="memory_stored", args=None, exc_info=None, **extra) -> logging.LogRecord:
    r = logging.LogRecord("engram.api", logging.INFO, __file__, 1, msg, args, exc_info)
    for k, v in extra.items():
        setattr(r, k, v)
    return r


FMT = JsonFieldsFormatter("%(levelname)s %(name)s: %(message)s")


def test_extra_fields_become_one_json_object():
    line = FMT.format(record(memory_id="m1", latency_ms=12.5, tags_count=2, storage_status="stored"))
    head, _, tail = line.partition(" {")
    assert head == "INFO engram.api: memory_stored"
    assert orjson.loads("{" + tail) == {"memory_id": "m1", "latency_ms": 12.5, "tags_count": 2, "storage_status": "stored"}


def test_plain_records_keep_the_plain_format():
    assert FMT.format(record("ready in %d s", (3,))) == "INFO engram.api: ready in 3 s"
    assert extra_fields(record()) == {}


def test_unsupported_values_become_placeholders():
    line = FMT.format(record(obj=object(), nan=float("nan"), nested={"a": (1, 2)}, ok=None))
    assert orjson.loads(line.split(" ", 3)[3]) == {"obj": "<object>", "nan": "nan", "nested": {"a": [1, 2]}, "ok": None}
    bad = FMT.format(record(text="\ud800"))
    assert bad.endswith('{"text":"<unserializable>"}')


def test_exceptions_keep_their_traceback_after_the_fields():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        line = FMT.format(record("failed", exc_info=sys.exc_info(), count=1))
    first, rest = line.split("\n", 1)
    assert first == 'INFO engram.api: failed {"count":1}'
    assert rest.startswith("Traceback") and "ValueError: boom" in rest


def test_access_log_loses_its_query_string():
    r = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                          ("127.0.0.1:5", "GET", "/recall?query=secret+plans&api_key=t0k", "1.1", 200), None)
    assert RedactQueryString().filter(r)
    assert r.getMessage() == '127.0.0.1:5 - "GET /recall HTTP/1.1" 200'
    plain = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, "%s", ("no query",), None)
    RedactQueryString().filter(plain)
    assert plain.getMessage() == "no query"
    assert "%(asctime)s" in PLAIN_FORMAT


def test_configured_service_logging_never_traces_engine_bodies():
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import logging; from service.oplog import configure_logging; configure_logging('debug'); import opensearchpy; "
        "t = logging.getLogger('opensearchpy.trace'); print(t.handlers == [] and t.propagate is False)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"]
