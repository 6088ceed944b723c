"""The `engram` command: help everywhere, unknown commands named, backup / restore / reembed against a
running service (--api) as well as the engine, snapshots on a node of its own, Dashboards objects."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from service.cli.main import main
from service.cli.ops import ROOT
from tests.conftest import ADMIN, TOKEN
from tests.integration.admin_support import export_bytes, members, populate, wipe
from tests.integration.support import fast_api

NDJSON = ROOT / "index_templates" / "dashboards" / "engram.ndjson"
COMMANDS = [[], ["import"], ["export"], ["backup"], ["restore"], ["reembed"], ["reenrich"], ["serve"], ["engine"], ["engine", "start"],
            ["snapshot"], ["snapshot", "create"], ["snapshot", "restore"], ["snapshot", "list"], ["dashboards", "install"], ["bench"]]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "engram")
def test_help_everywhere(words, capsys):
    assert main([*words, "--help"]) == 0
    assert "usage" in capsys.readouterr().out.lower()


def test_unknown_commands_say_so(capsys):
    assert main(["frobnicate"]) == 2
    assert "No such command 'frobnicate'" in capsys.readouterr().err
    assert main(["snapshot", "explode"]) == 2
    assert main(["bench", "nosuch"]) == 2
    assert "unknown benchmark 'nosuch'" in capsys.readouterr().err


def test_backup_and_restore_against_the_engine(make_client, os_client, tmp_path, capsys):
    api = fast_api(make_client)
    populate(api)
    before = export_bytes(api)
    s = api.app.state.settings
    engine = ["--url", s.opensearch_url, "--prefix", s.index_prefix]
    assert main(["backup", *engine, "-o", str(tmp_path), "--no-progress"]) == 0
    (archive,) = list(tmp_path.glob("automem-backup-*.tar.gz"))
    assert sorted(n.split("/")[0] for n in members(archive.read_bytes())) == ["falkordb", "manifest.json", "qdrant"]
    wipe(api, os_client)
    capsys.readouterr()
    assert main(["restore", str(archive), *engine, "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"]["restored"] == 6
    assert export_bytes(api) == before


@pytest.fixture
def live_service(make_client):
    """The app served by uvicorn on a free port (the --api commands speak real HTTP)."""
    import uvicorn

    api = fast_api(make_client)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield api, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_backup_restore_reembed_through_a_running_service(live_service, os_client, tmp_path, capsys, monkeypatch):
    api, url = live_service
    populate(api)
    before = export_bytes(api)
    monkeypatch.setenv("AUTOMEM_API_TOKEN", TOKEN)
    monkeypatch.setenv("ADMIN_API_TOKEN", ADMIN)
    target = tmp_path / "b.tar.gz"
    assert main(["backup", "--api", url, "-o", str(target), "--include", "falkordb,qdrant"]) == 0
    assert target.stat().st_size > 0
    wipe(api, os_client)
    capsys.readouterr()
    assert main(["restore", str(target), "--api", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == {"restored": 6, "failed": 0, "vectors_reused": 6, "reembedded": 0,
                                                               "duplicates": 0, "vectors_unusable": 0}
    assert export_bytes(api) == before
    assert main(["reembed", "--api", url, "--json", "--limit", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1  # only the memory stored with a client's vector
    assert main(["backup", "--api", url, "--admin-token", "wrong", "-o", str(tmp_path / "x.tar.gz")]) == 2
    assert "403" in capsys.readouterr().err


def test_dashboards_install_posts_every_saved_objects_file(capsys):
    received: list[dict] = []

    class Dashboards(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "xsrf": self.headers.get("osd-xsrf"), "type": self.headers.get("Content-Type"), "body": body})
            count = len(NDJSON.read_text().splitlines())  # what Dashboards answers: one per object
            out = json.dumps({"success": True, "successCount": count}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Dashboards)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert main(["dashboards", "install", "--url", f"http://127.0.0.1:{server.server_port}"]) == 0
    finally:
        server.shutdown()
    (request,) = received
    assert request["path"] == "/api/saved_objects/_import?overwrite=true" and request["xsrf"] == "true"
    assert request["type"].startswith("multipart/form-data") and b'filename="engram.ndjson"' in request["body"]
    assert b'"id":"engram-memories"' in request["body"]
    assert f"engram.ndjson: {len(NDJSON.read_text().splitlines())} objects imported" in capsys.readouterr().out
    assert main(["dashboards", "install", "--url", "http://127.0.0.1:9"]) == 2  # nothing listens there


@pytest.mark.skipif(shutil.which("java") is None, reason="the local node needs java")
def test_snapshot_create_list_restore_on_a_node_of_its_own(embedder, capsys):
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.engine.local_node import LocalNode
    from service.main import create_app

    node = LocalNode(f"snapshots-{os.getpid()}", heap="512m")
    node.wipe()
    try:
        url = node.start()
        assert "path.repo" in (node.folder / "opensearch.yml").read_text()
        settings = Settings(opensearch_url=url, automem_api_token=TOKEN, index_prefix="snap", write_refresh="true")
        with TestClient(create_app(settings, embedder=embedder), headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            keep = api.post("/memory", json={"content": "kept by the snapshot"}).json()["memory_id"]
            engine = ["--url", url, "--prefix", "snap", "--location", str(node.snapshot_dir)]
            assert main(["snapshot", "create", "first", *engine]) == 0
            assert api.delete(f"/memory/{keep}").status_code == 200
            capsys.readouterr()
            assert main(["snapshot", "list", *engine, "--json"]) == 0
            listed = json.loads(capsys.readouterr().out)
            assert [(s["name"], s["state"], sorted(s["indices"])) for s in listed] == [("first", "SUCCESS", ["snap-edges-v1", "snap-memories-v1"])]
            assert main(["snapshot", "restore", "first", *engine]) == 2  # the indices exist: --replace needed
            assert "--replace" in capsys.readouterr().err
            assert main(["snapshot", "restore", "first", *engine, "--replace"]) == 0
            assert api.get(f"/memory/{keep}").json()["memory"]["content"] == "kept by the snapshot"
            assert api.post("/memory", json={"content": "writable after the restore"}).status_code == 201
    finally:
        node.wipe()
