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
import asyncio
import base64
import http.client
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from core.config import REPO_ROOT
from harness.base import ManagedProcess
from harness.http_framing import hop_by_hop
from standins import loopback

CHALLENGE = 'Basic realm="security", charset="UTF-8"'


def security_error(status: int, reason: str) -> bytes:
    cause = {"type": "security_exception", "reason": reason}
    if status == 401:
        cause["header"] = {"WWW-Authenticate": [CHALLENGE, "ApiKey"]}  # type: ignore[assignment]
    return json.dumps({"error": {"root_cause": [cause], **cause}, "status": status}).encode()


@dataclass
class Gate:
    """What the gate lets through, and how many requests it accepted (``--refuse-after``)."""

    upstream: tuple[str, int]
    user: str
    expected: str  # the Authorization header of the right credentials
    deny: tuple[str, ...] = ()
    refuse_after: int | None = None
    accepted: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        path = request.raw_path
        if request.headers.get("Authorization") != self.expected or self._rotated():
            presented = _presented_user(request.headers.get("Authorization"))
            reason = f"unable to authenticate user [{presented}] for REST request [{path}]"
            return _answer(401, security_error(401, reason), [("WWW-Authenticate", CHALLENGE)])
        if path.split("?")[0] == "/_security/_authenticate":
            return _answer(200, json.dumps({"username": self.user, "roles": []}).encode())
        denied = self._denied(path, body)
        if denied:
            reason = (
                f"action [indices:data/write/bulk[s]] is unauthorized for user [{self.user}] "
                f"with effective roles [{self.user}] on indices [{denied}]"
            )
            return _answer(403, security_error(403, reason))
        headers = {
            k: v for k, v in request.headers.items() if k.lower() not in ("authorization", "host")
        }
        status, answer, data = await asyncio.to_thread(
            self._relay, request.method, path, body, headers
        )
        dropped = hop_by_hop(answer) | {"content-length"}
        passed = [(k, v) for k, v in answer if k.lower() not in dropped]
        return web.Response(status=status, body=data, headers=passed)

    def _relay(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The node's answer (status, headers, body), through the standard library's client."""
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _rotated(self) -> bool:
        """Whether the password "changed" (``--refuse-after``): refused from now on."""
        if self.refuse_after is None:
            return False
        self.accepted += 1
        return self.accepted > self.refuse_after

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


def _answer(status: int, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> web.Response:
    response = web.Response(status=status, body=body)
    response.headers["Content-Type"] = "application/json"
    response.headers["X-elastic-product"] = "Elasticsearch"
    for name, value in headers:
        response.headers.add(name, value)
    return response


def create_app(gate: Gate) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        if request.method not in ("GET", "POST", "PUT", "DELETE", "HEAD"):
            return loopback.unsupported(request)
        return await gate.handle(request)

    app = web.Application(client_max_size=1024**3)  # a bulk body is as large as a crawl's
    app.router.add_route("*", "/{tail:.*}", answer)
    loopback.server_header(app, loopback.STDLIB_PRODUCT)
    return app


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
    credentials = args.user_file.read_text().strip()  # a file: never in this argv
    gate = Gate(
        upstream=(upstream.hostname or "127.0.0.1", upstream.port or 9200),
        user=credentials.partition(":")[0],
        expected="Basic " + base64.b64encode(credentials.encode()).decode(),
        deny=tuple(args.deny_index),
        refuse_after=args.refuse_after,
    )
    loopback.run(create_app(gate), "127.0.0.1", args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
