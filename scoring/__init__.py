"""Pure re-ranking for `GET /recall`: plain frozen dataclasses in, new values out.

weights.py (Weights, RecencyConfig) · keywords.py (keywords, word sets, stemmer) ·
components.py (one function per score component; metadata_terms.py, metadata_sidecar.py and
idf_share.py hold the larger ones) · context.py (context hints and bonus) · neighbours.py (thread
neighbour bonus) · rerank.py (Candidate -> ScoredCandidate, rank) · floors.py (score filters,
recency re-rank, temporal intent, content fingerprint). Standard library and snowballstemmer only.
"""
