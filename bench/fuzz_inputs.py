"""What the fuzzer feeds in besides what the schema describes (bench/fuzz.py, tests/integration/test_fuzz.py).

- HOSTILE_STRINGS / HOSTILE_NUMBERS: mixed into every generated string and number (HOSTILE_SHARE);
- header parameters get the hostile strings an HTTP client can send at all;
- HOSTILE_JSON: injected by the flatmap_body hook into JSON bodies, where no schema reaches
  (metadata, an association's extra properties) or in place of a declared field;
- VALID_TYPES / VALID_TIMES: valid values for the fields that most often make a generated body
  invalid, so that more bodies get past them and the hostile values reach the deeper checks.
"""

from __future__ import annotations

import copy
from typing import Any

# Mixed into every generated string / number (HOSTILE_SHARE of them): what a schema-driven generator
# rarely draws by itself. Lone surrogates cannot go into a URL (the HTTP client encodes UTF-8); JSON
# bodies get them from HOSTILE_JSON, as \ud800 escapes.
HOSTILE_STRINGS = [
    "", " ", "\t\r\n", "\x00", "a\x00b", "\u202eevil", "\u200b", "e\u0301" * 300, "\uffff", "\U0010ffff", "🙂" * 500,
    "x" * 30_000, "word " * 2_000, " ".join(f"w{i}" for i in range(1_200)), "*:* OR (a AND", "\\", '"', "'", "<script>",
    "${jndi:ldap://127.0.0.1/a}", "../../etc/passwd", "%00", "%ZZ", "\r\nX-Injected: 1", "-1", "0", "1e308", "NaN",
    "Infinity", "null", "true", "[]", "{}", "2024-02-30T25:61:61Z", "9999-12-31T23:59:59Z", "0001-01-01", "-infinity",
    "now", "last 3 days", "RELATES_TO", "EVOLVED_INTO", "Decision", "*", "a,b,,c", "tag:sub:", ":", "/", "_", "-",
]
HOSTILE_NUMBERS = [0, -0.0, 1, -1, 1e308, -1e308, 5e-324, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**30, 0.5, 1.0000001]
HOSTILE_SHARE = 0.1
VALID_TYPES = ["Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context", "decision", "RELATES_TO", "PREFERS_OVER",
               "EVOLVED_INTO", "INVALIDATED_BY", "REINFORCES", "DERIVED_FROM"]
VALID_TIMES = ["2024-01-01T00:00:00Z", "2025-06-30T12:34:56.789+02:00", "2020-02-29", "2031-01-01T00:00:00Z", "1970-01-01T00:00:00Z",
               "0999-05-05T00:00:00Z", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"]
# Header parameters get the hostile strings an HTTP client sends as they are (printable latin-1, no
# leading or trailing whitespace); control characters in headers are a regression test of their own.
HEADER_PARAMETERS = ("Idempotency-Key", "X-API-Key", "X-Admin-Token")


def _deep(levels: int) -> dict:
    doc: dict = {}
    for _ in range(levels):
        doc = {"n": doc}
    return doc


# Injected into JSON bodies by the flatmap_body hook (a good share of them): values no schema describes,
# in free-form places (metadata, an association's extra properties) or replacing a declared field.
# Integers beyond 64 bits, lone surrogates (sent as \ud800 escapes), deep nesting, odd keys.
HOSTILE_JSON = [
    2**64, -(2**63) - 1, 10**400, 1e308, -0.0, 5e-324, "\ud800", "a\udfffb", "\x00", {"": ""}, {"k" * 5_000: 1},
    [[[[[[[[[[[]]]]]]]]]]], list(range(2_000)),
    "x" * 100_000, True, None, [], {}, _deep(40), _deep(300),
]
# Extra keys tried besides the object's own: metadata (its inside), an unknown one, and the
# properties some association types carry.
EXTRA_KEYS = ["hostile", "observations", "reason", "confidence", "transformation"]


def _objects(body: Any, depth: int = 0) -> list[dict]:
    """The JSON objects of a body, outermost first, down to three levels."""
    if depth > 3:
        return []
    found = [body] if isinstance(body, dict) else []
    items = body.values() if isinstance(body, dict) else body if isinstance(body, list) else ()
    for item in items:
        found += _objects(item, depth + 1)
    return found


def _inject(body: Any, target: int, key: str, value: Any) -> Any:
    body = copy.deepcopy(body)
    obj = _objects(body)[target]
    if key == "metadata" and not isinstance(value, dict):
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        obj["metadata"] = {**metadata, "hostile": value}  # inside metadata: the free-form place
    else:
        obj[key] = value
    return body


def flatmap_body(context, body):
    """A schemathesis hook (registered on the fuzzed schema only): often a hostile value."""
    from hypothesis import strategies as st

    objects = _objects(body)
    if not objects:
        return st.just(body)
    # Half of the injections go into metadata, the free-form field every memory body has.
    where = st.integers(0, len(objects) - 1).flatmap(
        lambda i: st.tuples(st.just(i), st.just("metadata") | st.sampled_from(sorted(map(str, objects[i])) + EXTRA_KEYS)))
    injected = st.builds(lambda w, value: _inject(body, w[0], w[1], value), where, st.sampled_from(HOSTILE_JSON))
    # About two bodies in three (hypothesis leans towards the first choice of a one_of).
    return st.sampled_from((True, True, False)).flatmap(lambda hit: injected if hit else st.just(body))


def sendable_in_header(value: str) -> bool:
    return bool(value) and value == value.strip() and all(32 <= ord(c) < 256 and ord(c) != 127 for c in value)
