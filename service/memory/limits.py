"""Input limits every write API shares: what a client may store, checked before anything is written.

One stored memory must never break a later read for anyone: text must be valid Unicode (a lone
surrogate such as "\\ud800" cannot be encoded as UTF-8, so every response that would carry it
fails), metadata must be shallow and small enough to serialise (orjson refuses more than 254
levels; integers beyond 64 bits likewise), numbers must be finite, vectors must have a direction
(cosine of a zero vector is undefined: the engine refuses the query), and keyword values must fit
Lucene's term limit.

Pure functions: they raise `InvalidInput` (a `BadRequest`, so a 400 with the error shape) naming
the field; the caller prefixes batch items with `memories[i].`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from service.errors import BadRequest


class InvalidInput(BadRequest):
    pass


# The integers a JSON response can carry (orjson's 64 bits; JSON's are unbounded): a larger one would
# be stored, then fail every read.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
# The engine stores vectors and scores as 32-bit floats: a larger finite value fails the write.
FLOAT32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class Limits:
    """Settable through the environment (Settings, "input limits" block); defaults documented there."""

    content_chars: int = 20_000
    metadata_depth: int = 32
    metadata_keys: int = 1_000
    metadata_bytes: int = 64 * 1024
    tag_chars: int = 256
    tag_count: int = 200
    type_chars: int = 64


def finite_number(value: Any) -> float | None:
    """The value as a float when it is a finite real number; None for a bool, NaN, an infinity, anything
    not a number, and an integer too large for a float (JSON's integers are unbounded, and
    `math.isfinite` raises on those rather than answering)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def check_text(value: str, field: str, *, max_chars: int | None = None) -> str:
    """A string that encodes as UTF-8 (no lone surrogates), at most `max_chars` long."""
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value)} characters; the maximum is {max_chars}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"{field} is not valid Unicode (a lone surrogate at position {exc.start})") from None
    return value


def check_tags(tags: Sequence[str], limits: Limits, field: str = "tags") -> None:
    if len(tags) > limits.tag_count:
        raise InvalidInput(f"{field} holds {len(tags)} tags; the maximum is {limits.tag_count} (TAG_MAX_COUNT)")
    for i, tag in enumerate(tags):
        check_text(tag, f"{field}[{i}]", max_chars=limits.tag_chars)


def check_metadata(metadata: Any, limits: Limits, field: str = "metadata") -> None:
    """Depth, key count, finite numbers and valid strings (keys too), then the serialised size.

    Iterative, so a hostile 100,000-level document cannot exhaust Python's stack either.
    """
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise InvalidInput(f"{field} must be an object")
    keys = 0
    size = 0
    stack: list[tuple[Any, str, int]] = [(metadata, field, 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict):
            if depth > limits.metadata_depth:
                raise InvalidInput(f"{where} nests deeper than {limits.metadata_depth} levels (METADATA_MAX_DEPTH)")
            keys += len(value)
            if keys > limits.metadata_keys:
                raise InvalidInput(f"{field} holds more than {limits.metadata_keys} keys (METADATA_MAX_KEYS)")
            for key, item in value.items():
                check_text(key, f"{where} key {key[:40]!r}" if key.isascii() else f"{where} key")
                size += len(key) + 4
                stack.append((item, f"{where}.{key}" if len(where) < 200 else where, depth + 1))
        elif isinstance(value, list):
            if depth > limits.metadata_depth:
                raise InvalidInput(f"{where} nests deeper than {limits.metadata_depth} levels (METADATA_MAX_DEPTH)")
            size += 2 + len(value)
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            check_text(value, where)
            size += len(value) + 2
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInput(f"{where} must be a finite number (NaN and Infinity cannot be stored)")
            size += 24
        elif isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
            raise InvalidInput(f"{where} is an integer beyond 64 bits; send it as a string")
        else:
            size += 8  # int, bool, None
        if size > limits.metadata_bytes:
            raise InvalidInput(f"{field} is larger than {limits.metadata_bytes} bytes (METADATA_MAX_BYTES)")


def check_vector(vector: Sequence[float], dimension: int, field: str = "embedding") -> list[float]:
    if len(vector) != dimension:
        raise InvalidInput(f"{field} must have exactly {dimension} values, got {len(vector)}")
    norm = 0.0
    for value in vector:
        v = finite_number(value)
        if v is None or abs(v) > FLOAT32_MAX:
            raise InvalidInput(f"{field} values must be finite numbers that fit a 32-bit float")
        norm += v * v
    # float32 storage: a vector whose squared norm underflows is as directionless as zero.
    if norm < 1e-30:
        raise InvalidInput(f"{field} must not be all zeros: cosine similarity needs a direction")
    return list(vector)
