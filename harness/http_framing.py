"""HTTP/1.1 message framing for the loopback proxy: request and response heads, bodies
relayed as they are framed (Content-Length, chunked with its trailers, or until EOF), and
the proxy's own short answers. The hop-by-hop rules of every relaying server of the
harness (the proxy, the bot-defense stand-in, the ES gate): ``hop_by_hop``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Hop-by-hop headers (RFC 9110 7.6.1) are each connection's own, never relayed.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
HEAD_LIMIT = 1024 * 1024
CONNECT_TIMEOUT = 10.0
# A slow upstream is the site's behaviour under test, not a reason to cut it off early.
READ_TIMEOUT = 120.0
CHUNK = 64 * 1024


def hop_by_hop(headers: Iterable[tuple[str, str]], *, keep_framing: bool = False) -> frozenset[str]:
    """The (lowercase) header names a relay drops from a message with these ``headers``:
    ``HOP_BY_HOP`` and every name its Connection headers list. ``keep_framing``: the relay
    copies a chunked body verbatim, so its Transfer-Encoding goes with it."""
    listed = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
        if token.strip()
    }
    dropped = HOP_BY_HOP | listed
    return dropped - {"transfer-encoding"} if keep_framing else dropped


class ProxyError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


@dataclass
class Head:
    first_line: str
    headers: list[tuple[str, str]]

    def get(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def tokens(self, name: str) -> set[str]:
        value = self.get(name) or ""
        return {token.strip().lower() for token in value.split(",") if token.strip()}


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """One request/response head, or None on a clean EOF before any byte."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise ProxyError(400, "truncated head") from exc
    except asyncio.LimitOverrunError as exc:
        raise ProxyError(431, "head too large") from exc
    lines = raw.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ProxyError(400, "bad header line")
        headers.append((name.strip(), value.strip()))
    return Head(lines[0], headers)


async def relay_body(
    head: Head,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    no_body: bool = False,
    until_eof: bool = False,
) -> bool:
    """Copy one message body; returns False when the body ended with the connection."""
    if no_body:
        return True
    if "chunked" in head.tokens("transfer-encoding"):
        # Relayed verbatim, framing included: sizes, extensions, trailers.
        while True:
            line = await asyncio.wait_for(reader.readuntil(b"\r\n"), READ_TIMEOUT)
            writer.write(line)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:
                    trailer = await asyncio.wait_for(reader.readuntil(b"\r\n"), READ_TIMEOUT)
                    writer.write(trailer)
                    if trailer == b"\r\n":
                        await writer.drain()
                        return True
            await copy_exactly(reader, writer, size + 2)
    length = head.get("content-length")
    if length is not None:
        await copy_exactly(reader, writer, int(length))
        return True
    if not until_eof:
        return True  # a request without a length has no body
    while chunk := await asyncio.wait_for(reader.read(CHUNK), READ_TIMEOUT):
        writer.write(chunk)
        await writer.drain()
    return False


async def copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    while n > 0:
        chunk = await asyncio.wait_for(reader.read(min(CHUNK, n)), READ_TIMEOUT)
        if not chunk:
            raise ProxyError(502, "upstream closed mid-body")
        writer.write(chunk)
        n -= len(chunk)
        await writer.drain()


def simple_response(status: int, reason: str, *, extra: Sequence[tuple[str, str]] = ()) -> bytes:
    body = f"{status} {reason}\n".encode()
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain"]
    lines += [f"{k}: {v}" for k, v in extra]
    lines += [f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body
