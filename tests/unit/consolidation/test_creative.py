"""Creative links: cross-cluster pairs in the cosine band, classified by type."""

from __future__ import annotations

from service.consolidation.creative import classify, discover

BAND = (0.5, 0.75)


def test_classify():
    assert classify("Insight", "Pattern", 0.6, BAND) == ("explains", 0.7)
    assert classify("Pattern", "Insight", 0.55, BAND) == ("explains", 0.7)
    assert classify("Decision", "Context", 0.612345678, BAND) == ("shares_theme", 0.612346)
    assert classify("Decision", "Decision", 0.6, BAND) == ("bridges_clusters", 0.6)
    assert classify(None, "Decision", 0.6, BAND) == ("shares_theme", 0.6)
    assert classify("Decision", "Context", 0.75, BAND) is None  # near-duplicates are the cluster pass's
    assert classify("Decision", "Context", 0.49, BAND) is None


def test_discover_crosses_clusters_skips_linked_and_caps_per_memory():
    neighbours = {
        "a": [("b", 0.9), ("c", 0.7), ("d", 0.65), ("e", 0.6), ("f", 0.3)],
        "c": [("a", 0.7)],
    }
    cluster_of = {"a": "a", "b": "a", "c": "c", "d": "d", "e": "e", "f": "f"}
    types = {"a": "Insight", "b": "Insight", "c": "Pattern", "d": "Decision", "e": "Insight", "f": "Context"}
    links = discover(["a", "c"], neighbours, cluster_of, types, linked={frozenset(("a", "d"))}, band=BAND)
    # b: same cluster; d: already linked; f: below the band; two per memory: c and e; (c, a) is reported once.
    assert [(l.memory1_id, l.memory2_id, l.kind, l.confidence, l.similarity) for l in links] == [
        ("a", "c", "explains", 0.7, 0.7),
        ("a", "e", "bridges_clusters", 0.6, 0.6),
    ]
    assert links[0].as_dict() == {"memory1_id": "a", "memory2_id": "c", "type": "DISCOVERED", "kind": "explains", "confidence": 0.7, "similarity": 0.7}
    assert discover(["a"], neighbours, cluster_of, types, set(), BAND, per_memory=1) == links[:1]
    assert discover(["a", "c"], neighbours, cluster_of, types, set(), BAND, limit=1)[0].memory2_id == "c"


def test_unknown_clusters_get_no_links():
    neighbours = {"a": [("b", 0.6)]}
    types = {"a": "Insight", "b": "Context"}
    assert discover(["a"], neighbours, {"a": None, "b": "b"}, types, set(), BAND) == []
    assert len(discover(["a"], neighbours, {"a": "a", "b": "b"}, types, set(), BAND)) == 1
