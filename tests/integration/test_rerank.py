"""RECALL_RERANK_MODEL through GET /recall, with a tiny randomly initialised cross-encoder the test
builds (no cross-encoder weights are reachable offline): the stage's plumbing, not a model's quality."""

from __future__ import annotations

import pytest

from tests.integration.support import recall
from tests.integration.support import mem as put

pytest.importorskip("sentence_transformers")

WORDS = ("what did we choose for the primary database postgresql mongodb redis cache deploy friday "
         "staging lunch was pasta decided to use sqlite tests run nightly").split()
TEXTS = [
    "We chose PostgreSQL for the primary database",
    "Redis is the cache",
    "Decided to use SQLite for tests",
    "Deploy to staging on Friday",
    "Lunch was pasta",
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> str:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("cross-encoder")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]))
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    torch.manual_seed(7)
    config = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1, initializer_range=1.0)
    BertForSequenceClassification(config).save_pretrained(folder)
    return str(folder)


def test_the_top_n_are_rescored_by_the_cross_encoder(make_client, tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    query = "what did we choose for the primary database"
    plain = make_client()
    for text in TEXTS:
        put(plain, text)
    before = recall(plain, query=query, limit=5)["results"]
    api = make_client(recall_rerank_model=tiny_cross_encoder, recall_rerank_top_n=3, recall_rerank_weight=1.0)
    for r in before:
        put(api, r["memory"]["content"], id=r["id"])
    body = recall(api, query=query, limit=5)
    # What the stage must have done: the first 3 of the hybrid order, each + its model score, re-sorted.
    model = CrossEncoder(tiny_cross_encoder, device="cpu")
    head = before[:3]
    scores = [float(v) for v in model.predict([(query, r["memory"]["content"]) for r in head])]
    assert len(set(round(s, 4) for s in scores)) == 3  # the random model tells them apart
    expected = sorted(((r["final_score"] + s, r["id"], s) for r, s in zip(head, scores)), key=lambda t: (-t[0], t[1]))
    got = body["results"]
    assert [r["id"] for r in got[:3]] == [mid for _, mid, _ in expected]
    for r, (final, _, s) in zip(got[:3], expected):
        assert r["final_score"] == pytest.approx(final, abs=1e-5) and r["score_components"]["rerank"] == pytest.approx(s, abs=1e-5)
    assert [r["id"] for r in got[3:]] == [r["id"] for r in before[3:]]
    assert all("rerank" not in r["score_components"] for r in got[3:])
    assert "rerank" in body["timings"]
    # Time orders are not reranked.
    assert all("rerank" not in r["score_components"] for r in recall(api, query=query, sort="time_desc")["results"])
    # Placement has the last word: an in-scope memory leads the scope-fallback fills whatever the model
    # makes of them. The one in scope is the memory a reranker after placement would demote most.
    text = {r["id"]: r["memory"]["content"] for r in before}
    model_score = {mid: float(v) for mid, v in zip(text, model.predict([(query, t) for t in text.values()]))}
    final = {r["id"]: r["final_score"] for r in before}
    weakest = min(text, key=lambda m: final[m] + model_score[m])
    scoped = make_client(recall_rerank_model=tiny_cross_encoder, recall_rerank_top_n=3, recall_rerank_weight=1.0)
    for mid, content in text.items():
        put(scoped, content, id=mid, tags=["alpha"] if mid == weakest else [])
    got = recall(scoped, query=query, limit=5, tags="alpha", scope_fallback="true")["results"]
    assert [r["id"] for r in got][0] == weakest and len(got) == 5


def test_an_unloadable_model_is_one_clear_error_at_start_up(tmp_path):
    from service.recall.rerank import RerankerUnavailable, load_reranker

    assert load_reranker(None, top_n=20, weight=1.0) is None
    with pytest.raises(RerankerUnavailable, match="RECALL_RERANK_MODEL=.*could not be loaded"):
        load_reranker(str(tmp_path / "no-such-model"), top_n=20, weight=1.0)
