"""Import the platform's Kibana saved objects (data views, dashboard, saved searches).

    python -m orchestration.kibana [--file docker/kibana/saved_objects.ndjson]
                                   [--kibana-url URL] [--space ID] [--wait SECONDS]

POSTs the NDJSON file to ``{KIBANA_URL}/api/saved_objects/_import?overwrite=true`` as
multipart form data (field ``file``) with the ``kbn-xsrf`` header Kibana requires on every
write. Credentials come from the environment: ``KIBANA_API_KEY``, else basic auth with
``KIBANA_USERNAME`` / ``KIBANA_PASSWORD`` (falling back to ``ELASTICSEARCH_USERNAME`` /
``ELASTICSEARCH_PASSWORD``). Re-running replaces the objects (same ids).

A non-2xx answer or ``"success": false`` fails with every error Kibana listed. The password
and API key never appear in output or exceptions. ``--wait`` retries while Kibana is
unreachable or answers 503 (still starting), for the compose one-shot job.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import REPO_ROOT

DEFAULT_FILE = REPO_ROOT / "docker" / "kibana" / "saved_objects.ndjson"
DEFAULT_URL = "http://localhost:5601"
TIMEOUT = 60.0
RETRY_STATUSES = frozenset({502, 503, 504})


class KibanaImportError(RuntimeError):
    """The import failed; the message lists what Kibana said (never a credential)."""


@dataclass(frozen=True)
class Credentials:
    """Basic auth or an API key; ``repr`` hides the secret."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls) -> Credentials:
        environ = os.environ
        username = environ.get("KIBANA_USERNAME") or environ.get("ELASTICSEARCH_USERNAME")
        password = environ.get("KIBANA_PASSWORD") or environ.get("ELASTICSEARCH_PASSWORD")
        api_key = environ.get("KIBANA_API_KEY")
        return cls(username=username or None, password=password or None, api_key=api_key or None)

    def header(self) -> str | None:
        if self.api_key:
            return f"ApiKey {self.api_key}"
        if self.username and self.password is not None:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return f"Basic {token}"
        return None


@dataclass(frozen=True)
class ImportResult:
    success_count: int
    objects: list[tuple[str, str]]  # (type, id) of each imported object


def multipart_body(field_name: str, filename: str, content: bytes) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body with one file part; returns (body, content type)."""
    boundary = f"----platform-{uuid.uuid4().hex}"
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field_name}"; filename="{filename}"\r\n'
        "Content-Type: application/ndjson\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head + content + tail, f"multipart/form-data; boundary={boundary}"


def import_url(kibana_url: str, *, space: str | None = None, overwrite: bool = True) -> str:
    parts = urllib.parse.urlsplit(kibana_url)
    if parts.scheme not in ("http", "https"):
        raise KibanaImportError(f"KIBANA_URL must be an http(s) URL, not {parts.scheme!r}")
    if parts.username or parts.password:
        # Refused rather than echoed back in an error message.
        raise KibanaImportError(
            "KIBANA_URL must not carry credentials: use KIBANA_USERNAME/_PASSWORD"
        )
    base = kibana_url.rstrip("/")
    if space and space != "default":
        base += f"/s/{urllib.parse.quote(space, safe='')}"
    query = urllib.parse.urlencode({"overwrite": "true"} if overwrite else {})
    return f"{base}/api/saved_objects/_import" + (f"?{query}" if query else "")


def _errors_of(payload: Mapping[str, Any]) -> list[str]:
    lines = []
    for error in payload.get("errors") or []:
        kind = (error.get("error") or {}).get("type", "unknown")
        detail = (error.get("error") or {}).get("message") or ""
        missing = (error.get("error") or {}).get("references") or []
        if missing:
            detail = "missing references: " + ", ".join(
                f"{ref.get('type')}/{ref.get('id')}" for ref in missing
            )
        title = error.get("title") or (error.get("meta") or {}).get("title") or ""
        lines.append(
            f"{error.get('type')}/{error.get('id')} {title!r}: {kind}"
            + (f" ({detail})" if detail else "")
        )
    return lines


def import_saved_objects(
    kibana_url: str,
    ndjson: bytes,
    *,
    credentials: Credentials,
    filename: str = "saved_objects.ndjson",
    space: str | None = None,
    overwrite: bool = True,
    timeout: float = TIMEOUT,
) -> ImportResult:
    """One import request; raises ``KibanaImportError`` unless every object was imported."""
    url = import_url(kibana_url, space=space, overwrite=overwrite)
    body, content_type = multipart_body("file", filename, ndjson)
    headers = {"kbn-xsrf": "true", "Content-Type": content_type, "Accept": "application/json"}
    auth = credentials.header()
    if auth:
        headers["Authorization"] = auth
    # The scheme is checked in import_url: only http(s) is ever opened.
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            raw = response.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", errors="replace")[:2000]
        raise KibanaImportError(f"POST {url} answered HTTP {exc.code}: {text}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise KibanaImportError(f"POST {url} failed: {reason}") from None
    try:
        payload = json.loads(raw)
    except ValueError:
        raise KibanaImportError(f"POST {url}: not JSON: {raw[:200]!r}") from None
    if not payload.get("success", False):
        errors = _errors_of(payload) or [json.dumps(payload)[:2000]]
        raise KibanaImportError(
            f"Kibana imported {payload.get('successCount', 0)} object(s) and refused "
            f"{len(errors)}:\n  " + "\n  ".join(errors)
        )
    objects = [(item.get("type", ""), item.get("id", "")) for item in payload["successResults"]]
    return ImportResult(
        success_count=int(payload.get("successCount", len(objects))), objects=objects
    )


def import_with_wait(
    kibana_url: str,
    ndjson: bytes,
    *,
    credentials: Credentials,
    wait: float = 0.0,
    interval: float = 5.0,
    **kwargs: Any,
) -> ImportResult:
    """``import_saved_objects``, retried while Kibana is unreachable or starting (503)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return import_saved_objects(kibana_url, ndjson, credentials=credentials, **kwargs)
        except KibanaImportError as exc:
            message = str(exc)
            transient = " failed: " in message or any(
                f"HTTP {status}" in message for status in RETRY_STATUSES
            )
            if not transient or time.monotonic() + interval > deadline:
                raise
            print(f"Kibana not ready ({message.splitlines()[0]}); retrying", file=sys.stderr)
            time.sleep(interval)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument(
        "--kibana-url", default=os.environ.get("KIBANA_URL") or DEFAULT_URL, help="$KIBANA_URL"
    )
    parser.add_argument("--space", default=None, help="a Kibana space id (default space)")
    parser.add_argument(
        "--wait", type=float, default=0.0, help="retry this long while Kibana is not up"
    )
    args = parser.parse_args(argv)
    credentials = Credentials.from_env()
    try:
        result = import_with_wait(
            args.kibana_url,
            args.file.read_bytes(),
            credentials=credentials,
            wait=args.wait,
            filename=args.file.name,
            space=args.space,
        )
    except (KibanaImportError, OSError) as exc:
        print(f"import failed: {exc}", file=sys.stderr)
        return 1
    print(f"imported {result.success_count} saved object(s) into {args.kibana_url}")
    for kind, object_id in result.objects:
        print(f"  {kind:<14} {object_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
