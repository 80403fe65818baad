"""The server-side alert for a run that ended badly without an alert of its own.

A flow's hooks alert its failures (``orchestration/hooks.py``) while its process, or the
worker that runs its crash hooks, is there to run them. Some runs end with nobody left:
a suspended run whose approval nobody answered is failed by the Prefect server
("The flow was paused and never resumed."), a run whose worker died never runs its
hooks. So every failed or crashed run of the platform's flows is watched on the server
by one Prefect automation, registered with the deployments (``register``):

- the trigger (Proactive) starts when a run of one of the flows enters a failed or
  crashed state (``WATCHED_STATES``), and expects the run's ``ALERTED_EVENT``, which the
  flow's ``on_failure`` / ``on_crashed`` hook emits once the run's own alert is out;
- when that event does not come within ``grace`` seconds, the action sends the Slack
  message (``templates/prefect/unalerted_run.j2``, rendered by the server with the run)
  through a ``CustomWebhookNotificationBlock`` named ``BLOCK_NAME``, the webhook URL in
  its secrets (``SLACK_WEBHOOK_URL``; Prefect never shows it back).

One alert per failed run either way: the run's own, or the automation's. Without
``SLACK_WEBHOOK_URL`` no alert goes anywhere, so the automation and its block are removed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from prefect.blocks.notifications import CustomWebhookNotificationBlock
from prefect.client.orchestration import get_client
from prefect.events import AutomationCore, EventTrigger, Posture, SendNotification
from prefect.exceptions import ObjectNotFound
from pydantic import SecretStr

from orchestration.hooks import ALERTED_EVENT, SELF_ALERTED

AUTOMATION_NAME = "platform-unalerted-failed-runs"
BLOCK_NAME = "platform-slack"
GRACE_SECONDS = 120  # the run's own alert: a step's log lines read, Slack's retries
MIN_GRACE_SECONDS = 10  # the least a Proactive trigger waits
TEMPLATE = Path(__file__).resolve().parent / "templates" / "prefect" / "unalerted_run.j2"
# Prefect's failed and crashed states, and the platform flows' named failed states.
WATCHED_STATES = ("Failed", "Crashed", "TimedOut", "UnknownSite", *sorted(SELF_ALERTED))


def trigger(flows: Sequence[str], grace: float = GRACE_SECONDS) -> EventTrigger:
    """A failed or crashed run of ``flows`` not followed by its ``ALERTED_EVENT``."""
    return EventTrigger(
        # Each run apart: the bucket of one run is its failure and its own alert.
        for_each={"prefect.resource.id"},
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related={"prefect.resource.role": "flow", "prefect.resource.name": list(flows)},
        after={f"prefect.flow-run.{state}" for state in WATCHED_STATES},
        expect={ALERTED_EVENT},
        posture=Posture.Proactive,
        threshold=1,
        within=dt.timedelta(seconds=grace),
    )


def slack_block(webhook_url: SecretStr) -> CustomWebhookNotificationBlock:
    """Posts the notification's body as a Slack incoming-webhook message."""
    return CustomWebhookNotificationBlock(
        name=BLOCK_NAME,
        url="{{webhook_url}}",
        json_data={"text": "{{body}}"},
        secrets={"webhook_url": webhook_url.get_secret_value()},
        allow_private_urls=True,  # a webhook relay inside the network is an operator's call
    )


def automation(block_id: object, flows: Sequence[str], grace: float) -> AutomationCore:
    return AutomationCore(
        name=AUTOMATION_NAME,
        description=(
            "Slack alert for a failed or crashed run whose own alert never came (an "
            "approval nobody answered, a run whose worker was gone): orchestration/"
            "automations.py"
        ),
        enabled=True,
        trigger=trigger(flows, grace),
        actions=[
            SendNotification(
                block_document_id=block_id,
                subject="A platform run ended without its alert",
                body=TEMPLATE.read_text(),
            )
        ],
    )


async def register(
    webhook_url: SecretStr | None, flows: Sequence[str], *, grace: float = GRACE_SECONDS
) -> str:
    """Create or update the automation and its Slack block (remove both without a
    webhook URL); one line saying what was done."""
    async with get_client() as client:
        existing = await client.read_automations_by_name(AUTOMATION_NAME)
        if webhook_url is None:
            for found in existing:
                await client.delete_automation(found.id)
            try:
                block = await client.read_block_document_by_name(
                    BLOCK_NAME,
                    CustomWebhookNotificationBlock.get_block_type_slug(),
                    include_secrets=False,
                )
            except ObjectNotFound:
                pass
            else:
                await client.delete_block_document(block.id)
            return f"automation {AUTOMATION_NAME}: not registered (SLACK_WEBHOOK_URL is not set)"
        block_id = await slack_block(webhook_url).asave(BLOCK_NAME, overwrite=True)
        wanted = automation(block_id, flows, grace)
        if existing:
            await client.update_automation(existing[0].id, wanted)
            for extra in existing[1:]:  # one automation of this name
                await client.delete_automation(extra.id)
        else:
            await client.create_automation(wanted)
    return (
        f"automation {AUTOMATION_NAME}: Slack alert for failed runs of {', '.join(flows)} "
        f"without their own alert within {grace:g}s"
    )
