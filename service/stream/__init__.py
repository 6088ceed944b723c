"""The event stream (spec 003: Stream): an in-process bus (`bus`), event and log payloads
(`payloads`), and the per-request emitter routes call after a successful operation (`emit`)."""

from service.stream.bus import EventBus

__all__ = ["EventBus"]
