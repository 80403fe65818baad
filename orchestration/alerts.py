"""Slack alerts through slack-sdk's incoming-webhook client.

Message texts are Jinja templates in ``orchestration/templates/slack/`` (edit wording
there, not here). The SDK does not raise on a non-2xx answer, so every answer is checked
and retried with backoff; a message that still fails raises ``AlertDeliveryError``. The
webhook URL is a secret: it is never logged, and no error message contains it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.webhook import WebhookClient

from core.config import get_settings

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


def render(template: str, **context: Any) -> str:
    return _templates.get_template(f"{template}.j2").render(**context).strip()


@dataclass
class SlackNotifier:
    """Sends rendered templates to one incoming webhook."""

    webhook_url: str
    attempts: int = 4
    backoff: float = 0.5
    timeout: int = 10

    @classmethod
    def from_settings(cls) -> SlackNotifier | None:
        """The configured notifier, or None when ``SLACK_WEBHOOK_URL`` is unset."""
        secret = get_settings().slack_webhook_url
        return cls(secret.get_secret_value()) if secret is not None else None

    def __repr__(self) -> str:  # keep the URL out of reprs and tracebacks' locals
        return "SlackNotifier(webhook_url='**********')"

    def _client(self) -> WebhookClient:
        return WebhookClient(
            self.webhook_url,
            timeout=self.timeout,
            logger=_sdk_logger,
            retry_handlers=[
                ConnectionErrorRetryHandler(max_retry_count=2),
                RateLimitErrorRetryHandler(max_retry_count=2),
                ServerErrorRetryHandler(max_retry_count=2),
            ],
        )

    def send(self, template: str, **context: Any) -> None:
        text = render(template, **context)
        client = self._client()
        last = "no attempt"
        for attempt in range(1, self.attempts + 1):
            try:
                response = client.send(text=text)
            except Exception as exc:
                last = type(exc).__name__
            else:
                if 200 <= response.status_code < 300:
                    return
                last = f"HTTP {response.status_code}"
            logger.warning("Slack %s alert attempt %d failed: %s", template, attempt, last)
            if attempt < self.attempts:
                time.sleep(self.backoff * 2 ** (attempt - 1))
        raise AlertDeliveryError(f"Slack rejected the {template} alert: {last}")


def notify(template: str, **context: Any) -> bool:
    """Send an alert if Slack is configured; True if one was sent."""
    notifier = SlackNotifier.from_settings()
    if notifier is None:
        logger.info("SLACK_WEBHOOK_URL not set: %s alert not sent", template)
        return False
    notifier.send(template, **context)
    return True
