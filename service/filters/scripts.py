"""The painless scripts of the engine's queries and updates, and the script fields built on them: one
place for the code that runs inside OpenSearch."""

from __future__ import annotations

from collections.abc import Sequence

# k-NN's painless extension; the result is the plain cosine in [-1, 1], or null for a memory stored
# without a vector (without the guard, one such hit fails its whole arm).
COSINE_SCRIPT = "if (doc['embedding'].size() == 0) { return null; } return cosineSimilarity(params.query_value, doc['embedding']);"
# The temporal arm ranks the memories dated in its window by 1 + cosine (script_score wants >= 0).
TEMPORAL_SCORE_SCRIPT = "if (doc['embedding'].size() == 0) { return 0.0; } return 1.0 + cosineSimilarity(params.query_value, doc['embedding']);"
# Vectors live in the index's vector format, not in _source (reading hits' _source with 384 floats
# each was most of the cost of a recall's fetch phase), so they are read back through doc values.
# The copy matters: the value is Lucene's reused buffer, so returning it as is gives every hit
# of a search the last hit's vector.
VECTOR_SCRIPT = (
    "if (doc['embedding'].size() == 0) { return null; } "
    "def v = doc['embedding'].value; List out = new ArrayList(); "
    "for (int i = 0; i < v.length; i++) { out.add(v[i]); } return out;"
)
# Painless prefix of every update script: put the vector back, or the re-indexed document loses it.
CARRY_VECTOR = "if (params.embedding != null) { ctx._source.embedding = params.embedding; }\n"

# Records one supersession on the superseded memory, atomically per document. The list keeps write
# order, so the newest edge is last ("newest edge wins"); re-posting the same (by, type) moves it last but keeps its first time unless
# an explicit time is given. superseded_at is the EARLIEST time — the moment the memory stopped being
# current — so recall filters with one range clause. Times are fixed-width strings (state_time),
# so compareTo is chronological.
RECORD_SUPERSESSION = """
List l = ctx._source.supersessions;
if (l == null) { l = new ArrayList(); }
String keptAt = null;
for (int i = l.size() - 1; i >= 0; i--) {
  Map e = l.get(i);
  if (params.entry.by.equals(e.by) && params.entry.type.equals(e.type)) {
    if (keptAt == null) { keptAt = e.at; }
    l.remove(i);
  }
}
Map n = new HashMap(params.entry);
if (keptAt != null && params.keep_at) { n.at = keptAt; }
l.add(n);
ctx._source.supersessions = l;
String first = null;
for (Map e : l) { if (first == null || e.at.compareTo(first) < 0) { first = e.at; } }
ctx._source.superseded_at = first;
ctx._source.superseded_by = n.by;
ctx._source.supersede_type = n.type;
if (params.t_invalid != null) { ctx._source.t_invalid = params.t_invalid; }
"""


# Drops the entries whose superseding memory was deleted and recomputes the summary fields.
CLEAR_SUPERSESSIONS = """
List l = ctx._source.supersessions;
if (l == null) { ctx.op = 'noop'; return; }
for (int i = l.size() - 1; i >= 0; i--) {
  Map e = l.get(i);
  if (params.ids.contains(e.by)) { l.remove(i); }
}
if (l.isEmpty()) {
  ctx._source.remove('supersessions');
  ctx._source.remove('superseded_at');
  ctx._source.remove('superseded_by');
  ctx._source.remove('supersede_type');
} else {
  String first = null;
  for (Map e : l) { if (first == null || e.at.compareTo(first) < 0) { first = e.at; } }
  Map last = l.get(l.size() - 1);
  ctx._source.superseded_at = first;
  ctx._source.superseded_by = last.by;
  ctx._source.supersede_type = last.type;
}
"""


def with_cosine(arm: dict, vector: Sequence[float] | None) -> dict:
    """The arm, with each hit's cosine to the query vector returned as the script field `cosine`.

    An arm that ranks by BM25 keeps its score and still gets every hit's exact cosine from k-NN's
    painless `cosineSimilarity` over the stored vector, in the same request: no second search and
    no vectors in the response.
    """
    return arm if vector is None else {**arm, "script_fields": cosine_fields(vector)}


def cosine_fields(vector: Sequence[float]) -> dict:
    return {"cosine": {"script": {"source": COSINE_SCRIPT, "params": {"query_value": list(vector)}}}}
