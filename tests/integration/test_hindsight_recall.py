"""Hindsight's recall on the real engine: min_scores semantics, the max_tokens cut, fact types and
observations, the temporal arm, query_timestamp, the include blocks, the error shapes."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.hindsight_support import BANKS, app_client, hrecall, remember, result_ids, retain, texts
from tests.integration.support import assert_error

FACTS = [
    "The payment service retries failed charges three times",
    "Invoices are generated on the first day of each month",
    "The billing database is PostgreSQL 16 on a dedicated host",
    "Refunds above 500 euros need a second approval",
    "Error code ZX-9914 means the card issuer timed out",
    "Our cat Miso likes sleeping on the warm router",
    "The quarterly offsite is in Porto this year",
    "Customers can download receipts from the account page",
]


@pytest.fixture(scope="module")
def billing(engine_url, embedder, os_client):
    with app_client(engine_url, embedder, os_client, write_refresh="true", recall_adaptive_floor=False) as api:
        for text in FACTS:
            remember(api, "billing", text)
        yield api


def test_semantic_and_keyword_floors_act_inside_their_own_arm(billing):
    plain = hrecall(billing, "billing", "ZX-9914 card issuer", budget="high")
    assert len(plain["results"]) == len(FACTS)  # the vector arm returns every memory without a floor
    floored = hrecall(billing, "billing", "ZX-9914 card issuer", budget="high", min_scores={"semantic": 0.45, "keyword": 1.0})
    assert 0 < len(floored["results"]) < len(FACTS)
    for r in floored["results"]:
        s = r["scores"]
        assert s["semantic"] is None or s["semantic"] >= 0.45  # a non-null score always clears its floor
        assert s["keyword"] is None or s["keyword"] >= 1.0
        assert s["semantic"] is not None or s["keyword"] is not None  # reached through one of the floored arms
        assert s["reranker"] is None
    # not an intersection: a result may clear only one floor
    by_text = {r["text"]: r["scores"] for r in floored["results"]}
    assert by_text["Error code ZX-9914 means the card issuer timed out"]["keyword"] >= 1.0
    dropped = set(texts(plain)) - set(texts(floored))
    assert "Our cat Miso likes sleeping on the warm router" in dropped  # weak in both arms: gone


def test_final_is_a_post_filter_on_every_result(billing):
    plain = hrecall(billing, "billing", "how are refunds approved", budget="high")
    finals = sorted(r["scores"]["final"] for r in plain["results"])
    k = len(finals) // 2
    cut = (finals[k - 1] + finals[k]) / 2  # between two results, clear of rounding
    floored = hrecall(billing, "billing", "how are refunds approved", budget="high", min_scores={"final": cut})
    assert result_ids(floored) == [r["id"] for r in plain["results"] if r["scores"]["final"] >= cut]
    assert len(floored["results"]) == len(finals) - k
    assert all(r["scores"]["final"] >= cut for r in floored["results"])


def test_a_reranker_floor_is_a_400(billing):
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "refunds", "min_scores": {"reranker": 0.3}})
    assert resp.status_code == 400
    assert resp.json()["detail"].startswith("min_scores.reranker needs a reranker")


def test_max_tokens_cuts_at_the_first_result_that_does_not_fit(billing):
    counter = billing.app.state.hindsight_tokens if hasattr(billing.app.state, "hindsight_tokens") else None
    full = hrecall(billing, "billing", "billing and payments", budget="high")
    from service.api.hindsight.tokens import TokenCounter

    counter = counter or TokenCounter(billing.app.state.embedder)
    counts = counter.count_many(texts(full))
    budget = counts[0] + counts[1] + counts[2] + 1  # three fit, the fourth does not
    cut = hrecall(billing, "billing", "billing and payments", budget="high", max_tokens=budget)
    assert result_ids(cut) == result_ids(full)[:3]
    assert sum(counter.count_many(texts(cut))) <= budget < sum(counts[:4])
    trace = hrecall(billing, "billing", "billing and payments", budget="high", max_tokens=budget, trace=True)["trace"]
    assert (trace["tokens_used"], trace["candidates_before_token_cut"], trace["num_results"]) == (sum(counts[:3]), len(FACTS), 3)
    assert hrecall(billing, "billing", "billing and payments", max_tokens=0)["results"] == []


def test_tokens_are_counted_with_the_models_tokenizer(billing):
    from service.api.hindsight.tokens import TokenCounter

    counter = TokenCounter(billing.app.state.embedder)
    assert counter.exact  # all-MiniLM-L6-v2's tokenizer.json
    assert counter.count("Hello, world!") == 4  # hello , world ! — no [CLS] / [SEP]
    assert counter.count("tokenization") == 2  # WordPiece: token ##ization
    text, cut = counter.truncate("one two three four", 2)
    assert (text, cut) == ("one two", True)


def test_budget_sets_the_depth(billing):
    assert len(hrecall(billing, "billing", "billing", budget="low")["results"]) == len(FACTS)  # 8 <= 10
    trace = hrecall(billing, "billing", "billing", budget="low", trace=True)["trace"]
    assert trace["budget"] == {"level": "low", "limit": 10, "expand_relations": False, "expand_entities": False}


def test_types_and_observations(make_client):
    api = make_client(write_refresh="true", recall_adaptive_floor=False, consolidation_tick_seconds=0)
    world = remember(api, "obs", "The staging cluster runs Kubernetes 1.29")
    mine = remember(api, "obs", "I upgraded the staging cluster to Kubernetes 1.29")
    resp = api.post("/memory", json={"content": "The staging cluster has three worker nodes"}, headers={"X-Bank": "obs"})
    automem = resp.json()["memory_id"]
    got = hrecall(api, "obs", "staging cluster", types=["experience"])
    assert result_ids(got) == [mine]
    assert set(result_ids(hrecall(api, "obs", "staging cluster", types=["world"]))) == {world, automem}  # AutoMem's memory reads as world
    # observations are consolidation's MetaPattern summaries
    for i in range(3):
        api.post("/memory", json={"content": f"Deploy checklist item {i}: run the smoke tests before the staging deploy"}, headers={"X-Bank": "obs"})
    run = api.post("/consolidate", json={"mode": "cluster", "dry_run": False}, headers={"X-Bank": "obs"}).json()
    assert run["consolidation"]["steps"]["cluster"]["clusters_found"] == 1
    obs = hrecall(api, "obs", "deploy checklist smoke tests", types=["observation"], include={"source_facts": {}})
    (o,) = obs["results"]
    assert o["type"] == "observation" and len(o["source_fact_ids"]) == 3
    assert sorted(obs["source_facts"]) == sorted(o["source_fact_ids"]) and obs["source_facts_truncated"] is False
    assert all(f["text"].startswith("Deploy checklist item") for f in obs["source_facts"].values())
    cut = hrecall(api, "obs", "deploy checklist smoke tests", types=["observation"], include={"source_facts": {"max_tokens": 20}})
    assert len(cut["source_facts"]) == 1 and cut["source_facts_truncated"] is True
    # prefer_observations: the summarised memories make room for others
    both = hrecall(api, "obs", "deploy checklist smoke tests", budget="low")
    preferred = hrecall(api, "obs", "deploy checklist smoke tests", budget="low", prefer_observations=True)
    assert set(o["source_fact_ids"]) <= set(result_ids(both))
    assert not set(o["source_fact_ids"]) & set(result_ids(preferred)) and o["id"] in result_ids(preferred)
    # AutoMem's GET /recall still leaves MetaPatterns out
    auto = api.get("/recall", params={"query": "deploy checklist smoke tests", "limit": 10}, headers={"X-Bank": "obs"}).json()
    assert o["id"] not in [r["id"] for r in auto["results"]]


def test_the_temporal_arm_surfaces_dated_memories_without_filtering(make_client):
    api = make_client(write_refresh="true", recall_adaptive_floor=False)
    later = datetime(2023, 6, 1, 12, tzinfo=timezone.utc)
    notes = [remember(api, "tw", f"Sprint retrospective notes number {i} about deploy speed", timestamp=(later + timedelta(days=i)).isoformat()) for i in range(4)]
    dated = remember(api, "tw", "Lunch order for the team", timestamp="2023-03-10T12:00:00+00:00")
    window = {"start": "2023-03-09T00:00:00Z", "end": "2023-03-11T00:00:00Z"}
    query = "sprint retrospective deploy speed"
    plain = {r["id"]: r for r in hrecall(api, "tw", query, budget="low")["results"]}
    got = hrecall(api, "tw", query, budget="low", temporal_window=window, trace=True)
    by_id = {r["id"]: r for r in got["results"]}
    assert set(by_id) == set(plain) == {*notes, dated}  # not a filter: the memories outside the window still come
    # the dated memory gains SEARCH_WEIGHT_TEMPORAL (spec 001 "Temporal Alignment"); the others are unchanged
    assert by_id[dated]["scores"]["final"] == pytest.approx(plain[dated]["scores"]["final"] + 0.1, abs=2e-6)
    assert all(by_id[n]["scores"]["final"] == plain[n]["scores"]["final"] for n in notes)
    assert got["trace"]["results_by_arm"]["temporal"] == 1
    # the arm surfaces what the other arms leave out: with a semantic floor and no keyword match, only it finds the lunch
    floored = hrecall(api, "tw", query, budget="low", min_scores={"semantic": 0.5})
    assert dated not in result_ids(floored)
    windowed = hrecall(api, "tw", query, budget="low", min_scores={"semantic": 0.5}, temporal_window=window)
    (lunch,) = [r for r in windowed["results"] if r["id"] == dated]
    assert (lunch["scores"]["semantic"], lunch["scores"]["keyword"]) == (None, None)
    # a date phrase in the query, relative to query_timestamp, opens the same arm
    phrased = hrecall(api, "tw", f"{query} yesterday", budget="low", min_scores={"semantic": 0.5}, query_timestamp="2023-03-11T09:00:00", trace=True)
    assert dated in result_ids(phrased)
    assert phrased["trace"]["temporal_window"]["start"] == "2023-03-10T00:00:00+00:00"


def test_query_timestamp_is_the_recency_anchor(make_client):
    api = make_client(write_refresh="true", recall_adaptive_floor=False)
    january = remember(api, "qt", "The release train leaves on Thursdays", timestamp="2023-01-01T00:00:00Z")
    june = remember(api, "qt", "The release train leaves on Thursdays", timestamp="2023-06-01T00:00:00Z")
    today = {r["id"]: r["scores"]["final"] for r in hrecall(api, "qt", "release train")["results"]}
    assert today[january] == pytest.approx(today[june])  # both older than SEARCH_RECENCY_WINDOW_DAYS: recency 0
    then = hrecall(api, "qt", "release train", query_timestamp="2023-06-10T00:00:00", trace=True)
    scores = {r["id"]: r["scores"]["final"] for r in then["results"]}
    # recency weight 0.1, window 180 days: June is 9 days old (0.95), January 160 (0.111)
    assert result_ids(then) == [june, january]
    assert scores[june] - scores[january] == pytest.approx(0.1 * ((1 - 9 / 180) - (1 - 160 / 180)), abs=1e-5)
    assert then["trace"]["query_timestamp"] == "2023-06-10T00:00:00+00:00"


def test_include_entities_and_chunks(make_client):
    api = make_client(write_refresh="true", hindsight_retain_chunk_chars=200)
    long_text = " ".join(f"Paragraph {i} of the onboarding guide explains step {i} in detail." for i in range(12))
    retain(api, "inc", {"content": long_text, "document_id": "guide", "entities": [{"text": "Onboarding", "type": "CONCEPT"}]})
    got = hrecall(api, "inc", "onboarding guide step", include={"entities": {"max_tokens": 500}, "chunks": {"max_tokens": 30}})
    assert {r["document_id"] for r in got["results"]} == {"guide"}
    assert all(r["chunk_id"].startswith("guide:") for r in got["results"])
    assert got["entities"]["Onboarding"]["canonical_name"] == "Onboarding"
    chunks = got["chunks"]
    assert sum(c["truncated"] for c in chunks.values()) == 1 and all(c["id"] in chunks for c in chunks.values())
    assert "entities" not in hrecall(api, "inc", "onboarding", include={"entities": None})


def test_error_shapes(billing):
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "x", "budget": "huge"})
    assert resp.status_code == 422
    (err,) = resp.json()["detail"]
    assert err["loc"] == ["body", "budget"] and err["type"] == "literal_error"
    resp = billing.post(f"{BANKS}/billing/memories/recall", content=b"{not json", headers={"Content-Type": "application/json"})
    assert resp.status_code == 422 and resp.json()["detail"][0]["type"] == "json_invalid"
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "x", "query_timestamp": "nope"})
    assert resp.status_code == 400 and resp.json()["code"] == 400 and resp.json()["detail"].startswith("Invalid query_timestamp")
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "x " * 600})
    assert resp.status_code == 400 and "Query too long" in resp.json()["detail"]
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "x"}, headers={"Authorization": "Bearer wrong"})
    assert resp.status_code == 401 and resp.json()["detail"].startswith("Missing or invalid API token")
    assert billing.post(f"{BANKS}/bad%20bank/memories/recall", json={"query": "x"}).status_code == 400
    resp = billing.post(f"{BANKS}/billing/reflect", json={"query": "x"})
    assert resp.status_code == 501 and "needs a language model" in resp.json()["detail"]
    # AutoMem's routes keep their own shape
    assert_error(billing.get("/recall", params={"limit": "many"}), 400, "limit")


def test_hostile_inputs(billing):
    deep: dict = {"tags": ["a"]}
    for _ in range(50):
        deep = {"not": deep}
    resp = billing.post(f"{BANKS}/billing/memories/recall", json={"query": "x", "tag_groups": [deep]})
    assert resp.status_code == 422, resp.text
    body = '{"query": "x", "tag_groups": [' + '{"not": ' * 20000 + '{"tags": ["a"]}' + "}" * 20000 + "]}"
    resp = billing.post(f"{BANKS}/billing/memories/recall", content=body.encode(), headers={"Content-Type": "application/json"})
    assert 400 <= resp.status_code < 500, resp.text
    for payload, code in (({"query": "a\ud800"}, 422), ({"query": "x", "tags": ["\udfff"]}, 400), ({"query": "x", "min_scores": {"final": float("nan")}}, 422),
                          ({"query": "x", "max_tokens": -1}, 422), ({"query": "x", "types": ["opinion"]}, 422), ({"query": "x", "tags": ["t"] * 201}, 422)):
        resp = billing.post(f"{BANKS}/billing/memories/recall", content=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
        assert resp.status_code == code, (payload, resp.text)
    resp = billing.post(f"{BANKS}/hostile/memories", json={"items": [{"content": "x", "metadata": {"k": {"nested": 1}}}]})
    assert resp.status_code == 422  # Hindsight metadata holds strings
    resp = billing.post(f"{BANKS}/hostile/memories", json={"items": [{"content": "x" * 30_000}]})
    assert resp.status_code == 200 and len(resp.json()["memory_ids"]) == 25  # long items are chunked (1,200 characters), not refused
    resp = billing.post(f"{BANKS}/hostile/memories", json={"items": [{"content": "word " * 200_000}] * 3})
    assert resp.status_code == 400 and "at most 2000 per request" in resp.json()["detail"]  # nothing embedded or written
