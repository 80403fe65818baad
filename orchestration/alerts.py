"""Slack alerts through slack-sdk's incoming-webhook client.

Message texts are Jinja templates in ``orchestration/templates/slack/`` (edit wording
there, not here). Retries are the SDK's own, one layer: its retry handlers on the
``WebhookClient`` share one attempt counter and back off exponentially (a 429's
Retry-After is honoured). The SDK does not raise on a non-2xx answer, so one handler here
retries those too, and the final answer is checked: a message still refused after every
attempt is logged with the attempt count and raises ``AlertDeliveryError``. The webhook
URL is a secret: it is never logged, and no error message contains it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from slack_sdk.http_retry import HttpRequest, HttpResponse, RetryHandler, RetryState
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.webhook import WebhookClient

from core.config import PlatformSettings, get_settings

TEMPLATES = Path(__file__).resolve().parent / "templates" / "slack"

logger = logging.getLogger(__name__)

# The SDK logs the full request URL at DEBUG; its logger never goes below WARNING.
_sdk_logger = logging.getLogger("platform.slack_sdk")
_sdk_logger.setLevel(logging.WARNING)

_templates = Environment(
    loader=FileSystemLoader(TEMPLATES),
    undefined=StrictUndefined,
    autoescape=False,  # Slack mrkdwn, not HTML  # noqa: S701
    keep_trailing_newline=False,
    trim_blocks=True,
)


class AlertDeliveryError(RuntimeError):
    """Slack did not accept a message after retries (the URL is deliberately not named)."""


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
        logger.error(
            "Slack %s alert not delivered after %d attempts: %s", template, self.attempts, last
        )
        raise AlertDeliveryError(
            f"Slack rejected the {template} alert after {self.attempts} attempts: {last}"
        )


def notify(template: str, *, settings: PlatformSettings | None = None, **context: Any) -> bool:
    """Send an alert if Slack is configured (``settings``, default: the environment's);
    True if one was sent."""
    notifier = SlackNotifier.from_settings(settings)
    if notifier is None:
        logger.info("SLACK_WEBHOOK_URL not set: %s alert not sent", template)
        return False
    notifier.send(template, **context)
    return True
