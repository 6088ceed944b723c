"""Operational log format: JSON fields after the plain line, placeholders, tracebacks, redacted access logs."""

from __future__ import annotations

import logging

import orjson

from service.observability.oplog import PLAIN_FORMAT, JsonFieldsFormatter, RedactQueryString, extra_fields


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
        "import logging; from service.observability.oplog import configure_logging; configure_logging('debug'); import opensearchpy; "
        "t = logging.getLogger('opensearchpy.trace'); print(t.handlers == [] and t.propagate is False)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"]


# --- LOG_FORMAT=json, request ids, the engine client's lines ------------------------------------
JSON = JsonFieldsFormatter(PLAIN_FORMAT, json_lines=True)


def test_json_lines_are_one_object_with_the_fields():
    r = record("memory_stored", memory_id="m1", latency_ms=1.5, request_id="req-1")
    r.created = 1_700_000_000.25
    doc = orjson.loads(JSON.format(r))
    assert doc == {"time": "2023-11-14T22:13:20.250Z", "level": "INFO", "logger": "engram.api", "message": "memory_stored",
                   "memory_id": "m1", "latency_ms": 1.5, "request_id": "req-1"}


def test_json_lines_keep_the_traceback_inside_the_object_and_reserved_keys_win():
    import sys

    try:
        raise ValueError("boom")
    except ValueError:
        line = JSON.format(record("failed %s", ("now",), exc_info=sys.exc_info(), level="fake", nan=float("nan")))
    assert "\n" not in line
    doc = orjson.loads(line)
    assert doc["message"] == "failed now" and doc["level"] == "INFO" and doc["nan"] == "nan"
    assert doc["exception"].startswith("Traceback") and doc["exception"].endswith("ValueError: boom")


def test_json_lines_survive_lone_surrogates():
    line = JSON.format(record("bad \ud800 text", tag="\udfff", ok="é"))
    line.encode("utf-8")  # writable to a UTF-8 stream
    doc = orjson.loads(line)
    assert (doc["message"], doc["tag"], doc["ok"]) == ("bad ? text", "?", "é")


def test_uvicorns_colour_copy_of_its_message_is_not_a_field():
    assert extra_fields(record("Started server process [%d]", (1,), color_message="Started \x1b[36m%d\x1b[0m")) == {}


def test_the_request_id_filter_tags_records_of_a_request_only():
    from asgi_correlation_id.context import correlation_id

    from service.observability.request_id import RequestIdFilter

    outside = record("plain")
    assert RequestIdFilter().filter(outside) and not hasattr(outside, "request_id")
    token = correlation_id.set("abc-123")
    try:
        inside = record("memory_stored", memory_id="m1")
        RequestIdFilter().filter(inside)
    finally:
        correlation_id.reset(token)
    assert FMT.format(inside) == 'INFO engram.api: memory_stored {"memory_id":"m1","request_id":"abc-123"}'


def test_engine_request_lines_lose_their_traceback_and_404s():
    from service.observability.oplog import ENGINE_REQUEST_FAILED, EngineRequestLog, engine_log_muted

    def failed(status, exc_info=None):
        return logging.LogRecord("opensearch", logging.WARNING, __file__, 1, ENGINE_REQUEST_FAILED, ("GET", "http://h/_doc/x", status, 0.01), exc_info)

    try:
        raise ConnectionError("refused")
    except ConnectionError:
        import sys

        refused = failed("N/A", sys.exc_info())
    f = EngineRequestLog()
    assert f.filter(refused) and refused.exc_info is None
    assert FMT.format(refused) == "WARNING opensearch: GET http://h/_doc/x [status:N/A request:0.010s]"
    assert not f.filter(failed(404))
    assert f.filter(failed(503))
    with engine_log_muted():
        assert not f.filter(failed(503))
    assert f.filter(failed(503))


def test_the_clients_immediate_retry_of_a_request_is_one_line():
    import threading

    from asgi_correlation_id.context import correlation_id

    from service.observability.oplog import ENGINE_REQUEST_FAILED, EngineRequestLog

    def failed(url="http://h/_msearch", status="N/A"):
        return logging.LogRecord("opensearch", logging.WARNING, __file__, 1, ENGINE_REQUEST_FAILED, ("POST", url, status, 0.0), None)

    def in_request(request_id, *records):
        token = correlation_id.set(request_id)
        try:
            return [f.filter(r) for r in records]
        finally:
            correlation_id.reset(token)

    f = EngineRequestLog()
    assert in_request("req-1", failed(), failed()) == [True, False]  # the retry on the same node
    assert in_request("req-1", failed(url="http://other/_msearch"), failed(status=503)) == [True, True]  # another node, another failure
    assert in_request("req-2", failed(status=503)) == [True]  # the same line, another request
    assert [f.filter(failed(status=503)) for _ in range(2)] == [True, True]  # outside a request: every line (workers mute their own)
    heard = []
    assert in_request("req-3", failed()) == [True]
    t = threading.Thread(target=lambda: heard.append(in_request("req-3", failed())))
    t.start()
    t.join()
    assert heard == [[True]]  # another thread's line is its own


def test_request_id_validation():
    from service.observability.request_id import MAX_LENGTH, new_request_id, valid_request_id

    for ok in ("abc", "0f3c6a3e-8f6b-4c1e-9d7f-1c2b3a4d5e6f", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", "a" * MAX_LENGTH, "svc:a/b+c@d"):
        assert valid_request_id(ok), ok
    for bad in ("", "a" * (MAX_LENGTH + 1), "two words", "quote\"d", "new\nline", "comma,separated", "<script>", "é", "\ud800"):
        assert not valid_request_id(bad), bad
    made = new_request_id()
    assert len(made) == 32 and valid_request_id(made) and made != new_request_id()
