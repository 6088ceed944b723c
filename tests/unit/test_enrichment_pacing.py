"""Clients first: when the API counts as serving, and how long the enrichment worker rests then."""

from __future__ import annotations

import pytest

from service.enrichment.pacing import ACTIVE_WINDOW_SECONDS, Foreground, pause_after

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_request_makes_the_api_active_for_a_second():
    clock = Clock()
    fg = Foreground(clock)
    assert not fg.active()  # nothing served yet
    fg.touch("/recall")
    assert fg.active()
    clock.now += ACTIVE_WINDOW_SECONDS - 0.01
    assert fg.active()
    clock.now += 0.02
    assert not fg.active()


@pytest.mark.parametrize("path", ["/health", "/ready", "/metrics"])
def test_probes_are_not_clients(path):
    fg = Foreground(Clock())
    fg.touch(path)
    assert not fg.active()


@pytest.mark.parametrize(("took", "duty", "rest"), [
    (0.2, 1.0, 0.0),  # full speed
    (0.2, 0.5, 0.2),  # half the time working
    (0.2, 0.25, 0.6),
    (0.0, 0.5, 0.0),
])
def test_the_rest_after_a_batch_keeps_work_at_its_duty(took, duty, rest):
    assert pause_after(took, duty) == pytest.approx(rest)
    if took and duty < 1:
        assert took / (took + pause_after(took, duty)) == pytest.approx(duty)
