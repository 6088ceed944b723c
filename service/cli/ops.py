"""`engram serve | mcp | token | engine | snapshot | dashboards | bench`: running and operating Engram."""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from service.cli.common import JsonOpt, PrefixOpt, UrlOpt, emit, fail, reported, settings_from
from service.paths import package_folder

# bench/ is not part of the installed package: `engram bench` runs from a checkout.
ROOT = Path(__file__).resolve().parent.parent.parent
# `engram bench NAME`: the benchmark modules (bench/*.py), each with its own --help.
BENCHES = {
    "locomo": "recall quality on the LoCoMo dev slice",
    "tune-locomo": "re-score LoCoMo candidates offline to compare scoring variants",
    "latency": "recall latency against the bare engine at 10k / 100k memories",
    "ingest": "memories/s through POST /memory/batch and the importer",
    "embedder": "embedding backends: throughput, latency, agreement",
    "corpus": "generate (and load) a synthetic memory corpus",
    "lifecycle": "backup, restore, import and export throughput; live writes during an import",
    "observability": "what metrics and the recall log cost per request (needs --url)",
    "signet": "Signet's recall surface and session dedupe vs GET /recall",
    "cluster": "three local nodes, one killed under 50 clients: failed requests and lost writes",
    "backfill": "the start-up backfill of recall's doc-value fields on an upgraded store: memories/s",
}
PASS_THROUGH = {"context_settings": {"allow_extra_args": True, "ignore_unknown_options": True}, "add_help_option": False}

engine = typer.Typer(help="Build, start, stop or inspect the local OpenSearch node (used when OPENSEARCH_URL is not set).", no_args_is_help=True)
snapshot = typer.Typer(help="OpenSearch snapshots of the store's indices: the route for large stores (incremental, vectors included).", no_args_is_help=True)
dashboards = typer.Typer(help="OpenSearch Dashboards saved objects (index patterns, searches, visualizations).", no_args_is_help=True)


def passthrough(module: str, prog: str):
    """A command that hands its arguments to `module.main(argv, prog)` (a tool with its own parser;
    imported when run, so `engram --help` stays fast and the CLI does not import the server)."""

    def command(ctx: typer.Context) -> None:
        raise typer.Exit(int(importlib.import_module(module).main(list(ctx.args), prog=prog) or 0))

    return command


def register(app: typer.Typer) -> None:
    app.command("serve", **PASS_THROUGH, help="Run the API (HOST/PORT and all settings from the environment; --help for options).")(
        passthrough("service.__main__", "engram serve"))
    app.command("mcp", **PASS_THROUGH, help="Run the MCP server for agents, over stdio (default) or --http; --help for options.")(
        passthrough("service.mcp.__main__", "engram mcp"))
    app.command("token", **PASS_THROUGH, help="Tokens for ENGRAM_TOKENS_FILE: `engram token new` (a random token and its "
                "sha256), `engram token hash` (the sha256 of a token read from stdin).")(passthrough("service.auth.tokens", "engram token"))
    app.add_typer(engine, name="engine")
    app.add_typer(snapshot, name="snapshot")
    app.add_typer(dashboards, name="dashboards")
    app.command("bench", **PASS_THROUGH, help="Run a benchmark: " + "; ".join(f"{k} ({v})" for k, v in BENCHES.items())
                + ". `engram bench NAME --help` for its options.")(bench)


def bench(ctx: typer.Context) -> None:
    args = list(ctx.args)
    if not args or args[0] in ("-h", "--help") or args[0] not in BENCHES:
        known = "\n".join(f"  {k:12s} {v}" for k, v in BENCHES.items())
        print(f"usage: engram bench NAME [ARGS...]\n\nbenchmarks:\n{known}", file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
        if args and args[0] not in ("-h", "--help"):
            raise fail(f"unknown benchmark {args[0]!r}")
        raise typer.Exit(0 if args else 2)
    if not (ROOT / "bench").is_dir():
        raise fail("the benchmarks (bench/) are not installed with the package: run `engram bench` from a checkout")
    if str(ROOT) not in sys.path:  # bench/ is not installed as a package: it lives next to service/
        sys.path.insert(0, str(ROOT))
    module = importlib.import_module(f"bench.{args[0].replace('-', '_')}")
    raise typer.Exit(int(module.main(args[1:]) or 0))


# --- engine ------------------------------------------------------------------------------------------
NameOpt = Annotated[str, typer.Option("--name", envvar="ENGRAM_NODE_NAME", help="node folder name")]


@engine.command("start")
@reported
def engine_start(
    name: NameOpt = "dev",
    port: Annotated[int | None, typer.Option("--port", envvar="ENGRAM_NODE_PORT", help="HTTP port (default: 9200 if free, else any)", show_default=False)] = None,
    heap: Annotated[str, typer.Option("--heap", envvar="ENGRAM_NODE_HEAP", help="JVM heap")] = "1g",
) -> None:
    """Start (or reuse) the node and print its URL."""
    from service.engine.local_node import local_node

    node = local_node(name, port, heap)
    started = time.monotonic()
    print(node.start())
    print(f"healthy after {time.monotonic() - started:.1f} s (log: {node.log_file}; snapshots: {node.snapshot_dir})", file=sys.stderr)


@engine.command("stop")
@reported
def engine_stop(name: NameOpt = "dev") -> None:
    """Stop the node (its data stays)."""
    from service.engine.local_node import LocalNode

    print("stopped" if LocalNode(name).stop() else "not running")


@engine.command("status")
def engine_status(name: NameOpt = "dev") -> None:
    """Whether the node runs, and where (exit status 0 when it runs, 1 when it does not)."""
    from service.engine.local_node import LocalNode

    node = LocalNode(name)
    if not node.running():
        print("not running")
        raise typer.Exit(1)
    print(f"running at {node.url}")


@engine.command("build")
@reported
def engine_build() -> None:
    """Build the engine from Maven Central artifacts (done by start when needed)."""
    from service.engine.local_node import build_engine

    print(build_engine())


@engine.command("wipe")
@reported
def engine_wipe(name: NameOpt = "dev", yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False) -> None:
    """Stop the node and delete its folder: data, logs and snapshots."""
    from service.engine.local_node import LocalNode

    node = LocalNode(name)
    if not yes:
        typer.confirm(f"delete {node.folder} (all its memories)?", abort=True)
    node.wipe()
    print(f"removed {node.folder}")


# --- snapshots -----------------------------------------------------------------------------------------
RepoOpt = Annotated[str, typer.Option("--repo", help="snapshot repository name")]
LocationOpt = Annotated[str | None, typer.Option(
    "--location", help="repository folder on the engine's machine, under its path.repo (default: the local node's snapshots folder)", show_default=False)]


def _snapshot_target(url: str | None, prefix: str | None, repo: str, location: str | None):
    from service.admin import snapshots
    from service.admin.jobs import connect
    from service.engine.local_node import LocalNode

    settings = settings_from(url, prefix)
    if location is None and not settings.opensearch_url:
        location = str(LocalNode(settings.local_node_name).snapshot_dir)
    client = connect(settings)
    snapshots.ensure_repository(client, repo, location)
    return settings, client


@snapshot.command("create")
@reported
def snapshot_create(
    name: Annotated[str | None, typer.Argument(help="snapshot name (default: <prefix>-<UTC time>)", show_default=False)] = None,
    repo: RepoOpt = "engram", location: LocationOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, as_json: JsonOpt = False,
) -> None:
    """Snapshot the memories and edges indices (waits until done)."""
    from service.admin import snapshots

    settings, client = _snapshot_target(url, prefix, repo, location)
    info = snapshots.create(client, repo, name or snapshots.default_name(settings.index_prefix),
                            snapshots.store_indices(client, [settings.memories_alias, settings.edges_alias]))
    emit(info.__dict__, as_json, f"snapshot {info.name} in {repo}: {', '.join(info.indices)} ({info.state})")


@snapshot.command("list")
@reported
def snapshot_list(repo: RepoOpt = "engram", location: LocationOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, as_json: JsonOpt = False) -> None:
    """The repository's snapshots, oldest first."""
    from service.admin import snapshots

    _, client = _snapshot_target(url, prefix, repo, location)
    found = snapshots.list_snapshots(client, repo)
    if as_json:
        print(json.dumps([s.__dict__ for s in found]))
        return
    for s in found:
        print(f"{s.name}\t{s.state}\t{s.started or ''}\t{','.join(s.indices)}")
    if not found:
        print(f"no snapshots in {repo}", file=sys.stderr)


@snapshot.command("restore")
@reported
def snapshot_restore(
    name: Annotated[str, typer.Argument(help="snapshot name (see `engram snapshot list`)")],
    replace: Annotated[bool, typer.Option("--replace", help="overwrite indices of the same names (stop the service first)")] = False,
    repo: RepoOpt = "engram", location: LocationOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None,
) -> None:
    """Bring the store's indices back as they were in the snapshot."""
    from service.admin import snapshots

    settings, client = _snapshot_target(url, prefix, repo, location)
    restored = snapshots.restore(client, repo, name, [settings.memories_alias, settings.edges_alias], replace=replace)
    print(f"restored {', '.join(restored)} from {repo}/{name}")


@snapshot.command("delete")
@reported
def snapshot_delete(name: Annotated[str, typer.Argument(help="snapshot name")], repo: RepoOpt = "engram", location: LocationOpt = None,
                    url: UrlOpt = None, prefix: PrefixOpt = None) -> None:
    """Delete one snapshot (the files only other snapshots need stay)."""
    from service.admin import snapshots

    _, client = _snapshot_target(url, prefix, repo, location)
    snapshots.delete(client, repo, name)
    print(f"deleted {repo}/{name}")


# --- dashboards ------------------------------------------------------------------------------------------
@dashboards.command("install")
@reported
def dashboards_install(
    url: Annotated[str, typer.Option("--url", help="OpenSearch Dashboards URL, e.g. http://127.0.0.1:5601")],
    user: Annotated[str | None, typer.Option("--user", envvar="OPENSEARCH_USER", help="basic-auth user", show_default=False)] = None,
    password: Annotated[str | None, typer.Option("--password", envvar="OPENSEARCH_PASSWORD", help="basic-auth password", show_default=False)] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite/--no-overwrite", help="replace objects of the same ids")] = True,
) -> None:
    """Load the saved objects shipped in index_templates/dashboards/ through the saved-objects import API."""
    import httpx

    from service.config import url_problem

    problem = url_problem(url) if "," not in url else "one URL, not a list"
    if problem:
        raise fail(f"--url {url!r} is malformed ({problem}); expected e.g. http://127.0.0.1:5601")
    folder = package_folder("index_templates", "dashboards")
    files = sorted(folder.glob("*.ndjson"))
    if not files:
        raise fail(f"no saved objects in {folder}")
    auth = (user, password or "") if user else None
    failed = 0
    for path in files:
        try:
            resp = httpx.post(f"{url.rstrip('/')}/api/saved_objects/_import", params={"overwrite": str(overwrite).lower()},
                              headers={"osd-xsrf": "true"}, files={"file": (path.name, path.read_bytes(), "application/ndjson")},
                              auth=auth, timeout=60)
        except httpx.HTTPError as exc:
            raise fail(f"cannot reach OpenSearch Dashboards at {url}: {exc}") from None
        body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {"message": resp.text}
        if resp.status_code >= 400 or not body.get("success"):
            failed += 1
            print(f"{path.name}: FAILED ({resp.status_code}) {body.get('message') or body.get('errors')}", file=sys.stderr)
        else:
            print(f"{path.name}: {body.get('successCount', 0)} objects imported")
    if failed:
        raise typer.Exit(1)
