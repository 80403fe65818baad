"""A loopback HTTP/1.1 server that records every request head exactly as it arrived.

Header names keep their spelling and order (a browser's fingerprint is in both), which
no framework server keeps. Answers come from a ``respond`` function of the head (an
HTML page by default), with keep-alive, so a client's connection reuse shows too
(``Head.connection``: the number of the connection the request came on). With ``tls``
(an ``ssl.SSLContext``) it serves HTTPS; ``self_signed_tls`` makes one for 127.0.0.1, and
with ``http2=True`` offers ``h2`` by ALPN: a client that takes it is served HTTP/2 (the
``h2`` library), its heads recorded with their pseudo-headers (``:method``, ...) first.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Head:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    connection: int = 0
    protocol: str = "HTTP/1.1"

    @property
    def path(self) -> str:
        return self.target

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def names(self) -> list[str]:
        return [name for name, _ in self.headers]


@dataclass
class Answer:
    status: int = 200
    headers: list[tuple[str, str]] = field(
        default_factory=lambda: [("Content-Type", "text/html; charset=utf-8")]
    )
    body: bytes = b"<html><head><title>ok</title></head><body><p>ok</p></body></html>"
    close: bool = False  # close the connection after this answer
    hang: bool = False  # never answer (the client must time out)


Respond = Callable[[Head], Answer]


def default_answer(head: Head) -> Answer:
    return Answer()


class CaptureServer:
    def __init__(self, respond: Respond = default_answer, tls: ssl.SSLContext | None = None):
        self.respond = respond
        self.tls = tls
        self.heads: list[Head] = []
        self._lock = threading.Lock()
        self._connections = 0
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> CaptureServer:
        capture = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                capture._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            number = self._connections
        if self.tls is not None:
            try:
                sock = self.tls.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                return  # a client that refused our certificate
            if sock.selected_alpn_protocol() == "h2":  # type: ignore[attr-defined]
                with contextlib.suppress(OSError):
                    self._serve_h2(sock, number)
                return
        sock.settimeout(30)
        buffer = b""
        try:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    if len(buffer) > HEAD_LIMIT:
                        return
                raw, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = raw.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [tuple(line.split(": ", 1)) for line in lines[1:] if line]
                length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
                while len(buffer) < length:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
                head = Head(method, target, [(k, v) for k, v in headers], body, number)
                with self._lock:
                    self.heads.append(head)
                answer = self.respond(head)
                if answer.hang:
                    self._stop.wait(120)
                    return
                sock.sendall(_encode(answer, head))
                if answer.close:
                    return
        except (OSError, ValueError):
            return
        finally:
            with contextlib.suppress(OSError):
                sock.close()

    def _serve_h2(self, sock: socket.socket, number: int) -> None:
        import h2.config
        import h2.connection
        import h2.events

        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        connection = h2.connection.H2Connection(config=config)
        connection.initiate_connection()
        sock.sendall(connection.data_to_send())
        streams: dict[int, tuple[list[tuple[str, str]], bytearray]] = {}
        sock.settimeout(30)
        while not self._stop.is_set():
            data = sock.recv(65536)
            if not data:
                return
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    headers = [(str(k), str(v)) for k, v in event.headers or []]
                    streams[event.stream_id] = (headers, bytearray())
                    if event.stream_ended is not None:
                        self._answer_h2(connection, event.stream_id, streams, number)
                elif isinstance(event, h2.events.DataReceived):
                    streams[event.stream_id][1].extend(event.data or b"")
                    connection.acknowledge_received_data(
                        event.flow_controlled_length or 0, event.stream_id
                    )
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id in streams:
                    self._answer_h2(connection, event.stream_id, streams, number)
            sock.sendall(connection.data_to_send())

    def _answer_h2(self, connection: Any, stream: int, streams: dict[int, Any], n: int) -> None:
        headers, body = streams.pop(stream)
        pseudo = dict(h for h in headers if h[0].startswith(":"))
        head = Head(pseudo[":method"], pseudo[":path"], headers, bytes(body), n, "h2")
        with self._lock:
            self.heads.append(head)
        answer = self.respond(head)
        response = [(":status", str(answer.status))]
        response += [(name.lower(), value) for name, value in answer.headers]
        response.append(("content-length", str(len(answer.body))))
        connection.send_headers(stream, response)
        connection.send_data(stream, answer.body, end_stream=True)


def _encode(answer: Answer, head: Head) -> bytes:
    reason = {200: "OK", 302: "Found", 304: "Not Modified", 404: "Not Found"}.get(
        answer.status, "Status"
    )
    lines = [f"HTTP/1.1 {answer.status} {reason}"]
    lines += [f"{name}: {value}" for name, value in answer.headers]
    if not any(name.lower() == "content-length" for name, _ in answer.headers):
        lines.append(f"Content-Length: {len(answer.body)}")
    if answer.close:
        lines.append("Connection: close")
    payload = b"" if head.method == "HEAD" else answer.body
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


def self_signed_tls(directory: Path, *, http2: bool = False) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for 127.0.0.1 (offering h2
    by ALPN with ``http2``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    context.set_alpn_protocols(["h2", "http/1.1"] if http2 else ["http/1.1"])
    return context


def heads_of(server: CaptureServer, path: str) -> Iterator[Head]:
    return (head for head in server.heads if head.target == path)


# -- TLS ClientHellos ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientHello:
    """What a TLS client offers, GREASE values (RFC 8701) left out: they are random."""

    ciphers: tuple[int, ...]
    extensions: frozenset[int]  # Chrome permutes their order: the set is the fingerprint
    groups: tuple[int, ...]
    signature_algorithms: tuple[int, ...]
    alpn: tuple[str, ...]


def _grease(value: int) -> bool:
    return value & 0x0F0F == 0x0A0A and value >> 8 == value & 0xFF


def _u16s(data: bytes) -> tuple[int, ...]:
    values = (int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    return tuple(value for value in values if not _grease(value))


def parse_client_hello(record: bytes) -> ClientHello:
    """The first handshake message of a TLS connection (one record: its header first)."""
    body = record[5:]
    assert record[0] == 0x16 and body[0] == 0x01, "not a ClientHello"
    at = 4 + 2 + 32  # handshake header, legacy version, random
    at += 1 + body[at]  # session id
    length = int.from_bytes(body[at : at + 2], "big")
    ciphers = _u16s(body[at + 2 : at + 2 + length])
    at += 2 + length
    at += 1 + body[at]  # compression methods
    end = at + 2 + int.from_bytes(body[at : at + 2], "big")
    at += 2
    extensions: set[int] = set()
    groups: tuple[int, ...] = ()
    algorithms: tuple[int, ...] = ()
    alpn: list[str] = []
    while at < end:
        kind = int.from_bytes(body[at : at + 2], "big")
        size = int.from_bytes(body[at + 2 : at + 4], "big")
        data = body[at + 4 : at + 4 + size]
        at += 4 + size
        if _grease(kind):
            continue
        extensions.add(kind)
        if kind == 10:  # supported_groups
            groups = _u16s(data[2:])
        elif kind == 13:  # signature_algorithms
            algorithms = _u16s(data[2:])
        elif kind == 16:  # application_layer_protocol_negotiation
            i = 2
            while i < len(data):
                alpn.append(data[i + 1 : i + 1 + data[i]].decode())
                i += 1 + data[i]
    return ClientHello(ciphers, frozenset(extensions), groups, algorithms, tuple(alpn))


class HelloServer:
    """A loopback TCP server that reads each connection's ClientHello and hangs up."""

    def __init__(self) -> None:
        self.hellos: list[ClientHello] = []
        self._server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HelloServer:
        hellos = self.hellos

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(10)
                data = b""
                with contextlib.suppress(OSError):
                    while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                        chunk = self.request.recv(65536)
                        if not chunk:
                            return
                        data += chunk
                    hellos.append(parse_client_hello(data))

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
