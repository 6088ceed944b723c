"""Schema fuzzing of every operation: schemathesis against the app's own OpenAPI document.

    python -m bench.fuzz --cases 5000            # the long run (`make fuzz`), >= 5,000 cases
    python -m bench.fuzz --cases 500 --seed 3    # a quick look with another seed

Starts the service as its own process (`python -m service`, fresh INDEX_PREFIX `fuzz-<hex>` on
OPENSEARCH_URL or the local node `bench`, background enrichment on, so fuzzed memories go through
the worker too), stores a few memories whose ids and tags the generator mixes into path, query and
body values (so reads, updates and graph walks reach stored memories, not only 404s), then runs
every schemathesis phase: the schema's examples, coverage (boundary and negative values: out of
bound numbers, wrong types, missing required fields, unexpected methods), fuzzing (valid and
invalid data) and stateful sequences (store, then read / update / delete what was stored).

Checks on every response (CHECKS): no 5xx; the status is documented for the operation; the
content type and body conform to the documented schema; every error (4xx and 5xx) is exactly
{"status": "error", "code": <the status>, "message": <non-empty>} (on Hindsight's routes, Hindsight's
shapes: its 422 {"detail": [...]}, else that body with `detail` added; its reflect's documented 501). Afterwards the service log must
hold no ERROR line or traceback (a failure after the response, e.g. in access tracking or the
enrichment worker, shows nowhere else). Prints cases and statuses per operation and each distinct
failure with a curl reproduction; writes bench/out/fuzz.json. Exits 1 when anything failed.

The tests run the same harness with a small budget (tests/integration/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import schemathesis
from schemathesis import engine as st_engine
from schemathesis.engine import events

from bench.fuzz_inputs import (
    HEADER_PARAMETERS, HOSTILE_NUMBERS, HOSTILE_SHARE, HOSTILE_STRINGS, VALID_TIMES, VALID_TYPES, flatmap_body,
    sendable_in_header,
)

# Built-in schemathesis checks run on every response, plus no_server_error and error_shape below.
CHECKS = (
    "no_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance",
    "ignored_auth", "error_shape",
)
# How exactly the schema describes what is accepted (valid data accepted, invalid data refused).
# Informative (--schema-checks): the API clamps some values and accepts unknown fields by design.
SCHEMA_CHECKS = ("positive_data_acceptance", "negative_data_rejection")
ERROR_KEYS = {"status", "code", "message"}
HINDSIGHT_PATHS = ("/v1/",)
# Signet's routes (service/api/signet/): its {"error": "..."} beside the service's keys.
SIGNET_PATHS = ("/api/memory/", "/api/hooks/", "/memory/search", "/memory/similar")
STATEFUL_STEPS = 10  # requests per stateful sequence at most


def _documented(case) -> set[str]:
    return set(case.operation.definition.raw.get("responses", {}))


@schemathesis.check
def no_server_error(ctx, response, case) -> None:
    """No 5xx, except a 501 the operation documents (Hindsight's reflect: no language model here)."""
    status = response.status_code
    if status >= 500 and not (status == 501 and "501" in _documented(case)):
        raise AssertionError(f"server error {status}: {response.content[:300]!r}")
    return None


@schemathesis.check
def error_shape(ctx, response, case) -> None:
    """Every error answer is exactly {"status": "error", "code": <the HTTP status>, "message": "..."}.
    Hindsight's routes (HINDSIGHT_PATHS) answer in Hindsight's shapes, as its clients read them:
    FastAPI's 422 {"detail": [...]} for invalid input, and the service's error with `detail`
    (= `message`) added for everything else; Signet's (SIGNET_PATHS) add `error` (= `message`)."""
    if response.status_code < 400:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(
            f"{response.status_code} body is not JSON ({response.headers.get('content-type', ['?'])}): {response.content[:200]!r}"
        ) from None
    if case.operation.path.startswith(HINDSIGHT_PATHS) and isinstance(body, dict):
        if response.status_code == 422:
            if set(body) != {"detail"} or not isinstance(body["detail"], list) or not body["detail"]:
                raise AssertionError(f"422 body is not Hindsight's {{'detail': [...]}}: {str(body)[:300]}")
            return None
        if body.get("detail", body.get("message")) != body.get("message"):  # 405s come from the app, without it
            raise AssertionError(f"{response.status_code} body's detail is not its message: {str(body)[:300]}")
        body = {k: v for k, v in body.items() if k != "detail"}
    if case.operation.path.startswith(SIGNET_PATHS) and isinstance(body, dict):
        if body.get("error", body.get("message")) != body.get("message"):  # 405s come from the app, without it
            raise AssertionError(f"{response.status_code} body's error is not its message: {str(body)[:300]}")
        body = {k: v for k, v in body.items() if k != "error"}
    if isinstance(body, dict) and response.status_code >= 500:  # a 5xx names its request id too
        body = {k: v for k, v in body.items() if k != "request_id"}
    if not isinstance(body, dict) or set(body) != ERROR_KEYS:
        raise AssertionError(f"{response.status_code} body is not exactly {sorted(ERROR_KEYS)}: {str(body)[:300]}")
    if body["status"] != "error" or body["code"] != response.status_code:
        raise AssertionError(f"{response.status_code} body has status={body['status']!r} code={body['code']!r}")
    if not isinstance(body["message"], str) or not body["message"].strip():
        raise AssertionError(f"{response.status_code} body has no message: {body!r}")
    return None


@dataclass
class Finding:
    check: str
    operation: str
    title: str
    message: str
    status: int | None
    reproduce: str  # a curl command line

    def line(self, width: int = 600) -> str:
        curl = self.reproduce if len(self.reproduce) <= width else self.reproduce[:width] + f"... ({len(self.reproduce)} chars)"
        return f"[{self.check}] {self.operation} -> {self.status}: {self.title}\n    {self.message[:400]}\n    {curl}"


@dataclass
class FuzzReport:
    seconds: float = 0.0
    cases: Counter = field(default_factory=Counter)  # operation -> requests sent
    phases: Counter = field(default_factory=Counter)  # phase -> requests sent
    elapsed: Counter = field(default_factory=Counter)  # operation -> seconds spent in its responses
    statuses: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # operation -> status -> n
    # operation -> the start of each 400 message -> n: shows which validation stops generated data
    rejections: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    failures: list[Finding] = field(default_factory=list)  # distinct (check, operation, title, status)
    errors: list[str] = field(default_factory=list)  # the fuzzer's own errors (a test that could not run)

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def summary(self) -> str:
        lines = [f"{self.total} cases over {len(self.cases)} operations in {self.seconds:.0f} s; by phase: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(self.phases.items()))]
        width = max((len(op) for op in self.cases), default=10)
        for op in sorted(self.cases):
            codes = " ".join(f"{code}x{n}" for code, n in sorted(self.statuses[op].items(), key=lambda kv: str(kv[0])))
            lines.append(f"  {op:<{width}}  {self.cases[op]:>6} {self.elapsed[op]:>7.1f} s  {codes}")
        seen = Counter()
        for counter in self.statuses.values():
            seen.update(counter)
        lines.append("statuses seen: " + ", ".join(f"{k}: {v}" for k, v in sorted(seen.items(), key=lambda kv: str(kv[0]))))
        lines.append(f"failures: {len(self.failures)} distinct")
        lines += [f.line() for f in self.failures]
        lines += [f"fuzzer error: {e}" for e in self.errors]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "seconds": round(self.seconds, 1), "total": self.total, "cases": dict(self.cases), "phases": dict(self.phases),
            "elapsed": {op: round(v, 2) for op, v in self.elapsed.items()},
            "statuses": {op: {str(k): v for k, v in c.items()} for op, c in self.statuses.items()},
            "rejections": {op: dict(c.most_common(40)) for op, c in self.rejections.items()},
            "failures": [asdict(f) for f in self.failures], "errors": self.errors,
        }


STREAM_READ_SECONDS = 1.0  # how long each case reads GET /stream before it counts as cut short


def fuzz_config(base_url: str, *, token: str, admin_token: str, max_examples: int, seed: int,
                ids: list[str] = (), tags: list[str] = (), checks: tuple[str, ...] = CHECKS) -> schemathesis.Config:
    """Every phase, valid and invalid data, derandomized; the API and admin tokens on every request
    (the fuzzer also generates the other token parameters, X-API-Key and ?api_key=, and strips them
    for its auth checks). Known ids and tags are mixed in with half the probability."""
    parameters: dict[str, Any] = {}
    dictionaries: dict[str, Any] = {
        "hostile-strings": {"values": HOSTILE_STRINGS}, "hostile-numbers": {"values": HOSTILE_NUMBERS},
        "hostile-headers": {"values": [v for v in HOSTILE_STRINGS if sendable_in_header(v)]},
    }
    for name in HEADER_PARAMETERS:
        parameters[f"header.{name}"] = {"dictionary": "hostile-headers", "probability": HOSTILE_SHARE}
    hostile = {"string": {"dictionary": "hostile-strings", "probability": HOSTILE_SHARE},
               "number": {"dictionary": "hostile-numbers", "probability": HOSTILE_SHARE},
               "integer": {"dictionary": "hostile-numbers", "probability": HOSTILE_SHARE}}
    if ids:
        dictionaries["memory-ids"] = {"values": list(ids)}
        for key in ("path.memory_id", "body.memory1_id", "body.memory2_id", "body.supersedes", "body.id"):
            parameters[key] = {"dictionary": "memory-ids", "probability": 0.5}
    # Valid values for the fields that most often make a generated body invalid, so that more
    # bodies get past them and the hostile values elsewhere in them reach the deeper checks.
    dictionaries["valid-types"] = {"values": VALID_TYPES}
    dictionaries["valid-times"] = {"values": VALID_TIMES}
    for prefix in ("body.", "body.memories[*]."):
        parameters[f"{prefix}type"] = {"dictionary": "valid-types", "probability": 0.7}
        for name in ("timestamp", "t_valid", "t_invalid", "updated_at", "last_accessed"):
            parameters[f"{prefix}{name}"] = {"dictionary": "valid-times", "probability": 0.7}
    if tags:
        dictionaries["tags"] = {"values": list(tags)}
        parameters["query.tags"] = {"dictionary": "tags", "probability": 0.5}
    return schemathesis.Config.from_dict({
        "base-url": base_url,
        "seed": seed,
        "headers": {"Authorization": f"Bearer {token}", "X-Admin-Token": admin_token},
        "generation": {"mode": "all", "max-examples": max_examples, "deterministic": True, "dictionaries": hostile},
        # Stateful sequences (store, then read / update / delete / link what was stored): a tenth of
        # the budget, each up to STATEFUL_STEPS requests long.
        "phases": {"stateful": {"max-steps": STATEFUL_STEPS, "generation": {"max-examples": max(3, max_examples // 10)}}},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in checks}},
        "continue-on-failure": True,
        "workers": 1,
        "request-timeout": 60,
        "suppress-health-check": ["all"],
        "output": {"sanitization": {"enabled": False}},  # reproductions carry the (test) tokens
        "dictionaries": dictionaries,
        "parameters": parameters,
        # An event stream never ends: the fuzzer reads it until the timeout, so /stream (quiet until
        # an event or its 30 s keepalive) would hold each case for the whole 60 s.
        "operations": [{"include-name": "GET /stream", "request-timeout": STREAM_READ_SECONDS}],
    })


def run(openapi: dict, config: schemathesis.Config) -> FuzzReport:
    """Run every phase over every operation of `openapi`; collect cases, statuses and distinct failures."""
    report = FuzzReport()
    schema = schemathesis.openapi.from_dict(copy.deepcopy(openapi), config=config)
    schema.hook(flatmap_body)
    started = time.monotonic()
    seen: set[tuple] = set()
    for event in st_engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            _record(report, event, seen)
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {type(event.value).__name__}: {str(event.value)[:500]}")
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {type(event.exception).__name__}: {event.exception}")
    report.seconds = time.monotonic() - started
    return report


def _record(report: FuzzReport, event: events.ScenarioFinished, seen: set[tuple]) -> None:
    recorder = event.recorder
    for case_id, interaction in recorder.interactions.items():
        node = recorder.cases.get(case_id)
        operation = node.value.operation.label if node is not None else recorder.label
        report.cases[operation] += 1
        report.phases[event.phase.value] += 1
        status = interaction.response.status_code if interaction.response is not None else "no response"
        report.statuses[operation][status] += 1
        if interaction.response is not None:
            report.elapsed[operation] += interaction.response.elapsed
        if status == 400:
            report.rejections[operation][_message_kind(interaction.response.content)] += 1
    for case_id, checks in recorder.checks.items():
        for check in checks:
            if check.status.value != "failure" or check.failure_info is None:
                continue
            node = recorder.cases.get(case_id)
            operation = node.value.operation.label if node is not None else recorder.label
            interaction = recorder.interactions.get(case_id)
            status = interaction.response.status_code if interaction is not None and interaction.response is not None else None
            failure = check.failure_info.failure
            key = (check.name, operation, failure.title, status)
            if key in seen:
                continue
            seen.add(key)
            report.failures.append(Finding(check.name, operation, failure.title, failure.message or "", status,
                                           check.failure_info.code_sample))


def _message_kind(content: bytes) -> str:
    try:
        message = str(json.loads(content).get("message", ""))
    except (ValueError, AttributeError):
        return "(not a JSON object)"
    return message.split("'")[0][:70]


def seed_memories(base_url: str, token: str) -> tuple[list[str], list[str]]:
    """A few stored memories (plain and odd-but-valid: long tags, deep metadata, emoji, RTL text) and
    one edge, so generated requests can reach existing memories. Returns (ids, tags)."""
    import httpx

    tags = ["fuzz", "fuzz:deep:tag", "t" * 200, "ünïcödé", "emoji-🙂"]
    deep: dict = {"leaf": 1}
    for _ in range(30):
        deep = {"n": deep}
    bodies = [
        {"content": "We chose PostgreSQL for the primary database.", "tags": ["fuzz", "fuzz:deep:tag"], "importance": 0.9},
        {"content": "Deploys happen on Tuesdays after the review 🚀", "tags": ["emoji-🙂", "ünïcödé"], "type": "Habit"},
        {"content": "שלום עולם — mixed RTL text and NUL-free control chars \t\n", "tags": ["t" * 200], "metadata": deep},
        {"content": "x" * 2000, "tags": tags, "metadata": {"k" * 100: ["v"] * 50}, "t_valid": "2020-01-01T00:00:00Z",
         "t_invalid": "2030-01-01T00:00:00Z"},
        {"id": "fuzz-known-1", "content": "A memory with a client id", "tags": ["fuzz"], "type": "Decision"},
    ]
    ids = []
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        for body in bodies:
            resp = http.post("/memory", json=body)
            resp.raise_for_status()
            ids.append(resp.json()["memory_id"])
        http.post("/associate", json={"memory1_id": ids[0], "memory2_id": ids[1], "type": "RELATES_TO", "strength": 0.7}).raise_for_status()
    return ids, tags


def log_problems(text: str) -> list[str]:
    """ERROR / CRITICAL lines and tracebacks in a service log."""
    return [line for line in text.splitlines() if " ERROR " in line or "CRITICAL" in line or line.startswith("Traceback")
            or line.startswith("ERROR:")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000, help="at least this many cases in all (default 5000)")
    parser.add_argument("--seed", type=int, default=1, help="schemathesis / hypothesis seed (default 1)")
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL"), help="OpenSearch (default OPENSEARCH_URL or the local node `bench`)")
    parser.add_argument("--schema-checks", action="store_true", help=f"also run {', '.join(SCHEMA_CHECKS)}")
    parser.add_argument("--no-enrichment", action="store_true", help="run the service without the enrichment worker")
    args = parser.parse_args(argv)

    from opensearchpy import OpenSearch

    from bench import corpus as C
    from bench.serving import OUT, TOKEN, ServiceProcess
    from service.config import Settings
    from service.main import create_app

    OUT.mkdir(parents=True, exist_ok=True)
    url = C.node_url(args.url)
    prefix = f"fuzz-{uuid.uuid4().hex[:8]}"
    admin = "fuzz-admin-token"
    env = {"ADMIN_API_TOKEN": admin, "WRITE_REFRESH": "true", "ENRICHMENT_ENABLED": "false" if args.no_enrichment else "true"}
    openapi = create_app(Settings(automem_api_token=TOKEN, admin_api_token=admin, opensearch_url=url, index_prefix=prefix)).openapi()
    operations = sum(len(methods) for methods in openapi["paths"].values())
    # The coverage phase adds a fixed set of boundary cases; fuzzing and stateful get max_examples each.
    max_examples = max(5, math.ceil(args.cases / (operations + 1)))
    print(f"fuzzing {operations} operations, up to {max_examples} generated cases each (+ coverage, stateful), seed {args.seed}", flush=True)
    engine = OpenSearch([url], timeout=60)
    service = ServiceProcess(url, prefix, env=env)
    try:
        with service as base:
            ids, tags = seed_memories(base, TOKEN)
            report = run(openapi, fuzz_config(base, token=TOKEN, admin_token=admin, max_examples=max_examples, seed=args.seed, ids=ids, tags=tags,
                                          checks=CHECKS + (SCHEMA_CHECKS if args.schema_checks else ())))
            service.log.flush()
            problems = log_problems(open(service.log.name, encoding="utf-8", errors="replace").read())
            if problems:
                kept = OUT / f"fuzz-service-{prefix}.log"
                kept.write_bytes(open(service.log.name, "rb").read())
                report.errors.append(f"{len(problems)} ERROR lines / tracebacks in the service log (kept in {kept}); first: {problems[0][:300]}")
    finally:
        C.drop_prefix(engine, prefix)
        engine.close()
    print(report.summary())
    (OUT / "fuzz.json").write_text(json.dumps({"seed": args.seed, "max_examples": max_examples, **report.as_dict()}, indent=2, default=str))
    if report.total < args.cases:
        print(f"only {report.total} cases were generated (asked for {args.cases}); raise --cases", file=sys.stderr)
    return 1 if report.failures or report.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
