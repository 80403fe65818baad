"""What frontier requests carry in ``meta``, and a worker's id."""

from __future__ import annotations

import os
import socket
import uuid

# Set on a request that this worker already leased and hands to its own engine.
HANDOFF_META = "frontier_handoff"
# How often a request was crawled again because an item of it failed in the pipelines.
ITEM_RETRY_META = "frontier_item_retries"


class FrontierConfigError(RuntimeError):
    """The leasing scheduler was installed without the pieces it relies on."""


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
