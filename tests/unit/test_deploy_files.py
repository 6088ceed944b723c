"""The deployment files: compose.yaml, the Dockerfile and the Dashboards saved objects.

None of them can run here (no Docker engine), so these tests check what can be checked without one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from service.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
NDJSON = ROOT / "index_templates" / "dashboards" / "engram.ndjson"
OPENSEARCH_VERSION = "2.19.1"


def compose() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(COMPOSE.read_text())


def environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):  # the "KEY=value" list form
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): str(v) for k, v in env.items()}


def saved_objects() -> list[dict]:
    lines = NDJSON.read_text().splitlines()
    assert lines, "no saved objects"
    objects = []
    for number, line in enumerate(lines, 1):
        assert line.strip(), f"line {number} is blank"
        obj = json.loads(line)
        assert isinstance(obj, dict), f"line {number} is not a JSON object"
        objects.append(obj)
    return objects


def test_compose_parses_and_has_the_services():
    doc = compose()
    assert {"opensearch", "dashboards", "engram"} <= set(doc["services"])
    assert "opensearch-data" in doc["volumes"]


def test_compose_pins_opensearch_and_dashboards_images():
    services = compose()["services"]
    assert services["opensearch"]["image"] == f"opensearchproject/opensearch:{OPENSEARCH_VERSION}"
    assert services["dashboards"]["image"] == f"opensearchproject/opensearch-dashboards:{OPENSEARCH_VERSION}"


def test_compose_image_matches_the_test_engine_pin():
    """tests/conftest.py pins testcontainers' OpenSearch to the compose image."""
    pin = re.search(r'^COMPOSE_IMAGE = "([^"]+)"', (ROOT / "tests" / "conftest.py").read_text(), re.M)
    assert pin, "COMPOSE_IMAGE not found in tests/conftest.py"
    assert compose()["services"]["opensearch"]["image"] == pin.group(1)


def test_compose_security_plugins_disabled():
    services = compose()["services"]
    opensearch = environment(services["opensearch"])
    assert opensearch["DISABLE_SECURITY_PLUGIN"] == "true"
    assert opensearch["DISABLE_INSTALL_DEMO_CONFIG"] == "true"
    assert opensearch["discovery.type"] == "single-node"
    assert environment(services["dashboards"])["DISABLE_SECURITY_DASHBOARDS_PLUGIN"] == "true"


def test_compose_opensearch_has_data_volume_and_healthcheck():
    opensearch = compose()["services"]["opensearch"]
    assert any(str(v).startswith("opensearch-data:") for v in opensearch["volumes"])
    assert "_cluster/health" in " ".join(opensearch["healthcheck"]["test"])


def test_compose_engram_service():
    engram = compose()["services"]["engram"]
    env = environment(engram)
    assert env["OPENSEARCH_URL"] == "http://opensearch:9200"
    assert "AUTOMEM_API_TOKEN" in env
    assert env["HOST"] == "0.0.0.0"
    assert env["PORT"] == "8001"
    assert "/health" in " ".join(engram["healthcheck"]["test"])
    assert engram["depends_on"]["opensearch"]["condition"] == "service_healthy"
    assert engram["build"]["dockerfile"] == "Dockerfile"


def test_dockerfile_essentials():
    text = DOCKERFILE.read_text()
    assert "FROM python:3.11-slim" in text
    assert "download.pytorch.org/whl/cpu" in text
    assert "HF_HUB_OFFLINE=1" in text
    assert "EXPOSE 8001" in text
    assert "USER " in text
    assert 'CMD ["python", "-m", "service"]' in text


def test_ndjson_every_line_parses():
    objects = saved_objects()
    ids = [(o["type"], o["id"]) for o in objects]
    assert len(ids) == len(set(ids)), "duplicate saved object"
    for obj in objects:
        assert {"id", "type", "attributes", "references"} <= set(obj)
        for field in ("visState", "uiStateJSON", "panelsJSON", "optionsJSON", "fields", "sourceFilters"):
            if field in obj["attributes"]:
                json.loads(obj["attributes"][field])
        meta = obj["attributes"].get("kibanaSavedObjectMeta")
        if meta:
            json.loads(meta["searchSourceJSON"])


def test_ndjson_index_patterns_match_default_aliases(monkeypatch):
    monkeypatch.delenv("INDEX_PREFIX", raising=False)
    settings = Settings()
    patterns = {o["id"]: o["attributes"] for o in saved_objects() if o["type"] == "index-pattern"}
    titles = {attrs["title"] for attrs in patterns.values()}
    assert titles == {f"{settings.memories_alias}*", f"{settings.edges_alias}*", f"{settings.recall_log_alias}*"}
    memories = next(a for a in patterns.values() if a["title"] == f"{settings.memories_alias}*")
    assert memories["timeFieldName"] == "timestamp"


def test_ndjson_references_resolve():
    objects = saved_objects()
    known = {(o["type"], o["id"]) for o in objects}
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in known, f"{obj['id']} refers to a missing {ref['type']} {ref['id']}"


def test_ndjson_saved_search_of_recent_memories():
    searches = [o for o in saved_objects() if o["type"] == "search"]
    assert searches
    attrs = searches[0]["attributes"]
    assert {"content", "tags", "type", "importance"} <= set(attrs["columns"])
    assert attrs["sort"][0] == ["timestamp", "desc"]


def template_fields(name: str) -> set[str]:
    """Every field path of index_templates/<name>.json: objects' sub-fields dotted, multi-fields included."""
    found: set[str] = set()

    def walk(properties: dict, prefix: str) -> None:
        for key, spec in properties.items():
            path = f"{prefix}{key}"
            found.add(path)
            walk(spec.get("properties", {}), f"{path}.")
            walk(spec.get("fields", {}), f"{path}.")

    walk(json.loads((ROOT / "index_templates" / f"{name}.json").read_text())["template"]["mappings"]["properties"], "")
    return found


def referenced_fields(obj: dict) -> set[str]:
    """The field names a saved object names: an index pattern's time field and source filters, a saved
    search's columns, sort and filters, a visualization's aggregation fields."""
    attrs = obj["attributes"]
    fields: set[str] = set()
    if obj["type"] == "index-pattern":
        fields |= {attrs["timeFieldName"]} if attrs.get("timeFieldName") else set()
        fields |= {f["value"] for f in json.loads(attrs.get("sourceFilters") or "[]")}
    fields |= set(attrs.get("columns", []))
    fields |= {sort[0] for sort in attrs.get("sort", [])}
    if "visState" in attrs:
        fields |= {agg["params"]["field"] for agg in json.loads(attrs["visState"])["aggs"] if agg["params"].get("field")}
    meta = attrs.get("kibanaSavedObjectMeta")
    if meta:
        source = json.loads(meta["searchSourceJSON"])
        fields |= {f["meta"]["key"] for f in source.get("filter", []) if f.get("meta", {}).get("key")}
        assert not source.get("query", {}).get("query"), f"{obj['id']}: a saved query string is not checked here"
    return fields


def test_every_field_a_saved_object_references_is_in_its_index_template():
    objects = {(o["type"], o["id"]): o for o in saved_objects()}
    patterns = {o["id"]: o["attributes"]["title"] for o in objects.values() if o["type"] == "index-pattern"}
    checked = 0
    for obj in objects.values():
        if obj["type"] == "index-pattern":
            pattern_ids = [obj["id"]]
        else:
            pattern_ids = [r["id"] for r in obj["references"] if r["type"] == "index-pattern"]
        fields = referenced_fields(obj)
        if fields:
            assert pattern_ids, f"{obj['id']} names fields but no index pattern"
        for pattern_id in pattern_ids:
            template = patterns[pattern_id].removeprefix("engram-").rstrip("*")  # engram-recall-log* -> recall-log.json
            missing = fields - template_fields(template)
            assert not missing, f"{obj['type']} {obj['id']}: {sorted(missing)} not mapped in index_templates/{template}.json"
            checked += len(fields)
    assert checked >= 25  # the check saw the fields (memories, edges, recall log)


def test_the_field_check_catches_an_unmapped_field():
    vis = next(o for o in saved_objects() if o["id"] == "engram-recall-stages")
    state = json.loads(vis["attributes"]["visState"])
    state["aggs"][0]["params"]["field"] = "timings.nonexistent"
    broken = {**vis, "attributes": {**vis["attributes"], "visState": json.dumps(state)}}
    assert "timings.nonexistent" in referenced_fields(broken) - template_fields("recall-log")
    assert {"timings.embed", "timings.search", "timestamp"} <= template_fields("recall-log")
    assert {"content", "content.exact", "enrichment.status"} <= template_fields("memories")


def _docker_compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
    return probe.returncode == 0


def test_docker_compose_config_validates():
    if not _docker_compose_available():
        pytest.skip("docker with the compose plugin is not installed")
    result = subprocess.run(
        ["docker", "compose", "-f", "compose.yaml", "config", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
