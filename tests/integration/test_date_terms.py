"""Date terms against the real engine: relative dates resolved at write time, matched by the query's."""

from __future__ import annotations

from tests.integration.support import ids, recall
from tests.integration.support import mem as put


def terms(api, mid: str) -> list[str]:
    api.app.state.memories.refresh_now()
    return api.app.state.client.get(index=api.app.state.memories.alias, id=mid)["_source"]["date_terms"]


def test_relative_dates_are_resolved_against_the_timestamp_and_kept_through_patch(api):
    mid = put(api, "Went to the pottery class yesterday", timestamp="2023-05-08T13:56:00+00:00")
    assert "d:2023-05-07" in terms(api, mid) and "d:2023-05-08" in terms(api, mid)
    assert api.patch(f"/memory/{mid}", json={"timestamp": "2023-07-02T10:00:00+00:00"}).status_code == 200
    assert "d:2023-07-01" in terms(api, mid) and "d:2023-05-07" not in terms(api, mid)
    assert api.patch(f"/memory/{mid}", json={"content": "Went to the pottery class last weekend"}).status_code == 200
    assert {"d:2023-06-24", "d:2023-06-25"} <= set(terms(api, mid))
    # Never in a response.
    assert "date_terms" not in api.get(f"/memory/{mid}").json()["memory"]
    assert "date_terms" not in recall(api, query="pottery")["results"][0]["memory"]


def test_a_date_in_the_query_boosts_the_memories_of_that_date(api):
    july = put(api, "Painted a sunset with the kids last weekend", timestamp="2023-07-10T09:00:00+00:00")
    june = put(api, "Painted a sunset with the kids", timestamp="2023-06-20T09:00:00+00:00")
    body = recall(api, query="What did they paint in July 2023?", limit=2)
    assert ids(body) == [july, june]
    by = {r["id"]: r["score_components"] for r in body["results"]}
    assert by[july]["date"] == 1.0 and by[june]["date"] == 0.0
    # The event date counts, not only the day it was written: "last weekend" of 10 July is 8-9 July.
    assert ids(recall(api, query="What did they paint on July 8, 2023?", limit=2))[0] == july
    # A boost, not a filter: a date nobody meets still returns both, and no date, no component.
    assert set(ids(recall(api, query="What did they paint in 2019?", limit=2))) == {july, june}
    assert "date" not in recall(api, query="What did they paint?", limit=2)["results"][0]["score_components"]


def test_the_date_weight_is_a_setting(make_client):
    api = make_client(search_weight_date=0.0)
    july = put(api, "Painted a sunset with the kids", timestamp="2023-07-10T09:00:00+00:00")
    june = put(api, "Painted a sunset with the kids", timestamp="2023-06-20T09:00:00+00:00")
    by = {r["id"]: r for r in recall(api, query="What did they paint in July 2023?", limit=2)["results"]}
    assert by[july]["score_components"]["date"] == 1.0 and by[june]["score_components"]["date"] == 0.0
    assert by[july]["final_score"] == by[june]["final_score"]
