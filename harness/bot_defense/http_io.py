"""The stand-in's side of one client connection: the ClientHello fingerprinted before
the TLS handshake, HTTP/1.1 requests read (bodies, chunked included) and responses
written whole, every response recorded in the ledger before it is sent.
``harness.bot_defense.server.DefenseHandler`` decides what each request gets."""

from __future__ import annotations

import email.utils
import socket
import ssl
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from harness.bot_defense import ledger
from harness.bot_defense.ledger import Ledger
from harness.bot_defense.tls import (
    ClientHelloError,
    TlsFingerprint,
    parse_client_hello,
    peek_client_hello,
    tls_fingerprint,
)

HANDSHAKE_TIMEOUT = 10.0
IDLE_TIMEOUT = 60.0  # a keep-alive connection idle this long is closed
MAX_BODY = 16 * 1024 * 1024


class ConnectionServer(Protocol):
    """What a connection needs of its server."""

    ledger: Ledger
    ssl_context: ssl.SSLContext
    config: Any  # host and port: where the stand-in listens


class ConnectionHandler(BaseHTTPRequestHandler):
    """One client connection; a subclass answers each parsed request in ``serve()``."""

    server: ConnectionServer  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT
    fingerprint: TlsFingerprint | None = None

    # -- the connection ---------------------------------------------------------------
    def setup(self) -> None:
        raw: socket.socket = self.request
        raw.settimeout(HANDSHAKE_TIMEOUT)
        try:
            self.fingerprint = tls_fingerprint(parse_client_hello(peek_client_hello(raw)))
            self.request = self.server.ssl_context.wrap_socket(raw, server_side=True)
        except (ClientHelloError, OSError):
            # Not TLS, a handshake the client abandoned (Chromium drops the first one
            # when Playwright ignores certificate errors), a timeout: no request to log.
            self.fingerprint = None
            self.server.ledger.connection(None)
            self.request = raw
            super().setup()
            self.close_connection = True
            return
        self.server.ledger.connection(self.fingerprint.id)
        super().setup()

    def handle(self) -> None:
        if self.fingerprint is None:
            return
        super().handle()

    def handle_one_request(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                self.close_connection = True
                return
            if len(self.raw_requestline) > 65536:
                self.send_error(414, "URI Too Long")
                return
            if not self.parse_request():
                return  # parse_request answered with send_error
            self.serve()
        except TimeoutError:
            self.close_connection = True
        except ValueError as exc:  # a body length or chunk size that is not a number
            self.send_error(400, f"bad request body: {exc}")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the ledger is the log

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request the server could not parse: answered, logged, connection closed."""
        self.close_connection = True
        body = f"{code} {message or 'Bad Request'}\n".encode()
        self._log(code, ledger.BAD_REQUEST, message or str(code), None)
        self._write(code, [("Content-Type", "text/plain")], body, head=False)

    def serve(self) -> None:
        """Answer the request just parsed (the subclass's decision)."""
        raise NotImplementedError

    # -- plumbing ---------------------------------------------------------------------
    def _host(self) -> str:
        return self.headers.get("Host") or f"{self.server.config.host}:{self.server.config.port}"

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        n = int(length)
        if not 0 <= n <= MAX_BODY:
            raise ValueError(f"request body of {n} bytes")
        return self.rfile.read(n)

    def _read_chunked(self) -> bytes:
        chunks = []
        total = 0
        while True:
            size = int(self.rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers: dropped
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise ValueError("chunked request body too large")
            chunks.append(self.rfile.read(size))
            self.rfile.readline(3)

    def _write(
        self,
        status: int,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        *,
        reason: str | None = None,
        framed: bool = True,
        head: bool | None = None,
    ) -> None:
        """The whole response in one write (no Nagle stall between head and body)."""
        if head is None:
            head = self.command == "HEAD"
        if reason is None:
            reason = self.responses.get(status, ("",))[0]
        lines = [f"HTTP/1.1 {status} {reason}"]
        if not any(name.lower() == "date" for name, _ in headers):  # the upstream's stays
            lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
        lines += [f"{name}: {value}" for name, value in headers]
        if framed:
            lines.append(f"Content-Length: {len(body)}")
        lines.append("Connection: close" if self.close_connection else "Connection: keep-alive")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if framed and not head:
            data += body
        self.wfile.write(data)

    def _log(
        self,
        status: int,
        decision: str,
        reason: str | None,
        session: str | None,
        ref: str | None = None,
    ) -> None:
        """Record the response about to be sent. Before sending, not after: a client that
        reads the log once its response arrived must find the response's line there."""
        # A request that failed to parse may have no command, path or headers yet.
        headers = getattr(self, "headers", None)
        self.server.ledger.record(
            method=getattr(self, "command", None) or "-",
            path=getattr(self, "path", None) or "-",
            status=status,
            decision=decision,
            reason=reason,
            session=session,
            user_agent=headers.get("User-Agent") if headers is not None else None,
            tls=self.fingerprint.id if self.fingerprint else "-",
            client=self.client_address[0],
            ref=ref,
        )
