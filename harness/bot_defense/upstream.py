"""Keep-alive HTTP/1.1 connections to the upstream site, shared by the handler threads.

A thread takes an idle connection (or opens one), sends one request, reads the whole
answer and puts the connection back: the stand-in relays whole bodies (the demo shop's
largest page is a few MB), which keeps its framing simple and its log exact.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

# A slow upstream is the site's behaviour under test, not a reason to cut it off early.
TIMEOUT = 120.0
IDLE_LIMIT = 64  # idle connections kept; more are closed after use
# What a reused connection raises when the upstream closed it while idle: worth one
# retry on a fresh connection, since the request never reached the site.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class UpstreamPool:
    def __init__(self, url: str, *, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"upstream must be an http:// URL, not {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.netloc = parts.netloc
        self.timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < IDLE_LIMIT:
                self._idle.append(conn)
                return
        conn.close()

    def request(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> Answer:
        """Send one request; raises OSError/HTTPException when the upstream fails."""
        for attempt in (1, 2):
            conn, reused = self._take()
            try:
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders(body or None)
                response = conn.getresponse()
                data = response.read()
            except _STALE:
                conn.close()
                if reused and attempt == 1:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            if response.will_close:
                conn.close()
            else:
                self._give(conn)
            return Answer(response.status, response.reason, response.getheaders(), data)
        raise AssertionError("unreachable: the second attempt returns or raises")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
