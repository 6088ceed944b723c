"""Which of the query's stems each lean hit holds, against the real engine (service/recall/lean.py): the
post filter's named queries give each hit the query's stems among its stored ones, leave a memory
stored without stems unnamed (its stored memory is read instead), and change no hit, score or order."""

from __future__ import annotations

from scoring.rerank import query_stems
from service.recall import lean as L
from service.recall import retrieval
from tests.integration.support import mem as put
from tests.integration.test_backfill import make_legacy

KEYWORDS = ["caroline", "painted", "group", "charity", "sunset"]


def search(api, body: dict) -> dict:
    api.app.state.memories.refresh_now()
    return api.app.state.client.search(index=api.app.state.memories.alias, body=body)


def test_a_memory_stored_without_stems_is_left_unnamed(make_client, os_client):
    """Named per stems field only when the memory has it (tests/integration/test_thread_context.py
    checks the stems themselves): one stored before the fields existed is read whole."""
    api = make_client()
    plain = put(api, "Caroline ran a charity race")
    legacy = make_legacy(api, os_client, plain)  # the same memory as stored before the stems fields
    stems = query_stems(KEYWORDS)
    body = L.lean_body({"size": 10, "query": {"match_all": {}}}, L.FIELDS, stems)
    out = retrieval.parse_responses([("keyword", body)], [search(api, body)])
    new, old = out.hits[plain].candidate("keyword"), out.hits[legacy].candidate("keyword")
    assert (new.content_stems, new.context_stems) == ({"carolin", "chariti"}, None)  # no thread: no context
    assert (old.content_stems, old.context_stems) == (None, None)
    assert L.predates(out.hits[legacy].source, stems=True) and not L.predates(out.hits[plain].source, stems=True)


def test_the_names_change_no_hit_score_or_order(make_client):
    api = make_client()
    for i, text in enumerate(["Caroline painted a sunset", "the support group met on Friday", "Caroline's group painted murals",
                              "a charity race for the group", "sunset over the lake", "nothing to do with it"]):
        put(api, f"{text} ({i})")
    stems = query_stems(KEYWORDS)
    vector = api.app.state.recall.embedder.embed_query("Caroline painted a sunset with her group")
    for query in ({"match": {"content": {"query": "caroline painted sunset group"}}},
                  {"knn": {"embedding": {"vector": vector, "k": 4}}}):
        bare = L.lean_body({"size": 4, "query": query, "track_total_hits": False}, ("id",))
        named = L.lean_body({"size": 4, "query": query, "track_total_hits": False}, ("id",), stems)
        a, b = search(api, bare)["hits"]["hits"], search(api, named)["hits"]["hits"]
        assert [(h["fields"]["id"], h["_score"]) for h in a] == [(h["fields"]["id"], h["_score"]) for h in b] and len(a) == 4
        assert all("matched_queries" not in h for h in a) and any("matched_queries" in h for h in b)
