"""Elasticsearch's security layer in front of the loopback node, for credential tests.

    python -m harness.es_auth_gate --port 9201 --upstream http://127.0.0.1:9200
        --user-file FILE [--deny-index changes-] [--refuse-after N]

``FILE`` holds ``user:password`` (a file: the password is never in an argv, which ``ps``
shows). The harness's node has no security module (docs/elasticsearch-node.md). This gate stands
in for it on the wire: a request without the right Basic credentials is answered 401
with the body and ``WWW-Authenticate`` header Elasticsearch's security sends; a
request that names an index starting with a ``--deny-index`` prefix is answered
403 as for a role without a privilege on it; ``GET /_security/_authenticate`` answers the
user; everything else is relayed to the node unchanged. ``--refuse-after N``: after N
requests with the right credentials every request is refused 401, as when the password
is changed under a running crawl.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import re
import signal
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from core.config import REPO_ROOT
from harness.base import ManagedProcess

CHALLENGE = 'Basic realm="security", charset="UTF-8"'


def security_error(status: int, reason: str) -> bytes:
    cause = {"type": "security_exception", "reason": reason}
    if status == 401:
        cause["header"] = {"WWW-Authenticate": [CHALLENGE, "ApiKey"]}  # type: ignore[assignment]
    return json.dumps({"error": {"root_cause": [cause], **cause}, "status": status}).encode()


class Gate(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream: tuple[str, int] = ("127.0.0.1", 9200)
    user: str = "elastic"
    expected: str = ""
    deny: tuple[str, ...] = ()
    refuse_after: int | None = None
    accepted = 0
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        return

    def _answer(self, status: int, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-elastic-product", "Elasticsearch")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path
        if self.headers.get("Authorization") != self.expected or self._rotated():
            presented = _presented_user(self.headers.get("Authorization"))
            reason = f"unable to authenticate user [{presented}] for REST request [{path}]"
            self._answer(401, security_error(401, reason), [("WWW-Authenticate", CHALLENGE)])
            return
        if path.split("?")[0] == "/_security/_authenticate":
            self._answer(200, json.dumps({"username": self.user, "roles": []}).encode())
            return
        denied = self._denied(path, body)
        if denied:
            reason = (
                f"action [indices:data/write/bulk[s]] is unauthorized for user [{self.user}] "
                f"with effective roles [{self.user}] on indices [{denied}]"
            )
            self._answer(403, security_error(403, reason))
            return
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "host")
            }
            connection.request(self.command, path, body=body or None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            passed = [
                (k, v)
                for k, v in response.getheaders()
                if k.lower() not in ("content-length", "connection", "transfer-encoding")
            ]
            self.send_response(response.status)
            for name, value in passed:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            connection.close()

    def _rotated(self) -> bool:
        """Whether the password "changed" (``--refuse-after``): refused from now on."""
        if self.refuse_after is None:
            return False
        with Gate.lock:
            Gate.accepted += 1
            return Gate.accepted > self.refuse_after

    def _denied(self, path: str, body: bytes) -> str | None:
        if not self.deny:
            return None
        names = re.findall(rb'"_index"\s*:\s*"([^"]+)"', body) if "_bulk" in path else []
        names.append(path.lstrip("/").split("/")[0].encode())
        for name in names:
            index = name.decode(errors="replace")
            if index.startswith(self.deny):
                return index
        return None

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle


def _presented_user(header: str | None) -> str:
    if not header or not header.startswith("Basic "):
        return ""
    try:
        return base64.b64decode(header[6:]).decode().partition(":")[0]
    except ValueError:
        return "?"


class EsAuthGate(ManagedProcess):
    """The gate as a supervised process in front of ``upstream`` (an ES node's URL)."""

    name = "es-auth-gate"

    def __init__(
        self,
        upstream: str,
        *,
        user: str,
        password: str,
        deny_index: Sequence[str] = (),
        refuse_after: int | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.upstream = upstream
        self.user = user
        self.password = password
        self.deny_index = tuple(deny_index)
        self.refuse_after = refuse_after
        self.name = f"es-auth-gate-{self.port}"

    def environment(self) -> dict[str, str]:
        # `python -m harness.es_auth_gate` imports from this checkout whatever the cwd.
        return {"PYTHONPATH": str(REPO_ROOT)}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> Sequence[str]:
        argv = [
            sys.executable, "-m", "harness.es_auth_gate",
            "--port", str(self.port),
            "--upstream", self.upstream,
            "--user-file", str(self.secret_file("user", f"{self.user}:{self.password}")),
        ]  # fmt: skip
        for prefix in self.deny_index:
            argv += ["--deny-index", prefix]
        if self.refuse_after is not None:
            argv += ["--refuse-after", str(self.refuse_after)]
        return argv

    def ready(self) -> bool:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=2)
        try:
            connection.request("GET", "/")
            return connection.getresponse().status == 401
        finally:
            connection.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument(
        "--user-file", type=Path, required=True, help="a file holding user:password to accept"
    )
    parser.add_argument("--deny-index", action="append", default=[], metavar="PREFIX")
    parser.add_argument("--refuse-after", type=int, default=None, metavar="N")
    args = parser.parse_args(argv)
    upstream = urlsplit(args.upstream)
    Gate.upstream = (upstream.hostname or "127.0.0.1", upstream.port or 9200)
    credentials = args.user_file.read_text().strip()  # a file: never in this argv
    Gate.user = credentials.partition(":")[0]
    Gate.expected = "Basic " + base64.b64encode(credentials.encode()).decode()
    Gate.deny = tuple(args.deny_index)
    Gate.refuse_after = args.refuse_after
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Gate)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
