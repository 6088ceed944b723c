"""GET /recall against the real engine: every parameter of the contract (spec 000 / 001, issue 3)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from service.embedding import EmbeddingError
from tests.integration.support import count_requests, held_access_writes, ids, recall, settle_accesses, settled
from tests.integration.support import mem as put


def unit(*values: float, dim: int = 384) -> list[float]:
    vec = list(values) + [0.0] * (dim - len(values))
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


def csv(vec: list[float]) -> str:
    return ",".join(f"{v:.8f}" for v in vec)


def ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


def test_worked_example_scores_0_792_end_to_end(api):
    """Spec 000's sample response, word for word, under the automem profile."""
    memory_id = put(
        api, "Chose PostgreSQL over MongoDB for the primary database.", tags=["project-alpha", "database"],
        importance=0.9, confidence=0.9, type="Decision", timestamp=ago(54), embedding=unit(1.0),
    )
    query_vec = unit(0.82, math.sqrt(1 - 0.82**2))
    body = recall(api, query="PostgreSQL database decisions", embedding=csv(query_vec), scoring_profile="automem")
    assert body["keywords"] == ["postgresql", "database", "decisions"]
    top = body["results"][0]
    assert top["id"] == memory_id and top["match_type"] == "vector"
    comp = top["score_components"]
    assert comp["vector"] == pytest.approx(0.82, abs=1e-4)
    assert comp["keyword"] == pytest.approx(0.6667, abs=1e-4)
    assert comp["tag"] == pytest.approx(0.3333, abs=1e-4)
    assert comp["recency"] == pytest.approx(0.7, abs=1e-4)
    assert (comp["importance"], comp["confidence"], comp["metadata"], comp["exact"], comp["context"]) == (0.9, 0.9, 0.0, 0.0, 0.0)
    assert comp["evidence"] == pytest.approx(0.82, abs=1e-4) and comp["relevance_gated"] is False
    assert top["final_score"] == pytest.approx(0.792, abs=1e-3)
    for field in ("status", "query", "count", "dedup_removed", "sort", "state_mode", "vector_search", "tag_mode", "tag_match", "query_time_ms", "timings"):
        assert field in body
    assert body["vector_search"] == {"enabled": True, "matched": True}
    for field in ("score", "source", "match_score", "original_score", "relations", "memory"):
        assert field in top
    assert top["memory"]["content"].startswith("Chose PostgreSQL")


@pytest.fixture
def tagged(api):
    m = {
        "slack": put(api, "deploy notes from the ops channel", tags=["slack:channel:ops"], importance=0.9),
        "slackbot": put(api, "deploy notes from the bot", tags=["slackbot"], importance=0.8),
        "auth": put(api, "password reset flow", tags=["auth:login:password"], importance=0.7),
        "both": put(api, "deploy and auth together", tags=["slack:channel:ops", "Auth"], importance=0.6),
        "c5": put(api, "conversation five", tags=["conversation_5"], importance=0.5),
        "c50": put(api, "conversation fifty", tags=["conversation_50"], importance=0.4),
    }
    return m


def test_tag_prefix_is_hierarchy_aware(api, tagged):
    body = recall(api, tags="slack")
    assert ids(body) == [tagged["slack"], tagged["both"]]  # not slackbot; tags without a query: by importance
    assert all(r["match_type"] == "tag" for r in body["results"])
    assert ids(recall(api, tags="auth/login")) == [tagged["auth"]]
    assert body["tag_mode"] == "any" and body["tag_match"] == "prefix" and body["tags"] == ["slack"]
    assert body["tag_scope"]["filtered"] is True


def test_tag_exact_any_all_and_repeated_or_comma_lists(api, tagged):
    assert ids(recall(api, tags="auth", tag_match="exact")) == [tagged["both"]]  # case-insensitive exact
    assert ids(recall(api, tags="slack:channel:ops,slackbot", tag_match="exact", limit=10)) == [tagged["slack"], tagged["slackbot"], tagged["both"]]
    assert ids(api.get("/recall", params=[("tags", "slack"), ("tags", "auth"), ("tag_mode", "all")]).json()) == [tagged["both"]]


def test_exclude_tags_is_hierarchy_aware(api, tagged):
    # AutoMem's raw string prefix would also drop conversation_50; we do not.
    got = ids(recall(api, exclude_tags="conversation_5,slack", limit=10))
    assert tagged["c5"] not in got and tagged["slack"] not in got and tagged["both"] not in got
    assert tagged["c50"] in got and tagged["slackbot"] in got


def test_time_window_start_end_and_time_query(api):
    old = put(api, "an old note about coffee", timestamp="2024-01-10T09:00:00Z")
    mid = put(api, "a mid note about coffee", timestamp="2024-06-10T09:00:00Z")
    new = put(api, "a new note about coffee", timestamp=ago(1))
    body = recall(api, start="2024-01-01T00:00:00Z", end="2024-12-31T23:59:59Z", limit=10)
    assert ids(body) == [mid, old]  # a window without a query sorts time_desc
    assert body["sort"] == "time_desc" and body["time_window"]["start"] == "2024-01-01T00:00:00+00:00"
    assert ids(recall(api, time_query="last 7 days", limit=10)) == [new]
    assert set(ids(recall(api, query="coffee", time_query="between 2024-01-01 and 2024-03-01", limit=10))) == {old}
    # explicit start overrides time_query's start
    assert ids(recall(api, time_query="last 7 days", start="2024-06-01T00:00:00Z", limit=10)) == [new, mid]
    unknown = recall(api, query="coffee", time_query="sometime around lunch", limit=10)
    assert "time_window" not in unknown and len(unknown["results"]) == 3


def test_sort_modes(api):
    a = put(api, "tea one", timestamp="2024-01-01T00:00:00Z", importance=0.1)
    b = put(api, "tea two", timestamp="2024-02-01T00:00:00Z", importance=0.9)
    c = put(api, "tea three", timestamp="2024-03-01T00:00:00Z", importance=0.5)
    api.patch(f"/memory/{a}", json={"updated_at": "2024-04-01T00:00:00Z"})
    assert ids(recall(api, query="tea", sort="time_asc", limit=10)) == [b, c, a]
    assert ids(recall(api, query="tea", order_by="updated_desc", limit=10)) == [a, c, b]
    assert ids(recall(api, limit=10)) == [b, c, a]  # trending: importance first


def test_limit_default_clamp_and_offset(make_client):
    api = make_client(recall_max_limit=7)
    api.post("/memory/batch", json={"memories": [{"content": f"item {i}"} for i in range(12)]})
    assert recall(api)["count"] == 5
    assert recall(api, limit=500)["count"] == 7
    for bad in ({"limit": 0}, {"limit": -3}, {"limit": "ten"}):
        resp = api.get("/recall", params=bad)
        assert resp.status_code == 400 and resp.json()["status"] == "error", bad
    # offset pages the ranked list (issue 25: AutoMem ignores it, mcp-automem forwards it): the same
    # ranking, then the slice; never a 400.
    whole = ids(recall(api, query="item", limit=7))
    assert ids(recall(api, query="item", limit=3, offset=2)) == whole[2:5]
    past = recall(api, query="item", limit=3, offset=6)
    assert ids(past) == whole[6:7] and any("RECALL_MAX_LIMIT" in w for w in past["warnings"])
    for odd in ("-1", "two", "1.5"):
        body = recall(api, query="item", limit=2, offset=odd)
        assert ids(body) == whole[:2] and any("offset" in w for w in body["warnings"]), odd


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"state_mode": "sometimes"}, "state_mode"),
        ({"state_mode": "sometimes", "current_only": "true"}, "state_mode"),
        ({"start": "not-a-date"}, "start: 'not-a-date' is not a valid ISO 8601"),
        ({"end": "2024-99-01"}, "end: '2024-99-01' is not a valid ISO 8601"),
        ({"tag_mode": "some"}, "tag_mode"),
        ({"tag_match": "fuzzy"}, "tag_match"),
        ({"sort": "random"}, "sort"),
        ({"recency_bias": "maybe"}, "recency_bias"),
        ({"min_score": "-1"}, "min_score"),
        ({"expansion_limit": "abc"}, "expansion_limit"),
        ({"expand_min_strength": "2"}, "expand_min_strength"),
        ({"embedding": "1,2,3"}, "exactly 384 values"),
        ({"embedding": "a,b"}, "embedding"),
        ({"adaptive_floor": "perhaps"}, "adaptive_floor"),
    ],
)
def test_validation_errors_are_400(api, params, fragment):
    resp = api.get("/recall", params={"query": "x", **params})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["status"] == "error" and body["code"] == 400 and fragment in body["message"]


def test_state_mode_current_only_precedence(api):
    assert recall(api, query="x", state_mode="history", current_only="true")["state_mode"] == "current"
    assert recall(api, query="x", current_only="false")["state_mode"] == "history"
    assert recall(api, query="x")["state_mode"] == "current"


def test_multiple_queries_merge_and_dedupe(api):
    a = put(api, "Melanie painted a sunrise over the lake")
    b = put(api, "Caroline went to a support group meeting")
    dup = put(api, "Melanie painted a sunrise over the lake!")  # same fingerprint as a
    body = api.get("/recall", params=[("queries", "painting sunrise"), ("queries", "support group"), ("limit", "5")]).json()
    got = ids(body)
    assert b in got and (a in got) != (dup in got)  # the fingerprint duplicate is removed
    assert body["dedup_removed"] >= 1 and body["queries"] == ["painting sunrise", "support group"]
    per = api.get("/recall", params=[("queries", "painting sunrise"), ("queries", "support group"), ("per_query_limit", "1")]).json()
    assert len(per["results"]) <= 2


def test_auto_decompose_adds_name_searches(api):
    put(api, "Jon opened a dance studio downtown")
    body = recall(api, query="What did Jon open?", auto_decompose="true")
    assert body["queries"][0] == "What did Jon open?" and "Jon" in body["queries"]


def test_recency_bias_on_and_auto(api):
    old = put(api, "my favourite editor is vim", timestamp=ago(300))
    new = put(api, "my favourite editor is emacs", timestamp=ago(1))
    plain = recall(api, query="favourite editor", limit=2)
    assert "recency_bias" not in plain
    on = recall(api, query="favourite editor", recency_bias="on", limit=2)
    assert on["recency_bias"] == "on"
    by_id = {r["id"]: r for r in on["results"]}
    assert by_id[new]["score_components"]["temporal"] == 1.0 and by_id[old]["score_components"]["temporal"] == 0.0
    assert by_id[new]["final_score"] == pytest.approx(by_id[new]["original_score"] + 0.1, abs=1e-5)
    assert recall(api, query="what is my current editor", recency_bias="auto", limit=2)["recency_bias"] == "on"
    assert "recency_bias" not in recall(api, query="favourite editor", recency_bias="auto", limit=2)


def test_min_score_and_adaptive_floor_report(api):
    # Controlled cosines (explicit vectors, no keyword overlap): three strong, one medium, four weak.
    cosines = [0.95, 0.94, 0.93, 0.5, 0.1, 0.1, 0.1, 0.1]
    made = [
        put(api, f"memory number {i}", embedding=unit(c, math.sqrt(1 - c * c)), importance=0.5, type="Context", confidence=0.9)
        for i, c in enumerate(cosines)
    ]
    query = {"query": "zzzz", "embedding": csv(unit(1.0)), "limit": 10}
    floor = recall(api, **query)
    # Largest gap among the top max(3, 8 // 2) = 4 scores is between the 3rd and 4th; AutoMem keeps
    # the first result below the gap, and at least ceil(8 / 2) = 4 results remain.
    assert ids(floor) == made[:4]
    assert floor["score_filter"]["filtered_count"] == 4 and floor["score_filter"]["min_score"] is None
    assert floor["score_filter"]["adaptive_floor"] == pytest.approx(floor["results"][3]["final_score"], abs=1e-5)
    no_floor = recall(api, **query, adaptive_floor="false")
    assert no_floor["count"] == 8 and "score_filter" not in no_floor
    gated = recall(api, **query, adaptive_floor="false", min_score=0.4)
    assert ids(gated) == made[:3]
    assert gated["score_filter"] == {"min_score": 0.4, "adaptive_floor": None, "filtered_count": 5}


def test_scope_fallback_fills_outside_scope(api):
    inside = put(api, "project atlas kickoff notes", tags=["atlas"])
    outside = put(api, "atlas launch retrospective", tags=["other"])
    body = recall(api, query="atlas", tags="atlas", scope_fallback="true", limit=3)
    assert ids(body)[0] == inside and outside in ids(body)
    fill = next(r for r in body["results"] if r["id"] == outside)
    assert fill["outside_tag_scope"] is True and body["scope_fallback"] is True
    assert ids(recall(api, query="atlas", tags="atlas", limit=3)) == [inside]


def test_context_tags_types_and_language_boost(api):
    style = put(api, "Use four spaces and type hints", type="Style", tags=["python"])
    other = put(api, "Use four spaces for indentation in YAML files", type="Context")
    body = recall(api, query="indentation spaces", context_tags="python", limit=2)
    top = body["results"][0]
    assert top["id"] == style and top["score_components"]["context"] >= 0.45
    assert body["context_priority"]["priority_tags"] and "python" in body["context_priority"]["priority_tags"]
    by_path = recall(api, query="indentation spaces", active_path="src/app/main.py", limit=2)
    assert by_path["context_priority"]["language"] == "python" and ids(by_path)[0] == style
    typed = recall(api, query="indentation spaces", context_types="Context", limit=2)
    assert ids(typed)[0] == other
    # "go" as a verb is not the Go language
    assert recall(api, query="where did you go last summer")
    assert "context_priority" not in recall(api, query="where did you go last summer")


def test_priority_ids_fetched_placed_first_and_filtered(api):
    target = put(api, "an unrelated note about bicycles", tags=["keep"])
    hidden = put(api, "another unrelated note", tags=["drop"])
    for i in range(5):
        put(api, f"kubernetes deployment guide part {i}")
    body = recall(api, query="kubernetes deployment", priority_ids=f"{target},{hidden}", exclude_tags="drop", limit=3)
    assert ids(body)[0] == target and hidden not in ids(body)
    assert body["results"][0]["score_components"]["context"] >= 0.9


def test_a_memory_only_a_small_arm_returns_comes_whole(api):
    """The vector and keyword arms return doc values only; a memory that only another arm found (here
    the priority ids') keeps the stored memory that arm returned (it carries script fields, which
    would leave `_source` out unless asked for)."""
    target = put(api, "an unrelated note about bicycles", tags=["keep"], metadata={"project": "wheels"})
    for i in range(8):
        put(api, f"kubernetes deployment guide part {i}")
    body = recall(api, query="kubernetes deployment", priority_ids=target, limit=1)
    top = body["results"][0]
    assert top["id"] == target and top["match_type"] == "priority_id"
    assert top["memory"]["content"] == "an unrelated note about bicycles"
    assert top["memory"]["metadata"] == {"project": "wheels"} and top["memory"]["tags"] == ["keep"]


def test_trending_and_excluded_types_and_archived(api):
    high = put(api, "very important", importance=0.95)
    put(api, "internal cluster summary", importance=1.0, type="MetaPattern")
    archived = put(api, "archived but important", importance=0.99)
    api.patch(f"/memory/{archived}", json={"archived": True})
    low = put(api, "minor", importance=0.1)
    body = recall(api, query="*", limit=10)
    assert ids(body) == [high, low] and body["results"][0]["match_type"] == "trending"


def test_metadata_sidecar(api):
    meta = put(api, "we shipped the release", metadata={"project": "nebula", "tool": "terraform"})
    put(api, "we shipped the other release", metadata={"project": "orion"})
    body = recall(api, query="nebula", limit=2)
    top = body["results"][0]
    assert top["id"] == meta and top["score_components"]["metadata"] > 0
    assert top["score_components"]["exact"] == 1.0  # the whole query equals a metadata value


def test_embedding_failure_degrades_to_keyword(make_client, embedder):
    class Broken:
        dimension, model_name, short_name = embedder.dimension, embedder.model_name, "broken"

        def embed_documents(self, texts):
            return embedder.embed_documents(texts)

        def embed_query(self, text):
            raise EmbeddingError("model crashed")

    api = make_client()
    api.app.state.recall.embedder = Broken()
    memory_id = put(api, "the heating engineer visits on tuesday")
    body = recall(api, query="heating engineer")
    assert ids(body) == [memory_id]
    assert body["vector_search"]["enabled"] is False and "keyword" in body["vector_search"]["error"]


def test_one_msearch_and_last_accessed_written(api, os_client):
    memory_id = put(api, "the wifi password is on the fridge")
    body, calls = count_requests(api, query="wifi password", tags="", limit=3)
    assert ids(body)[0] == memory_id
    alias = api.app.state.settings.memories_alias
    # Candidates in one round trip (lean hits, with when each was last accessed), the page's stored
    # memories in another, with the vectors and versions of those access tracking rewrites (an update
    # re-indexes from _source, which holds no vector), then last_accessed: no read of its own.
    assert calls == ["POST /_msearch", f"POST /{alias}/_search", "POST /_bulk"]
    os_client.indices.refresh(index=api.app.state.settings.memories_alias)
    assert api.get(f"/memory/{memory_id}").json()["memory"]["last_accessed"] is not None
    # Within RECALL_ACCESS_RESOLUTION_SECONDS (an hour) the memory is not rewritten again, and the page
    # read needs no vectors nor versions: an _mget of the stored memories (half the engine's CPU).
    _, again = count_requests(api, query="wifi password", tags="", limit=3)
    assert again == ["POST /_msearch", f"POST /{alias}/_mget"]


def test_a_recall_answers_without_waiting_for_its_access_write(make_client):
    """Access tracking is off the request path: the AccessWriter's thread writes while the recall answers."""
    api = make_client(recall_access_resolution_seconds=0)
    memory_id = put(api, "the bicycle pump is in the garage")
    with held_access_writes(api) as entered:
        assert ids(recall(api, query="bicycle pump", tags="", limit=3)) == [memory_id]  # answered, the write held
        assert entered.wait(5) and not api.app.state.access_writer.flush(timeout=0.1)
    settle_accesses(api)
    assert api.get(f"/memory/{memory_id}").json()["memory"]["last_accessed"] is not None


def test_an_access_recorded_is_not_recorded_again_before_the_index_shows_it(api, os_client):
    """The recall right after one that recorded an access still reads the old last_accessed (a search
    sees the write after the next refresh): it records nothing (before, it rewrote the memory with a
    version no longer current, lost the race, forced a refresh and wrote again)."""
    memory_id = put(api, "the spare key is under the blue flowerpot")
    alias = api.app.state.settings.memories_alias
    settled(api)  # enrichment's own rewrite of the memory is done
    before = os_client.get(index=alias, id=memory_id)["_version"]
    os_client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "-1"}})
    try:
        _, first = count_requests(api, query="spare key flowerpot", tags="", limit=3)
        _, second = count_requests(api, query="spare key flowerpot", tags="", limit=3)
    finally:
        os_client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "1s"}})
    assert first == ["POST /_msearch", f"POST /{alias}/_search", "POST /_bulk"]
    assert second == ["POST /_msearch", f"POST /{alias}/_mget"]
    os_client.indices.refresh(index=alias)
    stored = os_client.get(index=alias, id=memory_id)
    assert stored["_version"] == before + 1 and stored["_source"]["last_accessed"] is not None  # one rewrite


def test_access_resolution_zero_rewrites_on_every_recall(make_client, os_client):
    api = make_client(recall_access_resolution_seconds=0)
    put(api, "the wifi password is on the fridge")
    alias = api.app.state.settings.memories_alias
    for _ in range(2):
        _, calls = count_requests(api, query="wifi password", tags="", limit=3)
        assert calls == ["POST /_msearch", f"POST /{alias}/_search", "POST /_bulk"]
        os_client.indices.refresh(index=api.app.state.settings.memories_alias)


@pytest.mark.parametrize("due", [True, False], ids=["page read with versions (a search)", "page read of sources (an _mget)"])
def test_a_memory_deleted_after_the_arms_saw_it_is_left_out(make_client, os_client, due):
    """The page's stored memories are read after the arms: one deleted in between is not answered, by
    either read (the one that brings access tracking's vectors and versions, and the plain _mget)."""
    api = make_client(recall_access_resolution_seconds=0 if due else 3600)
    store, alias = api.app.state.memories, api.app.state.settings.memories_alias
    gone = put(api, "the garage code is 4417")
    kept = put(api, "the garage door opener lives in the car")
    settled(api)
    if not due:  # both accessed within the hour: the next page read needs no versions
        recall(api, query="garage", tags="", limit=5)
        settle_accesses(api)
    store.refresh_now()
    reader = "search" if due else "read_sources"
    original = getattr(store, reader)

    def deleting_first(*args):
        os_client.delete(index=alias, id=gone, refresh=True)
        return original(*args)

    setattr(store, reader, deleting_first)
    try:
        body, calls = count_requests(api, query="garage", tags="", limit=5)
    finally:
        delattr(store, reader)
    assert ids(body) == [kept] and body["count"] == 1, body
    assert calls[1] == (f"POST /{alias}/_search" if due else f"POST /{alias}/_mget"), calls


def test_context_anchor_injected_when_nothing_matches(api):
    anchor = put(api, "Always run the linter before committing", tags=["team-rules"], importance=0.9)
    for i in range(4):
        put(api, f"release checklist step {i}: bump the version")
    plain = recall(api, query="release checklist version", limit=3)
    assert anchor not in ids(plain)
    body = recall(api, query="release checklist version", context_tags="team-rules", limit=3)
    assert ids(body)[0] == anchor  # injected ahead of the scored results, within the limit
    assert body["context_priority"]["injected"] is True and len(body["results"]) == 3


def test_each_result_memory_carries_its_id(api):
    """AutoMem includes the memory's id inside `memory` (issue 25 item 5), in detail too."""
    mid = put(api, "the memory whose id travels inside it")
    for params in ({}, {"detail": "true"}):
        (hit,) = recall(api, query="memory whose id travels", limit=1, **params)["results"]
        assert hit["id"] == hit["memory"]["id"] == mid, params
