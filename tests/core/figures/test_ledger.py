"""The ledger's page, block and session figures (core.figures.ledger), from records alone."""

from __future__ import annotations

from core.figures.ledger import response_figures, session_figures


def test_pages_blocks_renders_and_refusals_are_counted_from_the_records() -> None:
    records = {
        "a:0.0.0": "challenge",  # challenged, then passed in the browser and fetched
        "a:0.0.0:b": "ok:r",
        "a:0.0.1": "ok",
        "b:0.0.0": "captcha",  # refused for good: every answer a block
        "b:0.0.1": "blocked",
        "c:0.0.0": "throttled",  # throttled once, then fine
        "c:0.0.1": "ok",
        "d:0.0.0": "error",  # a 404 is an answer, not a refusal
        "r:0.0.0:robots": "blocked",  # robots.txt refused: a block, not a page
    }
    assert response_figures(records) == {
        "blocks/blocked": 2,
        "blocks/challenge": 1,
        "blocks/captcha": 1,
        "blocks/throttled": 1,
        "blocks/total": 5,
        "pages/total": 8,
        "pages/rendered": 1,
        "pages/requests": 4,
        "pages/refused": 1,
    }
    assert response_figures({})["pages/refused"] == 0


def test_session_events_are_counted_once_per_event() -> None:
    events = ["created:s1", "created:s2", "passed:s1:1", "passed:s1:2", "retired:s2"]
    assert session_figures(events) == {
        "sessions/created": 2,
        "sessions/retired": 1,
        "sessions/challenges_passed": 2,
    }
