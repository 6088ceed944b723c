"""The write path's micro-batcher (service/embedding/batcher.py): each caller gets its own text's
vector, an error reaches every caller of its batch, and batches form by size, by window and while a
model call runs. No model: the encoder is a recording stand-in that returns a vector per text."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from service.embedding import MicroBatcher


class Recorder:
    """encode(texts): one row per text, [its length, its number]; the texts of each call are kept."""

    def __init__(self, fail_on: str | None = None, hold: threading.Event | None = None):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.hold = hold
        self.started = threading.Event()

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self.started.set()
        if self.hold is not None:
            self.hold.wait()
        if self.fail_on in texts:
            raise RuntimeError(f"model failed on {self.fail_on}")
        return np.array([[len(t), float(t.split("-")[-1])] for t in texts], dtype=np.float32)


@pytest.fixture
def batchers():
    made: list[MicroBatcher] = []

    def make(encode, **kw) -> MicroBatcher:
        made.append(MicroBatcher(encode, **kw))
        return made[-1]

    yield make
    for b in made:
        b.close()


def test_every_concurrent_caller_gets_its_own_texts_vector(batchers):
    encode = Recorder()
    batcher = batchers(encode, window=0.002, max_batch=8)
    texts = [f"{'x' * (i % 7)}text-{i}" for i in range(64)]
    with ThreadPoolExecutor(16) as pool:
        vectors = list(pool.map(batcher.embed, texts))
    assert vectors == [[float(len(t)), float(i)] for i, t in enumerate(texts)]
    assert sorted(t for call in encode.calls for t in call) == sorted(texts)  # each text embedded once
    assert all(1 <= len(call) <= 8 for call in encode.calls)
    assert (batcher.calls, batcher.texts) == (len(encode.calls), 64)


def test_a_full_batch_goes_at_once_in_the_callers_order(batchers):
    encode = Recorder()
    batcher = batchers(encode, window=60.0, max_batch=4)  # only the size can end this batch
    futures = [batcher.submit(f"t-{i}") for i in range(4)]
    assert [f.result(timeout=30) for f in futures] == [[3.0, float(i)] for i in range(4)]
    assert encode.calls == [["t-0", "t-1", "t-2", "t-3"]]


def test_the_window_ends_a_batch_that_is_not_full(batchers):
    encode = Recorder()
    batcher = batchers(encode, window=1.0, max_batch=100)
    first, second = batcher.submit("a-1"), batcher.submit("b-2")
    assert (first.result(timeout=30), second.result(timeout=30)) == ([3.0, 1.0], [3.0, 2.0])
    assert encode.calls == [["a-1", "b-2"]]


def test_texts_that_arrive_during_a_model_call_share_the_next_one(batchers):
    hold = threading.Event()
    encode = Recorder(hold=hold)
    batcher = batchers(encode, window=0.0, max_batch=32)
    first = batcher.submit("first-0")
    assert encode.started.wait(30)
    later = [batcher.submit(f"later-{i}") for i in range(1, 6)]
    hold.set()
    assert first.result(timeout=30) == [7.0, 0.0]
    assert [f.result(timeout=30) for f in later] == [[7.0, float(i)] for i in range(1, 6)]
    assert encode.calls == [["first-0"], [f"later-{i}" for i in range(1, 6)]]


def test_a_model_error_reaches_every_caller_of_its_batch_and_only_them(batchers):
    hold = threading.Event()
    encode = Recorder(fail_on="bad-2", hold=hold)
    batcher = batchers(encode, window=0.0, max_batch=32)
    alone = batcher.submit("alone-0")
    assert encode.started.wait(30)
    batch = [batcher.submit(t) for t in ("ok-1", "bad-2", "ok-3")]
    hold.set()
    assert alone.result(timeout=30) == [7.0, 0.0]
    for f in batch:
        with pytest.raises(RuntimeError, match="model failed on bad-2"):
            f.result(timeout=30)
    assert batcher.embed("after-4") == [7.0, 4.0]  # the batcher keeps serving


def test_a_wrong_number_of_vectors_is_an_error_for_the_batch_not_a_mix_up(batchers):
    batcher = batchers(lambda texts: np.zeros((len(texts) + 1, 2), dtype=np.float32), window=0.0, max_batch=4)
    with pytest.raises(RuntimeError, match="returned 2 vectors for 1 texts"):
        batcher.embed("x-1")


def test_close_embeds_what_is_queued_then_refuses_more():
    hold = threading.Event()
    encode = Recorder(hold=hold)
    batcher = MicroBatcher(encode, window=0.0, max_batch=32)
    first = batcher.submit("first-0")
    assert encode.started.wait(30)
    queued = batcher.submit("queued-1")
    closing = threading.Thread(target=batcher.close)
    closing.start()
    hold.set()
    closing.join(30)
    assert (first.result(timeout=1), queued.result(timeout=1)) == ([7.0, 0.0], [8.0, 1.0])
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit("late-2")


@pytest.mark.parametrize(("window", "max_batch"), [(-0.001, 4), (0.0, 0)])
def test_bad_parameters_are_refused(window, max_batch):
    with pytest.raises(ValueError):
        MicroBatcher(lambda t: np.zeros((len(t), 1)), window=window, max_batch=max_batch)
