"""Concurrent single-memory writes share model calls with EMBEDDING_WRITE_BATCHING=true (service/embedding/batcher.py):
each memory still gets its own text's vector, and a failed model call fails every write of its batch
with nothing stored."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from service.embedding import EmbeddingError, MicroBatcher

TEXTS = [f"Note {i} from the release train: {'the rollout waits for the canary. ' * (i % 4)}owner {i}" for i in range(16)]


def test_concurrent_writes_each_store_their_own_texts_vector(make_client, embedder):
    api = make_client(write_refresh="true", embedding_write_batching=True)
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda t: api.post("/memory", json={"content": t}), TEXTS))
    assert [r.status_code for r in responses] == [201] * len(TEXTS)
    ids = [r.json()["memory_id"] for r in responses]
    stored = api.app.state.memories.vectors("default", ids)
    got = np.array([stored[i][0] for i in ids])
    alone = np.array([embedder.embed_documents([t])[0] for t in TEXTS])
    similarity = got @ alone.T
    # Each memory's vector is its own text's, as if embedded alone (int8 quantises activations per token row for that).
    assert list(similarity.argmax(axis=1)) == list(range(len(TEXTS)))
    assert np.abs(got - alone).max() < 1e-5


def test_a_failed_model_call_fails_every_write_of_its_batch_and_stores_nothing(make_client):
    api = make_client(write_refresh="true", embedding_write_batching=True)
    writer = api.app.state.writer
    entered, release = threading.Event(), threading.Event()

    def broken(texts):
        entered.set()
        release.wait(30)
        raise EmbeddingError("model crashed")

    writer.batcher.close()
    writer.batcher = MicroBatcher(broken, window=0.0, max_batch=32)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(api.post, "/memory", json={"content": "the first write"})
        assert entered.wait(30)
        rest = [pool.submit(api.post, "/memory", json={"content": f"a later write {i}"}) for i in range(3)]
        deadline = time.monotonic() + 30
        while len(writer.batcher._pending) < 3 and time.monotonic() < deadline:  # the three queue for the next model call
            threading.Event().wait(0.01)
        release.set()
        answers = [first.result(), *(f.result() for f in rest)]
    assert [a.status_code for a in answers] == [503] * 4
    assert all("embedding failed, nothing was stored" in a.json()["message"] for a in answers)
    api.app.state.memories.refresh_now()
    assert api.app.state.memories.count() == 0


def test_writes_embed_on_their_own_by_default(make_client, embedder):
    api = make_client(write_refresh="true")
    assert api.app.state.writer.batcher is None
    mid = api.post("/memory", json={"content": TEXTS[3]}).json()["memory_id"]
    assert api.app.state.memories.vectors("default", [mid])[mid][0] == pytest.approx(embedder.embed_documents([TEXTS[3]])[0], abs=1e-5)
