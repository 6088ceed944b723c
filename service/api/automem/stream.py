"""GET /stream (authenticated SSE of in-process memory operations) and GET /stream/status (spec 003)."""

from __future__ import annotations

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from service.api.deps import ApiAuth, EventsDep, SettingsDep
from service.api.scope import CallerScope
from service.api.error_docs import ERROR_RESPONSES

router = APIRouter(dependencies=[ApiAuth], responses=ERROR_RESPONSES, tags=["stream"])

# AutoMem's SSE framing: "data: {json}\n\n", keepalive comments ": keepalive\n\n".
SEP = "\n"


def _keepalive() -> ServerSentEvent:
    return ServerSentEvent(comment="keepalive", sep=SEP)


@router.get("/stream", response_class=EventSourceResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def stream(caller: CallerScope, events_bus: EventsDep, settings: SettingsDep) -> EventSourceResponse:
    """Every event is `data: {"type", "timestamp", "data"}`; a comment `: keepalive` follows every
    STREAM_KEEPALIVE_SECONDS (30). A client that falls STREAM_QUEUE_SIZE (100) events behind is dropped.
    A token scoped to banks (ENGRAM_TOKENS_FILE) sees only those banks' events."""
    subscriber = events_bus.subscribe(banks=caller.banks)

    async def events():
        async for payload in subscriber.events():
            yield ServerSentEvent(data=payload, sep=SEP)

    keepalive = settings.stream_keepalive_seconds
    return EventSourceResponse(
        events(), ping=keepalive, sep=SEP, ping_message_factory=_keepalive,
        # A client that stops reading also stops the socket: give up on it rather than hold a task forever.
        send_timeout=max(keepalive, 30.0),
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/stream/status")
async def stream_status(caller: CallerScope, events_bus: EventsDep) -> dict:
    """{"subscribers": N}: the clients connected to /stream now (a count, of every bank's)."""
    return {"subscribers": events_bus.subscriber_count}
