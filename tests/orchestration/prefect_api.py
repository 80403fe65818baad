"""Prefect's REST API for tests (the flows under test use Prefect's own client)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from services.prefect_server import PrefectServer


def api(server: PrefectServer, path: str, body: dict[str, Any] | None = None) -> Any:
    """Prefect's REST API; 502/503 (SQLite busy under load) are retried, as Prefect's own
    client does."""
    for attempt in range(6):
        request = urllib.request.Request(
            f"{server.url}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"},
            method="POST" if body is not None else "GET",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                raw = answer.read()
            return json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            if exc.code not in (502, 503) or attempt == 5:
                raise
            time.sleep(0.5 * 2**attempt)
    return None
