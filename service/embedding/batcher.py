"""Concurrent single-text embeddings gathered into one model call (the write path's micro-batcher).

Each POST /memory runs in its own worker thread and embeds one text. On 2 cores, eight such calls
at once run eight model calls side by side, each padding nothing but paying the whole per-call
overhead and fighting the others for the same cores. The batcher hands every text to one thread
that waits at most `window` seconds after the first text of a batch (or until `max_batch` texts
are waiting), embeds them in one call, and gives each caller its own row. While a call runs, the
next texts queue up, so under load batches form even with a window of 0; a caller alone waits the
window and no more. An error of the model call reaches every caller of that batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np


class MicroBatcher:
    """`embed(text)` from any thread; `encode(texts)` runs on the batcher's own thread, one call at a time."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], *, window: float, max_batch: int, name: str = "embed-batcher"):
        if window < 0 or max_batch < 1:
            raise ValueError("window must be >= 0 and max_batch >= 1")
        self._encode = encode
        self.window = window
        self.max_batch = max_batch
        self._name = name
        self._pending: list[tuple[str, Future]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.calls = 0  # model calls made, and texts embedded: the mean batch is texts / calls
        self.texts = 0

    def embed(self, text: str) -> list[float]:
        """The text's vector; raises what the model call of its batch raised."""
        return self.submit(text).result()

    def submit(self, text: str) -> Future:
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the embedding batcher is closed")
            self._pending.append((text, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return future

    def close(self) -> None:
        """Embed what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _take(self) -> list[tuple[str, Future]] | None:
        """The next batch: the first waiting text, and those that arrive within the window (up to max_batch)."""
        with self._cond:
            while not self._pending:
                if self._closed:
                    return None
                self._cond.wait()
            deadline = time.monotonic() + self.window
            while len(self._pending) < self.max_batch and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            return batch

    def _run(self) -> None:
        while (batch := self._take()) is not None:
            texts = [t for t, _ in batch]
            try:
                rows = _rows(self._encode(texts), len(texts))
            except Exception as exc:  # noqa: BLE001 - every caller of the batch gets the model's error
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.calls += 1
            self.texts += len(texts)
            for (_, future), row in zip(batch, rows):
                future.set_result(row)


def _rows(vectors: np.ndarray | Sequence[Sequence[float]], n: int) -> list[list[float]]:
    rows = vectors.tolist() if isinstance(vectors, np.ndarray) else [list(v) for v in vectors]
    if len(rows) != n:
        raise RuntimeError(f"the model returned {len(rows)} vectors for {n} texts")
    return rows
