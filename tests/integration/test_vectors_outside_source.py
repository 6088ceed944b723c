"""Vectors are kept out of _source (the fetch phase of recall no longer parses 384 floats per hit),
so every write that re-indexes a memory from its _source must carry the vector back in. Each test
changes a memory through one such path, then checks the engine still finds it by its own vector."""

from __future__ import annotations

import pytest

from tests.integration.support import by_id, count_requests, fast_api, link, mem, recall


@pytest.fixture
def api(make_client):
    return fast_api(make_client)


def unit(i: int) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(384)]


def csv(vector: list[float]) -> str:
    return ",".join(map(str, vector))


def cosine(api, memory_id: str, vector: list[float], **params) -> float | None:
    """The vector component of `memory_id` when recalled by `vector` alone (None: not returned)."""
    got = by_id(recall(api, embedding=csv(vector), limit=20, **params)).get(memory_id)
    return got["score_components"]["vector"] if got else None


def raw_source(api, os_client, memory_id: str) -> dict:
    return os_client.get(index=api.app.state.settings.memories_alias, id=memory_id)["_source"]


def test_stored_vector_is_outside_source_and_still_searched(api, os_client):
    a = mem(api, "alpha", embedding=unit(0))
    assert "embedding" not in raw_source(api, os_client, a)
    assert "embedding" not in api.get(f"/memory/{a}").json()["memory"]
    assert cosine(api, a, unit(0)) == pytest.approx(1.0, abs=1e-5)
    vector, _, _ = api.app.state.memories.vectors("default", [a])[a]
    assert vector == pytest.approx(unit(0))


def test_patch_without_content_keeps_the_vector(api, os_client):
    a = mem(api, "alpha", embedding=unit(1), tags=["x"])
    resp = api.patch(f"/memory/{a}", json={"tags": ["y"], "importance": 0.9})
    assert resp.status_code == 200, resp.text
    assert raw_source(api, os_client, a)["tags"] == ["y"]
    assert cosine(api, a, unit(1)) == pytest.approx(1.0, abs=1e-5)
    # A new embedding replaces it.
    assert api.patch(f"/memory/{a}", json={"embedding": unit(2)}).status_code == 200
    assert cosine(api, a, unit(2)) == pytest.approx(1.0, abs=1e-5)


def test_access_tracking_keeps_the_vector(make_client, os_client):
    api = make_client(write_refresh="true", recall_access_resolution_seconds=0)
    a = mem(api, "alpha", embedding=unit(3))
    _, calls = count_requests(api, embedding=csv(unit(3)), limit=3)
    assert "POST /_bulk" in calls
    os_client.indices.refresh(index=api.app.state.settings.memories_alias)
    assert raw_source(api, os_client, a)["last_accessed"] is not None
    assert cosine(api, a, unit(3)) == pytest.approx(1.0, abs=1e-5)


def test_access_tracking_with_the_page_reads_vectors_keeps_a_newer_write(make_client, os_client):
    """Recall's page read brings the vectors and versions access tracking rewrites the page with; a memory
    re-embedded in between is not put back to the vector read: the version guard fails, the retry reads again."""
    api = make_client(recall_access_resolution_seconds=0)
    store, alias = api.app.state.memories, api.app.state.settings.memories_alias
    a = mem(api, "alpha", embedding=unit(11))
    store.refresh_now()
    touches = []
    store.touch = lambda *args: touches.append(args)  # held back: the response is sent first anyway
    try:
        _, calls = count_requests(api, embedding=csv(unit(11)), limit=3)
    finally:
        del store.touch
    (bank, stale, now, versions), = touches
    assert set(stale) == set(versions) == {a} and versions[a][0] == pytest.approx(unit(11))
    assert calls == ["POST /_msearch", f"POST /{alias}/_search"]  # the vectors came with the page
    os_client.update(index=alias, id=a, body={"doc": {"importance": 0.7, "embedding": unit(12)}}, refresh=True)
    store.touch(bank, stale, now, versions)
    source = raw_source(api, os_client, a)
    assert source["importance"] == 0.7 and source["last_accessed"] is not None
    assert cosine(api, a, unit(12)) == pytest.approx(1.0, abs=1e-5)  # the newer vector, not the one the page read


def test_supersession_and_its_clearing_keep_the_vector(api, os_client):
    old = mem(api, "old version", embedding=unit(4))
    new = mem(api, "new version", embedding=unit(5))
    link(api, old, new, "EVOLVED_INTO", 0.9)  # a painless update on `old`
    assert raw_source(api, os_client, old)["superseded_by"] == new
    assert cosine(api, old, unit(4), state_mode="history") == pytest.approx(1.0, abs=1e-5)
    assert api.delete(f"/memory/{new}").status_code == 200  # clears old's supersession (a script per memory)
    assert not raw_source(api, os_client, old).get("supersessions")
    assert cosine(api, old, unit(4)) == pytest.approx(1.0, abs=1e-5)


def test_supersedes_on_store_keeps_the_old_vector(api, os_client):
    old = mem(api, "old fact", embedding=unit(6))
    new = mem(api, "new fact", embedding=unit(7), supersedes=old)
    assert raw_source(api, os_client, old)["superseded_by"] == new
    assert cosine(api, old, unit(6), state_mode="history") == pytest.approx(1.0, abs=1e-5)


def test_memory_without_vector_stays_without_one(api, os_client):
    store = api.app.state.memories
    a = mem(api, "alpha", embedding=unit(8))
    # A document written without a vector (an older importer, a failed embedding) is updated as is.
    os_client.index(index=api.app.state.settings.memories_alias, id="novec", body={**raw_source(api, os_client, a), "id": "novec"}, refresh=True)
    assert store.vectors("default", ["novec"])["novec"][0] is None
    assert api.patch("/memory/novec", json={"importance": 0.2}).status_code == 200
    assert store.vectors("default", ["novec"])["novec"][0] is None and raw_source(api, os_client, "novec")["importance"] == 0.2


def test_an_update_that_loses_a_race_is_retried_with_the_new_vector(api, os_client):
    store, alias = api.app.state.memories, api.app.state.settings.memories_alias
    a = mem(api, "alpha", embedding=unit(9))
    real, raced = store._read_for_update, []

    def read(bank, memory_id, **kwargs):
        found = real(bank, memory_id, **kwargs)
        if not raced:  # another writer re-embeds the memory after its version was read
            raced.append(True)
            os_client.update(index=alias, id=a, body={"doc": {"importance": 0.7, "embedding": unit(10)}}, refresh=True)
        return found

    store._read_for_update = read
    try:
        store.read_modify_write("default", a, lambda current: {"confidence": 0.3})
    finally:
        del store._read_for_update
    source = raw_source(api, os_client, a)
    assert (source["importance"], source["confidence"]) == (0.7, 0.3)
    assert cosine(api, a, unit(10)) == pytest.approx(1.0, abs=1e-5)  # the racing writer's vector, not the stale one


def test_many_vectors_read_in_one_request_are_each_their_own(api):
    # Lucene hands out one reused buffer per segment: a script returning it as is gives every hit the
    # last hit's vector (this wrote wrong vectors back on access tracking before it was copied).
    ids = [mem(api, f"memory {i}", embedding=unit(20 + i)) for i in range(12)]
    found = api.app.state.memories.vectors("default", ids)
    assert [found[mid][0] for mid in ids] == [pytest.approx(unit(20 + i)) for i in range(12)]
    # Recalled (and so touched) together, each keeps its own vector.
    recall(api, embedding=csv(unit(20)), limit=12)
    api.app.state.memories.refresh_now()
    for i, mid in enumerate(ids[:4]):
        assert cosine(api, mid, unit(20 + i)) == pytest.approx(1.0, abs=1e-5)
