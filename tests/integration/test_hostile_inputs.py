"""A hostile client cannot break the service for anyone: bad input is a 400/413 with the error shape,
and nothing stored (even written straight into the engine, bypassing validation) breaks a read."""

from __future__ import annotations

import json

import pytest

from tests.integration.support import assert_error, ids, mem, recall

NAN_VECTOR = "[NaN" + ",0.1" * 383 + "]"


def raw(api, method: str, path: str, body: str, **headers):
    return api.request(method, path, content=body.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json", **headers})


def count(api) -> int:
    return api.get("/health").json()["memory_count"]


def nested(depth: int) -> dict:
    doc: dict = {"leaf": 1}
    for _ in range(depth):
        doc = {"a": doc}
    return doc


# --- 1. what may be stored ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"content": "lone \\ud800 surrogate"}', "content"),
        ('{"content": "ok", "tags": ["a\\ud800"]}', "tags[0]"),
        ('{"content": "ok", "metadata": {"k": "\\udfff"}}', "metadata.k"),
        ('{"content": "ok", "metadata": {"\\ud800": 1}}', "metadata key"),
        ('{"content": "ok", "type": "Insight\\ud800"}', "type"),
        ('{"content": "ok", "metadata": {"k": NaN}}', "metadata.k"),
        ('{"content": "ok", "metadata": {"k": [1, Infinity]}}', "metadata.k[1]"),
        ('{"content": "ok", "importance": NaN}', "importance"),
    ],
)
def test_post_refuses_what_could_not_be_read_back(api, body, field):
    before = count(api)
    resp = raw(api, "POST", "/memory", body)
    assert_error(resp, 400, field)
    assert count(api) == before  # refused means not stored (a surrogate tag used to answer 500 AND store)


def test_metadata_depth_keys_and_size_are_bounded(make_client):
    api = make_client(metadata_max_depth=8, metadata_max_keys=50, metadata_max_bytes=2000)
    assert api.post("/memory", json={"content": "shallow", "metadata": nested(7)}).status_code == 201
    assert_error(api.post("/memory", json={"content": "deep", "metadata": nested(8)}), 400, "METADATA_MAX_DEPTH")
    assert_error(api.post("/memory", json={"content": "wide", "metadata": {f"k{i}": i for i in range(51)}}), 400, "METADATA_MAX_KEYS")
    assert_error(api.post("/memory", json={"content": "big", "metadata": {"k": "x" * 3000}}), 400, "METADATA_MAX_BYTES")


def test_default_limits_refuse_the_reported_payloads(api):
    assert_error(api.post("/memory", json={"content": "deep", "metadata": nested(300)}), 400, "metadata", "deeper than 32")
    assert_error(api.post("/memory", json={"content": "wide", "metadata": {f"k{i}": 0 for i in range(100_000)}}), 400, "METADATA_MAX_KEYS")
    assert_error(api.post("/memory", json={"content": "huge", "metadata": {"blob": "x" * 50_000_000}}), 413, "MAX_REQUEST_BYTES")
    assert_error(api.post("/memory", json={"content": "big", "metadata": {"blob": "x" * 100_000}}), 400, "METADATA_MAX_BYTES")
    assert_error(api.post("/memory", json={"content": "tagged", "tags": ["x" * 257]}), 400, "tags[0]", "256")
    assert_error(api.post("/memory", json={"content": "tagged", "tags": [f"t{i}" for i in range(201)]}), 400, "TAG_MAX_COUNT")


def test_request_body_limit_is_413_with_the_error_shape(make_client):
    api = make_client(max_request_bytes=4096)
    assert_error(api.post("/memory", json={"content": "x" * 5000}), 413, "MAX_REQUEST_BYTES")

    def chunks():  # no Content-Length: the limit applies to what is streamed
        yield b'{"content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    resp = api.post("/memory", content=chunks(), headers={"content-type": "application/json"})
    assert_error(resp, 413, "MAX_REQUEST_BYTES")
    assert set(resp.json()) == {"status", "code", "message"}
    assert api.post("/memory", json={"content": "small"}).status_code == 201
    # Refused before routing, but in the shape of the route it was for: Signet's adds `error`,
    # Hindsight's `detail`.
    signet = api.post("/api/memory/recall", json={"query": "x" * 5000})
    assert_error(signet, 413, "MAX_REQUEST_BYTES")
    assert signet.json()["error"] == signet.json()["message"]
    hindsight = api.post("/v1/default/banks/b/memories", content=chunks(), headers={"content-type": "application/json"})
    assert_error(hindsight, 413, "MAX_REQUEST_BYTES")
    assert hindsight.json()["detail"] == hindsight.json()["message"]


def test_t_invalid_must_be_after_t_valid(api):
    assert_error(api.post("/memory", json={"content": "never valid", "t_valid": "2025-01-02T00:00:00Z", "t_invalid": "2025-01-01T00:00:00Z"}), 400, "t_invalid")
    mid = mem(api, "valid from 2025-01-02", t_valid="2025-01-02T00:00:00Z")
    assert_error(api.patch(f"/memory/{mid}", json={"t_invalid": "2025-01-01T00:00:00Z"}), 400, "t_invalid", "t_valid")
    assert api.patch(f"/memory/{mid}", json={"t_invalid": "2025-02-01T00:00:00Z"}).status_code == 200


# --- 3. PATCH validates exactly like POST -----------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('{"relevance_score": 1e308}', "relevance_score"),
        ('{"relevance_score": Infinity}', "relevance_score"),
        ('{"embedding": ' + NAN_VECTOR + "}", "embedding"),
        ('{"embedding": [' + ",".join(["0"] * 384) + "]}", "all zeros"),
        ('{"embedding": [1e39' + ",0" * 383 + "]}", "32-bit"),
        ('{"tags": ["' + "x" * 100_000 + '"]}', "tags[0]"),
        ('{"content": "lone \\ud800"}', "content"),
        ('{"metadata": {"k": "\\ud800"}}', "metadata.k"),
        ('{"type": "' + "T" * 1000 + '"}', "type"),
    ],
)
def test_patch_refuses_what_post_refuses(api, body, fragment):
    mid = mem(api, "to be patched")
    assert_error(raw(api, "PATCH", f"/memory/{mid}", body), 400, fragment)
    assert api.get(f"/memory/{mid}").json()["memory"]["content"] == "to be patched"


def test_post_refuses_bad_vectors_as_400(api):
    assert_error(api.post("/memory", json={"content": "zero", "embedding": [0.0] * 384}), 400, "all zeros")
    assert_error(raw(api, "POST", "/memory", '{"content": "nan", "embedding": ' + NAN_VECTOR + "}"), 400, "embedding")
    assert_error(api.post("/memory/batch", json={"memories": [{"content": "ok"}, {"content": "zero", "embedding": [0.0] * 384}]}), 400, "memories[1].embedding")


# --- 3. recall: client mistakes are 400, long queries simply work ------------------------------------
def test_recall_with_a_zero_vector_is_400(api):
    assert_error(api.get("/recall", params={"embedding": ",".join(["0"] * 384)}), 400, "all zeros")


def test_a_very_long_query_is_answered(api):
    target = mem(api, "The quarterly roadmap names w17 and w42 as the priorities")
    mem(api, "Lunch was soup")
    words = " ".join(f"w{i}" for i in range(700))
    body = recall(api, query=f"quarterly roadmap priorities {words}", limit=2)
    assert ids(body)[0] == target
    cjk = recall(api, query="中文" * 600 + " roadmap", limit=2)
    assert cjk["status"] == "success"
    glued = recall(api, query="a1" * 4000, limit=2)  # one token the analyzers split into thousands
    assert glued["status"] == "success"


def test_list_parameters_are_bounded(api):
    assert_error(api.get("/recall", params=[("queries", f"q{i}") for i in range(21)]), 400, "queries")
    assert_error(api.get("/recall", params={"tags": ",".join(f"t{i}" for i in range(201))}), 400, "tags")
    assert_error(api.get("/memory/by-tag", params={"tags": ",".join(f"t{i}" for i in range(201))}), 400, "tags")


# --- 1. nothing stored can break a read ---------------------------------------------------------------
@pytest.mark.own_app('writes a fixed id and reads the engine directly')
def test_a_corrupt_stored_memory_never_fails_a_read(api, os_client):
    """Documents that validation would refuse, written straight into the engine (as an older version,
    a restore from elsewhere or a hand edit could): every read that returns them still answers 200."""
    good = mem(api, "healthy memory about the deploy pipeline", tags=["ops"])
    alias = api.app.state.settings.memories_alias
    vector = api.app.state.embedder.embed_documents(["corrupt memory about the deploy pipeline"])[0]
    deep: dict = {"x": 1}
    for _ in range(300):
        deep = {"a": deep}
    doc = {
        "id": "corrupt-1", "bank": "default", "content": "corrupt memory about the deploy pipeline \ud800",
        "tags": ["ops", "bad\udfff"], "tags_norm": ["ops"], "tag_prefixes": ["ops"], "type": "Context",
        "importance": 0.9, "confidence": 0.5, "timestamp": "2026-01-01T00:00:00+00:00", "metadata": {"deep": deep, "s": "\ud800"},
        "embedding": vector,
    }
    # json.dumps escapes lone surrogates as \ud800, which the engine stores as given.
    os_client.index(index=alias, id="corrupt-1", body=json.dumps(doc), refresh=True)

    body = recall(api, query="deploy pipeline", limit=5)
    assert set(ids(body)) == {good, "corrupt-1"}
    corrupt = next(r for r in body["results"] if r["id"] == "corrupt-1")
    assert "\ufffd" in corrupt["memory"]["content"]
    got = api.get("/memory/corrupt-1")
    assert got.status_code == 200 and "\ufffd" in got.json()["memory"]["content"]
    listed = api.get("/memory/by-tag", params={"tags": "ops"})
    assert listed.status_code == 200 and listed.json()["count"] == 2
