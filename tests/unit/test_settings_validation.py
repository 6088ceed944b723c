"""Settings are validated once, and a bad one reads as one line: the setting, the value tried, what is wrong."""

from __future__ import annotations

import pytest

from service.config import Settings, SettingsError, load_settings, shown_url, url_problem

CASES = [
    ({"PORT": "eighty"}, "PORT='eighty' is invalid: input should be a valid integer, unable to parse string as an integer"),
    ({"PORT": "70000"}, "PORT='70000' is invalid: input should be less than or equal to 65535"),
    ({"WRITE_REFRESH": "sometimes"}, "WRITE_REFRESH='sometimes' is invalid: input should be 'wait_for', 'true' or 'false'"),
    ({"SEARCH_WEIGHT_VECTOR": "lots"}, "SEARCH_WEIGHT_VECTOR='lots' is invalid: input should be a valid number, unable to parse string as a number"),
    ({"SEARCH_WEIGHT_VECTOR": "35"}, "SEARCH_WEIGHT_VECTOR='35' is invalid: input should be less than or equal to 10"),
    ({"SEARCH_WEIGHT_TAG": "-0.1"}, "SEARCH_WEIGHT_TAG='-0.1' is invalid: input should be greater than or equal to 0"),
    ({"SEARCH_WEIGHT_TEMPORAL": "nan"}, "SEARCH_WEIGHT_TEMPORAL='nan' is invalid: input should be a finite number"),
    ({"RECALL_MIN_SCORE": "inf"}, "RECALL_MIN_SCORE='inf' is invalid: input should be a finite number"),
    ({"SEARCH_RECENCY_CURVE": "log"}, "SEARCH_RECENCY_CURVE='log' is invalid: input should be 'linear' or 'exp'"),
    ({"SEARCH_SCORING_PROFILE": "best"}, "SEARCH_SCORING_PROFILE='best' is invalid: input should be 'engram' or 'automem'"),
    ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' is invalid: input should be 'text' or 'json'"),
    ({"METRICS_PORT": "-1"}, "METRICS_PORT='-1' is invalid: input should be greater than or equal to 0"),
    ({"RECALL_MAX_LIMIT": "0"}, "RECALL_MAX_LIMIT='0' is invalid: input should be greater than or equal to 1"),
    ({"RECALL_VECTOR_FETCH_CAP": "20000"}, "RECALL_VECTOR_FETCH_CAP='20000' is invalid: input should be less than or equal to 10000"),
    ({"EMBEDDING_BATCH_SIZE": "0"}, "EMBEDDING_BATCH_SIZE='0' is invalid: input should be greater than or equal to 1"),
    ({"ENGRAM_NODE_NAME": "ok", "INDEX_SHARDS": "a", "RECALL_LOG_ENABLED": "maybe"},
     "INDEX_SHARDS='a' is invalid: input should be a valid integer, unable to parse string as an integer; "
     "RECALL_LOG_ENABLED='maybe' is invalid: input should be a valid boolean, unable to interpret input"),
    ({"OPENSEARCH_URL": "localhost:9200"},
     "OPENSEARCH_URL='localhost:9200' is invalid: malformed URL (no http:// or https:// scheme); expected http://host:port or https://host:port"),
    ({"OPENSEARCH_URL": "http//localhost:9200"},
     "OPENSEARCH_URL='http//localhost:9200' is invalid: malformed URL (no http:// or https:// scheme); expected http://host:port or https://host:port"),
    ({"OPENSEARCH_URL": "ftp://host:21"},
     "OPENSEARCH_URL='ftp://host:21' is invalid: malformed URL (scheme 'ftp' is not http or https); expected http://host:port or https://host:port"),
    ({"OPENSEARCH_URL": "http://:9200"}, "OPENSEARCH_URL='http://:9200' is invalid: malformed URL (no host); expected http://host:port or https://host:port"),
    ({"OPENSEARCH_URL": "http://host:port"},
     "OPENSEARCH_URL='http://host:port' is invalid: malformed URL (bad port: Port could not be cast to integer value as 'port'); "
     "expected http://host:port or https://host:port"),
    # The password never reaches the message.
    ({"OPENSEARCH_URL": "https://admin:hunter2@host:99999"},
     "OPENSEARCH_URL='https://admin:***@host:99999' is invalid: malformed URL (bad port: Port out of range 0-65535); "
     "expected http://host:port or https://host:port"),
]


@pytest.fixture
def env(monkeypatch):
    def apply(values: dict[str, str]) -> None:
        for key, value in values.items():
            monkeypatch.setenv(key, value)

    return apply


@pytest.mark.parametrize(("values", "message"), CASES, ids=[next(iter(v)) + "=" + next(iter(v.values())) for v, _ in CASES])
def test_a_bad_setting_is_one_line_naming_it_the_value_and_the_problem(env, values, message):
    env(values)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value) == message
    assert "\n" not in str(caught.value) and "hunter2" not in str(caught.value)


def test_names_and_defaults_are_kept():
    s = Settings()
    assert (s.port, s.write_refresh, s.search_recency_curve, s.search_scoring_profile, s.search_keyword_mode) == (8001, "true", "linear", "engram", "idf")
    assert (s.search_weight_vector, s.search_weight_keyword, s.search_weight_tag, s.search_weight_relevance, s.search_weight_temporal) == (0.35, 0.35, 0.2, 0.0, 0.1)
    assert (s.log_format, s.metrics_enabled, s.metrics_port, s.metrics_token, s.recall_log_enabled, s.recall_log_include_query) == (
        "text", True, 0, None, False, False)
    assert s.recall_log_alias == "engram-recall-log"


def test_enumerations_ignore_case_and_blanks(env):
    env({"SEARCH_RECENCY_CURVE": " EXP ", "SEARCH_SCORING_PROFILE": "AutoMem", "WRITE_REFRESH": "False", "LOG_FORMAT": "JSON"})
    s = load_settings()
    assert (s.search_recency_curve, s.search_scoring_profile, s.write_refresh, s.log_format) == ("exp", "automem", "false", "json")


def test_weights_at_their_bounds_are_accepted(env):
    env({"SEARCH_WEIGHT_VECTOR": "0", "SEARCH_WEIGHT_KEYWORD": "10"})
    s = load_settings()
    assert (s.search_weight_vector, s.search_weight_keyword) == (0.0, 10.0)


def test_overrides_are_validated_too():
    with pytest.raises(SettingsError, match=r"^INDEX_REPLICAS=-1 is invalid: input should be greater than or equal to 0$"):
        load_settings(index_replicas=-1)
    assert load_settings(opensearch_url="https://u:p@search.example:9200/prefix").opensearch_url == "https://u:p@search.example:9200/prefix"


def test_secrets_never_appear(env):
    from service.config import _shown_value

    assert _shown_value("automem_api_token", "s3cret") == "<hidden>"
    assert _shown_value("opensearch_password", "s3cret") == "<hidden>"
    assert _shown_value("opensearch_url", "https://u:s3cret@h:1") == "'https://u:***@h:1'"
    assert len(_shown_value("index_prefix", "x" * 500)) == 120


@pytest.mark.parametrize(("url", "problem"), [
    ("http://127.0.0.1:9200", None), ("https://search.example", None), ("https://u:p@h:443/os", None), ("http://[::1]:9200", None),
    ("http://h :9200", "it contains blanks"), ("127.0.0.1:9200", "no http:// or https:// scheme"), ("opensearch", "no http:// or https:// scheme"),
    ("https://", "no host"),
])
def test_url_problems(url, problem):
    assert url_problem(url) == problem


def test_shown_url_hides_only_the_password():
    assert shown_url("https://admin:s3:cr@t@host:9200/x") == "https://admin:***@host:9200/x"
    assert shown_url("http://host:9200") == "http://host:9200"
    assert shown_url("http://user@host") == "http://user@host"


def test_every_numeric_setting_is_bounded_both_ways():
    """No numeric setting takes any value: each declares a lower and an upper bound (RECALL_MAX_LIMIT=0
    or a 10**9 queue would otherwise start a service that fails every request, or the machine)."""
    import annotated_types as at

    unbounded = []
    for name, field in Settings.model_fields.items():
        if field.annotation in (int, float, int | None, float | None):
            low = any(isinstance(m, (at.Ge, at.Gt)) for m in field.metadata)
            high = any(isinstance(m, (at.Le, at.Lt)) for m in field.metadata)
            if not (low and high):
                unbounded.append(name)
    assert unbounded == []

