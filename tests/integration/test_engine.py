"""The engine itself: the OpenSearch features Engram relies on, proved on the real local node."""

from __future__ import annotations

import uuid

import pytest
from opensearchpy import helpers


@pytest.fixture
def index(os_client):
    name = f"probe-{uuid.uuid4().hex[:8]}"
    os_client.indices.create(
        index=name,
        body={
            "settings": {"index": {"knn": True, "number_of_replicas": 0}},
            "mappings": {
                "properties": {
                    "v": {"type": "knn_vector", "dimension": 3, "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}},
                    "text": {"type": "text", "analyzer": "english"},
                    "tag": {"type": "keyword"},
                }
            },
        },
    )
    docs = [
        ("a", [1, 0, 0], "The dogs were running home", "x"),
        ("b", [0.9, 0.1, 0], "A cat sleeps", "y"),
        ("c", [0, 1, 0], "Running is healthy", "y"),
        ("d", [0, 0, 1], "Nothing to see", "z"),
    ]
    ok, errors = helpers.bulk(
        os_client, [{"_index": name, "_id": i, "_source": {"v": v, "text": t, "tag": g}} for i, v, t, g in docs], refresh=True
    )
    assert ok == 4 and not errors
    yield name
    os_client.indices.delete(index=name, ignore=[404])


def test_filtered_knn_on_lucene_engine(os_client, index):
    resp = os_client.search(index=index, body={"query": {"knn": {"v": {"vector": [1, 0, 0], "k": 3, "filter": {"term": {"tag": "y"}}}}}})
    hits = [(h["_id"], round(h["_score"], 4)) for h in resp["hits"]["hits"]]
    # Only tag y; ordered by cosine; Lucene's cosine score is (1 + cos) / 2.
    assert [h[0] for h in hits] == ["b", "c"]
    assert hits[0][1] == pytest.approx((1 + 0.9 / (0.9**2 + 0.1**2) ** 0.5) / 2, abs=1e-4)
    assert hits[1][1] == pytest.approx(0.5, abs=1e-4)


def test_painless_has_knn_cosine_similarity_inside_msearch(os_client, index):
    # k-NN's painless extension (cosineSimilarity) reaches painless on the local node too, and a
    # script field works inside _msearch, where per-clause scores are refused.
    body = [{"index": index}, {"size": 4, "_source": False, "query": {"match": {"text": "running"}},
            "script_fields": {"cos": {"script": {"source": "cosineSimilarity(params.q, doc['v'])", "params": {"q": [1, 1, 0]}}}}}]
    hits = os_client.msearch(body=body)["responses"][0]["hits"]["hits"]
    assert {h["_id"]: round(h["fields"]["cos"][0], 4) for h in hits} == {"a": round(2**-0.5, 4), "c": round(2**-0.5, 4)}


def test_english_analyzer_stems(os_client, index):
    tokens = os_client.indices.analyze(index=index, body={"field": "text", "text": "The dogs were running"})["tokens"]
    assert [t["token"] for t in tokens] == ["dog", "were", "run"]
    resp = os_client.search(index=index, body={"query": {"match": {"text": "run"}}})
    assert sorted(h["_id"] for h in resp["hits"]["hits"]) == ["a", "c"]


def test_the_python_stems_cut_long_words_as_the_engine_does(os_client, index):
    """scoring.keywords.stemmed_words (the stems recall stores and scores) agrees with the engine's
    english analyzer on a word past max_token_length (255): both cut it into 255-character pieces."""
    from scoring.keywords import stemmed_words

    text = "The dogs were running " + "x" * 300 + " " + "a1" * 200
    tokens = os_client.indices.analyze(index=index, body={"field": "text", "text": text})["tokens"]
    assert {t["token"] for t in tokens} == stemmed_words(text)
    assert max(map(len, stemmed_words(text))) == 255


def test_msearch_terms_lookup_and_delete_by_query(os_client, index):
    lookup = f"{index}-lookup"
    os_client.indices.create(index=lookup, body={"settings": {"number_of_replicas": 0}})
    os_client.index(index=lookup, id="wanted", body={"tags": ["x", "z"]}, refresh=True)
    try:
        resp = os_client.msearch(
            body=[
                {"index": index},
                {"query": {"terms": {"tag": {"index": lookup, "id": "wanted", "path": "tags"}}}},
                {"index": index},
                {"size": 0, "track_total_hits": True, "query": {"match_all": {}}},
            ]
        )
        first, second = resp["responses"]
        assert sorted(h["_id"] for h in first["hits"]["hits"]) == ["a", "d"]
        assert second["hits"]["total"]["value"] == 4
        deleted = os_client.delete_by_query(index=index, body={"query": {"term": {"tag": "y"}}}, refresh=True)
        assert deleted["deleted"] == 2
        assert os_client.count(index=index)["count"] == 2
    finally:
        os_client.indices.delete(index=lookup, ignore=[404])
