"""A real forwarding HTTP proxy on loopback, for fetch tests and benchmarks.

``python -m harness.loopback_proxy --port 8081 [--client NAME] [--auth-file FILE]
[--mode forward|drop|hang]``

It speaks what Scrapy and Chromium send to an HTTP proxy: absolute-form requests
(``GET http://host/path``), relayed with keep-alive on both sides, and ``CONNECT`` tunnels
for HTTPS. With ``--client NAME`` every relayed request carries ``X-Demo-Client: NAME``,
so the demo site can treat the traffic of one proxy differently (ban it, throttle it).
With ``--auth-file`` (a file holding ``user:pass``: never in an argv, which ``ps`` shows)
a request without the right ``Proxy-Authorization`` gets 407 and a Basic challenge, as
commercial proxies answer. ``--mode drop`` closes every connection without
answering and ``--mode hang`` never answers: broken proxies of two kinds.

``GET /__proxy/stats`` (origin-form, to the proxy itself) returns its counters as JSON.
``harness.loopback_proxy.LoopbackProxy`` runs it as a supervised subprocess.

Raw asyncio streams, not the loopback base (``standins.loopback``, aiohttp): it relays
messages as framed (chunked bodies and trailers verbatim, header order kept) and tunnels
CONNECT byte for byte, which an aiohttp server would parse and re-frame.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import signal
import sys
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from core.config import REPO_ROOT
from harness.base import ManagedProcess
from harness.http_framing import (
    CHUNK,
    CONNECT_TIMEOUT,
    HEAD_LIMIT,
    READ_TIMEOUT,
    Head,
    ProxyError,
    hop_by_hop,
    read_head,
    relay_body,
    simple_response,
)

MODES = ("forward", "drop", "hang")


@dataclass
class Upstream:
    key: tuple[str, int]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


@dataclass
class ProxyStats:
    requests: int = 0
    connects: int = 0
    auth_failures: int = 0
    upstream_errors: int = 0
    dropped: int = 0
    by_status: Counter[int] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "connects": self.connects,
            "auth_failures": self.auth_failures,
            "upstream_errors": self.upstream_errors,
            "dropped": self.dropped,
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
        }


class ProxyServer:
    def __init__(
        self,
        *,
        client: str | None = None,
        auth: str | None = None,
        mode: str = "forward",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.client = client
        self.mode = mode
        self.expected_auth = (
            "Basic " + base64.b64encode(auth.encode()).decode() if auth is not None else None
        )
        self.stats = ProxyStats()

    async def serve(self, host: str, port: int) -> None:
        server = await asyncio.start_server(self.handle, host, port, limit=HEAD_LIMIT)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with server:
            print(f"loopback proxy on {host}:{port} mode={self.mode}", flush=True)
            await stop.wait()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: Upstream | None = None
        try:
            while True:
                head = await read_head(reader)
                if head is None:
                    return
                if head.first_line.split(" ")[1:2] == ["/__proxy/stats"]:
                    await self.send_stats(head, reader, writer)
                    continue
                if self.mode == "drop":
                    self.stats.dropped += 1
                    return
                if self.mode == "hang":
                    self.stats.dropped += 1
                    await asyncio.Event().wait()
                keep, upstream = await self.one_request(head, reader, writer, upstream)
                if not keep:
                    return
        except ProxyError as exc:
            with contextlib.suppress(Exception):
                close = [("Connection", "close")]
                writer.write(simple_response(exc.status, exc.reason, extra=close))
                await writer.drain()
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            if upstream is not None:
                upstream.close()
            with contextlib.suppress(Exception):
                writer.close()

    async def send_stats(
        self, head: Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await relay_body(head, reader, _Discard())
        body = json.dumps(self.stats.as_dict()).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    async def one_request(
        self,
        head: Head,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: Upstream | None,
    ) -> tuple[bool, Upstream | None]:
        """Serve one request; returns (keep the client connection, the upstream to reuse)."""
        try:
            method, target, version = head.first_line.split(" ", 2)
        except ValueError as exc:
            raise ProxyError(400, "bad request line") from exc
        if self.expected_auth is not None and head.get("proxy-authorization") != self.expected_auth:
            self.stats.auth_failures += 1
            await relay_body(head, reader, _Discard())
            challenge = [("Proxy-Authenticate", 'Basic realm="loopback-proxy"')]
            writer.write(simple_response(407, "Proxy Authentication Required", extra=challenge))
            await writer.drain()
            return True, upstream
        if method.upper() == "CONNECT":
            await self.tunnel(target, reader, writer)
            return False, upstream

        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            raise ProxyError(400, "absolute http:// URL expected")
        key = (url.hostname, url.port or 80)
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        self.stats.requests += 1
        client_close = "close" in head.tokens("connection") or (
            version == "HTTP/1.0" and "keep-alive" not in head.tokens("connection")
        )
        dropped = hop_by_hop(head.headers, keep_framing=True) | {"x-demo-client", "host"}
        headers = [(k, v) for k, v in head.headers if k.lower() not in dropped]
        headers.insert(0, ("Host", url.netloc.rpartition("@")[2]))
        if self.client:
            headers.append(("X-Demo-Client", self.client))
        headers.append(("Connection", "keep-alive"))
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers)
        request_head = f"{method} {path} HTTP/1.1\r\n{lines}"

        if upstream is not None and (upstream.key != key or upstream.reader.at_eof()):
            upstream.close()
            upstream = None
        if upstream is None:
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(*key, limit=HEAD_LIMIT), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError) as exc:
                self.stats.upstream_errors += 1
                self.stats.by_status[502] += 1
                raise ProxyError(502, f"upstream unreachable: {type(exc).__name__}") from exc
            upstream = Upstream(key, up_reader, up_writer)
        upstream.writer.write((request_head + "\r\n").encode("latin-1"))
        await relay_body(head, reader, upstream.writer)
        await upstream.writer.drain()

        response = await asyncio.wait_for(read_head(upstream.reader), READ_TIMEOUT)
        if response is None:
            self.stats.upstream_errors += 1
            raise ProxyError(502, "upstream closed without answering")
        status = int(response.first_line.split(" ", 2)[1])
        self.stats.by_status[status] += 1
        framed = (
            response.get("content-length") is not None
            or "chunked" in response.tokens("transfer-encoding")
            or method.upper() == "HEAD"
            or status in (204, 304)
            or 100 <= status < 200
        )
        keep_upstream = framed and "close" not in response.tokens("connection")
        keep_client = framed and not client_close
        dropped = hop_by_hop(response.headers, keep_framing=True)
        out = [(k, v) for k, v in response.headers if k.lower() not in dropped]
        out.append(("Connection", "keep-alive" if keep_client else "close"))
        writer.write(
            (
                response.first_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in out) + "\r\n"
            ).encode("latin-1")
        )
        no_body = method.upper() == "HEAD" or status in (204, 304) or 100 <= status < 200
        await relay_body(response, upstream.reader, writer, no_body=no_body, until_eof=not framed)
        await writer.drain()
        if not keep_upstream:
            upstream.close()
            upstream = None
        return keep_client, upstream

    async def tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        self.stats.connects += 1
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), int(port)), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError, ValueError) as exc:
            self.stats.upstream_errors += 1
            raise ProxyError(502, "tunnel target unreachable") from exc
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while chunk := await src.read(CHUNK):
                    dst.write(chunk)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


class _Discard:
    """A writer that drops what it is given (an unread request body before an error)."""

    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


class LoopbackProxy(ManagedProcess):
    """The proxy as a supervised subprocess on a free loopback port."""

    name = "loopback-proxy"
    start_timeout = 20.0
    stop_timeout = 5.0

    def __init__(
        self,
        *,
        client: str | None = None,
        auth: str | None = None,
        mode: str = "forward",
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = name or (f"proxy-{client}" if client else f"proxy-{self.port}")
        self.client = client
        self.auth = auth
        self.mode = mode

    def command(self) -> Sequence[str]:
        argv = [sys.executable, "-m", "harness.loopback_proxy", "--host", self.host]
        argv += ["--port", str(self.port), "--mode", self.mode]
        if self.client:
            argv += ["--client", self.client]
        if self.auth:
            argv += ["--auth-file", str(self.secret_file("auth", self.auth))]
        return argv

    def environment(self) -> dict[str, str]:
        return {"PYTHONPATH": str(REPO_ROOT)}

    @property
    def url(self) -> str:
        """The proxy URL to configure, credentials included."""
        userinfo = f"{self.auth}@" if self.auth else ""
        return f"http://{userinfo}{self.host}:{self.port}"

    def ready(self) -> bool:
        return bool(self.stats() is not None)

    def stats(self) -> dict[str, Any]:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://{self.host}:{self.port}/__proxy/stats", timeout=2) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--client", default=None, help="X-Demo-Client value to add")
    parser.add_argument(
        "--auth-file", type=Path, default=None, help="a file holding user:password to require"
    )
    parser.add_argument("--mode", choices=MODES, default="forward")
    args = parser.parse_args(argv)
    auth = args.auth_file.read_text().strip() if args.auth_file else None
    server = ProxyServer(client=args.client, auth=auth, mode=args.mode)
    asyncio.run(server.serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
