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
    assert titles == {f"{settings.memories_alias}*", f"{settings.edges_alias}*"}
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


def test_ndjson_visualized_fields_exist_in_the_templates():
    """Every field a visualization aggregates on is a mapped field of its index."""
    mappings = {
        "engram-memories": json.loads((ROOT / "index_templates" / "memories.json").read_text()),
        "engram-edges": json.loads((ROOT / "index_templates" / "edges.json").read_text()),
    }
    visualizations = [o for o in saved_objects() if o["type"] == "visualization"]
    assert len(visualizations) >= 2
    for vis in visualizations:
        index_id = vis["references"][0]["id"]
        properties = mappings[index_id]["template"]["mappings"]["properties"]
        for agg in json.loads(vis["attributes"]["visState"])["aggs"]:
            field = agg["params"].get("field")
            if field:
                assert field in properties, f"{vis['id']}: {field} is not mapped in {index_id}"


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
