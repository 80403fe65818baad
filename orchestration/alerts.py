"""Slack alerts through slack-sdk's incoming-webhook client.

Message texts are Jinja templates in ``orchestration/templates/slack/`` (edit wording
there, not here). Retries are the SDK's own, one layer: its retry handlers on the
``WebhookClient`` share one attempt counter and back off exponentially (a 429's
Retry-After is honoured). The SDK does not raise on a non-2xx answer, so one handler here
retries those too, and the final answer is checked: a message still refused after every
attempt is logged (one WARNING, in the run's log inside a Prefect run) with the template,
the attempt count and the error class, and raises ``AlertDeliveryError``. The webhook URL
is a secret: it is never logged, and no error message contains it.

``notify`` is what flows and hooks call: an alert that cannot be delivered never fails
the run that sends it. It is recorded in the Redis list ``PlatformKeys.alerts_failed``
(time, template, error class, site, job), which the daily health check reports and then
clears (``failed_deliveries`` / ``forget_failed_deliveries``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from prefect import get_run_logger
from prefect.exceptions import MissingContextError
from slack_sdk.http_retry import HttpRequest, HttpResponse, RetryHandler, RetryState
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.webhook import WebhookClient

from core.config import PlatformSettings, get_settings
from core.keys import REDIS_ERRORS, PlatformKeys
from core.redis_client import Client, connect

TEMPLATES = Path(__file__).resolve().parent / "templates" / "slack"

logger = logging.getLogger(__name__)

# The SDK logs the full request URL at DEBUG and an ERROR per failed attempt: its logger
# stays quiet; the one line after the retries (``SlackNotifier.send``) says what failed.
_sdk_logger = logging.getLogger("platform.slack_sdk")
_sdk_logger.setLevel(logging.CRITICAL)

_templates = Environment(
    loader=FileSystemLoader(TEMPLATES),
    undefined=StrictUndefined,
    autoescape=False,  # Slack mrkdwn, not HTML  # noqa: S701
    keep_trailing_newline=False,
    # Block tags on their own lines leave no blank line; a line ending in a block tag
    # would lose its newline, so the templates never end a text line with one.
    trim_blocks=True,
    lstrip_blocks=True,
)


# Failed deliveries kept for the health check; beyond, the oldest go.
FAILED_DELIVERIES_CAP = 1000


class AlertDeliveryError(RuntimeError):
    """Slack did not accept a message after retries (the URL is deliberately not named)."""

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message)
        self.error = error  # the last error's class, or "HTTP <status>"


class Delivery(StrEnum):
    """What became of an alert ``notify`` was asked to send."""

    SENT = "sent"
    OFF = "off"  # SLACK_WEBHOOK_URL is not set
    FAILED = "failed"  # not accepted after retries: logged and recorded, the run goes on


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The Prefect run's logger inside a flow or task run (its lines reach the run's
    log), else this module's."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logger


class UnacceptedAnswerRetryHandler(RetryHandler):
    """Retries any answer that is not a 2xx (the SDK's own handlers cover only 5xx/429)."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and not 200 <= response.status_code < 300


def render(template: str, **context: Any) -> str:
    return _templates.get_template(f"{template}.j2").render(**context).strip()


@dataclass
class SlackNotifier:
    """Sends rendered templates to one incoming webhook."""

    webhook_url: str
    attempts: int = 4  # in all: the first try and up to attempts - 1 retries
    backoff: float = 0.5  # seconds, doubled each retry (plus the SDK's jitter, up to 1 s)
    timeout: int = 10

    @classmethod
    def from_settings(cls, settings: PlatformSettings | None = None) -> SlackNotifier | None:
        """The configured notifier, or None when ``SLACK_WEBHOOK_URL`` is unset."""
        secret = (settings or get_settings()).slack_webhook_url
        return cls(secret.get_secret_value()) if secret is not None else None

    def __repr__(self) -> str:  # keep the URL out of reprs and tracebacks' locals
        return "SlackNotifier(webhook_url='**********')"

    def _client(self) -> WebhookClient:
        retries = self.attempts - 1  # the handlers share one counter: this bounds them all
        backoff = BackoffRetryIntervalCalculator(backoff_factor=self.backoff)
        return WebhookClient(
            self.webhook_url,
            timeout=self.timeout,
            logger=_sdk_logger,
            retry_handlers=[
                ConnectionErrorRetryHandler(max_retry_count=retries, interval_calculator=backoff),
                RateLimitErrorRetryHandler(max_retry_count=retries),
                UnacceptedAnswerRetryHandler(max_retry_count=retries, interval_calculator=backoff),
            ],
        )

    def send(self, template: str, **context: Any) -> None:
        text = render(template, **context)
        try:
            response = self._client().send(text=text)
        except Exception as exc:  # the SDK re-raises a connection error once retries end
            last = type(exc).__name__
        else:
            if 200 <= response.status_code < 300:
                return
            last = f"HTTP {response.status_code}"
        run_logger().warning(
            "Slack %s alert not delivered after %d attempts: %s", template, self.attempts, last
        )
        raise AlertDeliveryError(
            f"Slack rejected the {template} alert after {self.attempts} attempts: {last}",
            error=last,
        )


def notify(template: str, *, settings: PlatformSettings | None = None, **context: Any) -> Delivery:
    """Send an alert if Slack is configured (``settings``, default: the environment's).

    Never raises for Slack: a delivery that fails after the retries is logged (one
    WARNING naming the template and the error class) and recorded for the health check.
    """
    settings = settings or get_settings()
    notifier = SlackNotifier.from_settings(settings)
    if notifier is None:
        logger.info("SLACK_WEBHOOK_URL not set: %s alert not sent", template)
        return Delivery.OFF
    try:
        notifier.send(template, **context)
    except AlertDeliveryError as failure:
        record_failed_delivery(settings, template, failure.error, context)
        return Delivery.FAILED
    return Delivery.SENT


# -- failed deliveries (Redis) -------------------------------------------------------------


def record_failed_delivery(
    settings: PlatformSettings, template: str, error: str, context: Mapping[str, Any]
) -> None:
    """Append a failed delivery to ``PlatformKeys.alerts_failed``; best effort (logged)."""
    if not settings.redis_url:
        run_logger().warning("undelivered %s alert not recorded: REDIS_URL is not set", template)
        return
    entry = {
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "template": template,
        "error": error,
        "site": context.get("site"),
        "job_id": context.get("job_id"),
    }
    try:
        server = connect(
            settings.redis_url,
            cluster=settings.redis_cluster,
            socket_timeout=5,
            socket_connect_timeout=2,
        )
    except REDIS_ERRORS as exc:
        run_logger().warning(
            "undelivered %s alert not recorded: Redis unreachable (%s)",
            template,
            type(exc).__name__,
        )
        return
    try:
        with server.pipeline(transaction=True) as pipe:
            pipe.rpush(PlatformKeys.alerts_failed, json.dumps(entry))
            pipe.ltrim(PlatformKeys.alerts_failed, -FAILED_DELIVERIES_CAP, -1)
            pipe.execute()
    except REDIS_ERRORS as exc:
        run_logger().warning(
            "undelivered %s alert not recorded: Redis unreachable (%s)",
            template,
            type(exc).__name__,
        )
    finally:
        server.close()


def failed_deliveries(server: Client) -> list[dict[str, Any]]:
    """The failed deliveries recorded since the last ``forget_failed_deliveries``, oldest
    first."""
    return [json.loads(raw) for raw in server.lrange(PlatformKeys.alerts_failed, 0, -1)]


def forget_failed_deliveries(server: Client, count: int) -> None:
    """Drop the ``count`` oldest failed deliveries (those a health check reported); any
    recorded since stay for the next check."""
    if count > 0:
        server.ltrim(PlatformKeys.alerts_failed, count, -1)
