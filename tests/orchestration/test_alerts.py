"""Slack alerts: the real slack-sdk client posting to a local webhook receiver; an alert
Slack does not take is logged once, recorded, and reported by the health check."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from core.config import PlatformSettings
from core.keys import PlatformKeys
from harness.base import free_port
from harness.redis_server import RedisServer
from harness.slack_receiver import WEBHOOK_PATH, SlackReceiver
from orchestration import health
from orchestration.alerts import (
    AlertDeliveryError,
    Delivery,
    SlackNotifier,
    failed_deliveries,
    notify,
    render,
)
from tests.orchestration.test_slack_templates import summary

SUMMARY = summary()


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[SlackReceiver]:
    with SlackReceiver(run_dir=tmp_path) as server:
        yield server


def test_job_summary_template_carries_the_figures() -> None:
    text = render("job_summary", **SUMMARY)
    assert "*1200*" in text and "new 24" in text and "changed 60" in text
    assert "block rate: 1.25%" in text and "2m 0s" in text
    assert "Nova Dog Bed" in text and "and 22 more" in text
    assert "incomplete" not in text and ":x:" not in text  # nothing lost
    text = render("job_summary", **summary(**{"items/incomplete": 4, "parts/gave_up/reviews": 4}))
    assert "• :x: 4 item(s) stored without some of their parts (gave_up/reviews 4)" in text


def test_notify_posts_through_the_sdk(receiver: SlackReceiver) -> None:
    settings = PlatformSettings(slack_webhook_url=receiver.url)
    assert notify("job_summary", settings=settings, **SUMMARY) is Delivery.SENT
    (post,) = receiver.posts()
    assert "scrape-demo* completed" in str(post["text"])


def test_notify_without_webhook_sends_nothing() -> None:
    settings = PlatformSettings(slack_webhook_url=None)
    assert notify("job_summary", settings=settings, **SUMMARY) is Delivery.OFF


def test_non_2xx_is_retried_then_accepted(tmp_path: Path) -> None:
    with SlackReceiver(run_dir=tmp_path, fail_first=5, fail_status=404) as receiver:
        SlackNotifier(receiver.url, attempts=6, backoff=0.01).send("job_summary", **SUMMARY)
        assert len(receiver.posts()) == 1


def test_persistent_failure_raises_without_leaking_the_url(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with SlackReceiver(run_dir=tmp_path, fail_first=100, fail_status=403) as receiver:
        notifier = SlackNotifier(receiver.url, attempts=3, backoff=0.01)
        with pytest.raises(AlertDeliveryError, match="HTTP 403") as failure:
            notifier.send(
                "error",
                flow="scrape-demo",
                step="llm-process",
                site="demo",
                job_id="j",
                error="boom",
                run_url=None,
            )
        assert receiver.posts() == []
    secret_part = receiver.url.split("/services/")[1]
    assert secret_part not in str(failure.value)
    assert secret_part not in repr(notifier)
    assert secret_part not in caplog.text


def test_one_bounded_retry_layer_and_a_logged_final_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SlackReceiver(run_dir=tmp_path, fail_first=3, fail_status=503) as receiver:
        # Three attempts in all: had anything retried on top, the fourth would be accepted.
        with pytest.raises(AlertDeliveryError, match="after 3 attempts: HTTP 503"):
            SlackNotifier(receiver.url, attempts=3, backoff=0.01).send("job_summary", **SUMMARY)
        assert receiver.posts() == []
        # ...and no fewer: the receiver's three failures are spent.
        SlackNotifier(receiver.url, attempts=1).send("job_summary", **SUMMARY)
        assert len(receiver.posts()) == 1
    assert "job_summary alert not delivered after 3 attempts: HTTP 503" in caplog.text


def test_an_undelivered_alert_is_logged_once_recorded_and_reported_by_the_health_check(
    redis_server: RedisServer, es: Elasticsearch, caplog: pytest.LogCaptureFixture
) -> None:
    server = redis_server.client()
    server.delete(PlatformKeys.alerts_failed)
    webhook = f"http://127.0.0.1:{free_port()}{WEBHOOK_PATH}"  # nothing listens there
    settings = PlatformSettings(slack_webhook_url=webhook, redis_url=redis_server.url)
    caplog.set_level(logging.DEBUG)
    try:
        assert notify("job_summary", settings=settings, **SUMMARY) is Delivery.FAILED
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r.getMessage() for r in warnings] == [
            "Slack job_summary alert not delivered after 4 attempts: URLError"
        ]
        assert WEBHOOK_PATH not in caplog.text  # the webhook URL is a secret
        (entry,) = failed_deliveries(server)
        assert {k: entry[k] for k in ("template", "error", "site", "job_id")} == {
            "template": "job_summary",
            "error": "URLError",
            "site": "demo",
            "job_id": "demo-1",
        }

        report = health.check(es, server=server, schedules={}, search_api_url="")
        assert not report.healthy
        assert report.problems == [
            "1 Slack alert(s) not delivered since the last check (job_summary x1); last: "
            f"job_summary at {entry['at']} (URLError)"
        ]
        assert f"| {entry['at']} | job_summary | demo | demo-1 | URLError |" in report.markdown()
        health.acknowledge(server, report)
        # Reported once: the next check sees only what failed since.
        assert health.check(es, server=server, schedules={}, search_api_url="").healthy
    finally:
        server.delete(PlatformKeys.alerts_failed)
