"""Token counts for Hindsight's budgets (max_tokens, the include caps, the query limit), with the
embedding model's own tokenizer: its tokenizer.json (the model folder, else the one the embedder
loaded), without truncation or padding and without special tokens. A model without a fast
tokenizer falls back to counting words and punctuation marks (logged once)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("engram.hindsight")

_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _load(embedder: Any):
    from tokenizers import Tokenizer

    from service.embedding.layout import model_folder

    folder = model_folder(getattr(embedder, "model_name", "") or "")
    path = Path(folder) / "tokenizer.json" if folder is not None else None
    if path is not None and path.is_file():
        tok = Tokenizer.from_file(str(path))
    else:  # the tokenizer the ONNX route loaded (a model exported through sentence-transformers)
        loaded = getattr(getattr(embedder, "_impl", None), "tokenizer", None)
        if loaded is None or not hasattr(loaded, "to_str"):
            return None
        tok = Tokenizer.from_str(loaded.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


class TokenCounter:
    def __init__(self, embedder: Any):
        try:
            self._tok = _load(embedder)
        except Exception:  # noqa: BLE001 - counting must not stop the service
            log.warning("cannot load the embedding model's tokenizer; counting words instead", exc_info=True)
            self._tok = None
        if self._tok is None:
            log.warning("the embedding model has no tokenizer.json; Hindsight token budgets count words and punctuation")
        self.exact = self._tok is not None

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        if self._tok is None:
            return [len(_WORDS.findall(t)) for t in texts]
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def truncate(self, text: str, max_tokens: int) -> tuple[str, bool]:
        """The longest prefix of `text` with at most `max_tokens` tokens, cut at a token boundary;
        and whether anything was cut."""
        if max_tokens <= 0:
            return "", bool(text)
        if self._tok is None:
            matches = list(_WORDS.finditer(text))
            if len(matches) <= max_tokens:
                return text, False
            return text[: matches[max_tokens - 1].end()], True
        enc = self._tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= max_tokens:
            return text, False
        return text[: enc.offsets[max_tokens - 1][1]], True
