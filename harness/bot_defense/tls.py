"""The TLS ClientHello as an edge sees it before the handshake, and its fingerprint.

Bot defenses (Akamai, Cloudflare, DataDome) fingerprint the ClientHello because an HTTP
library cannot hide its TLS stack behind a User-Agent: OpenSSL, Go, Twisted or
BoringSSL each offer their own ciphers, extensions and curves. ``peek_client_hello``
reads the first TLS record without consuming it (the ``ssl`` handshake then reads the
same bytes), ``parse_client_hello`` decodes it, ``tls_fingerprint`` reduces it to a
stable identity.
"""

from __future__ import annotations

import hashlib
import socket
from dataclasses import dataclass

# RFC 8701: the values a client sprinkles in its lists so servers stay tolerant; they
# change per connection, so they are never part of an identity.
GREASE = frozenset(0x0A0A + 0x1010 * i for i in range(16))

SERVER_NAME = 0
SUPPORTED_GROUPS = 10
SIGNATURE_ALGORITHMS = 13
ALPN = 16
PADDING = 21
PRE_SHARED_KEY = 41
EARLY_DATA = 42
SUPPORTED_VERSIONS = 43
# Present or not depending on the host (SNI is absent for an IP address), the record's
# size (padding) or whether the connection resumes a session (PSK, 0-RTT): none of that
# is the client's identity. ALPN is kept, as its own list.
VARIABLE_EXTENSIONS = frozenset({SERVER_NAME, ALPN, PADDING, PRE_SHARED_KEY, EARLY_DATA})

RECORD_HEADER = 5
HANDSHAKE = 0x16
CLIENT_HELLO = 0x01
MAX_RECORD = 16384 + 2048  # TLSPlaintext limit, with the slack RFC 8446 allows ciphertext
VERSIONS = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3"}


class ClientHelloError(ValueError):
    """The bytes are not a TLS ClientHello (or a truncated one)."""


@dataclass(frozen=True)
class ClientHello:
    """What a ClientHello offers, lists in wire order, GREASE included."""

    legacy_version: int
    cipher_suites: tuple[int, ...]
    extensions: tuple[tuple[int, bytes], ...]  # (type, data)
    supported_groups: tuple[int, ...] = ()
    signature_algorithms: tuple[int, ...] = ()
    alpn: tuple[str, ...] = ()
    supported_versions: tuple[int, ...] = ()
    server_name: str | None = None

    @property
    def extension_types(self) -> tuple[int, ...]:
        return tuple(kind for kind, _ in self.extensions)


@dataclass(frozen=True)
class TlsFingerprint:
    """``id``: short and stable, for allowlists and logs; ``full``: the readable form it
    hashes, to see what differs between two clients."""

    id: str
    full: str


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ClientHelloError("truncated ClientHello")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vector(self, length_bytes: int) -> bytes:
        return self.take(self.uint(length_bytes))


def _u16_list(data: bytes) -> tuple[int, ...]:
    if len(data) % 2:
        raise ClientHelloError("odd-length list of 16-bit values")
    return tuple(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))


def record_length(prefix: bytes) -> int:
    """Bytes the first TLS record takes, read from its 5-byte header."""
    if len(prefix) < RECORD_HEADER:
        raise ClientHelloError("no TLS record header")
    if prefix[0] != HANDSHAKE:
        raise ClientHelloError(f"not a TLS handshake record (first byte 0x{prefix[0]:02x})")
    length = int.from_bytes(prefix[3:5], "big")
    if not 0 < length <= MAX_RECORD:
        raise ClientHelloError(f"TLS record length {length} out of range")
    return RECORD_HEADER + length


def parse_client_hello(record: bytes) -> ClientHello:
    """Decode the ClientHello in the first TLS record (header included).

    A hello longer than one record (never seen from a browser: theirs fit in 2 KB) is
    read as far as the record goes and fails as truncated.
    """
    body = _Reader(record[RECORD_HEADER : record_length(record)])
    if body.uint(1) != CLIENT_HELLO:
        raise ClientHelloError("first handshake message is not a ClientHello")
    hello = _Reader(body.take(body.uint(3)))
    legacy_version = hello.uint(2)
    hello.take(32)  # random
    hello.vector(1)  # legacy_session_id
    cipher_suites = _u16_list(hello.vector(2))
    hello.vector(1)  # legacy_compression_methods
    extensions: list[tuple[int, bytes]] = []
    if hello.pos < len(hello.data):
        block = _Reader(hello.vector(2))
        while block.pos < len(block.data):
            kind = block.uint(2)
            extensions.append((kind, block.vector(2)))
    fields = _known_extensions(extensions)
    return ClientHello(legacy_version, cipher_suites, tuple(extensions), **fields)


def _known_extensions(extensions: list[tuple[int, bytes]]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for kind, data in extensions:
        value = _Reader(data)
        if kind == SUPPORTED_GROUPS:
            fields["supported_groups"] = _u16_list(value.vector(2))
        elif kind == SIGNATURE_ALGORITHMS:
            fields["signature_algorithms"] = _u16_list(value.vector(2))
        elif kind == SUPPORTED_VERSIONS:
            fields["supported_versions"] = _u16_list(value.vector(1))
        elif kind == ALPN:
            names = _Reader(value.vector(2))
            protocols = []
            while names.pos < len(names.data):
                protocols.append(names.vector(1).decode("ascii", "replace"))
            fields["alpn"] = tuple(protocols)
        elif kind == SERVER_NAME:
            names = _Reader(value.vector(2))
            if names.uint(1) == 0:  # host_name
                fields["server_name"] = names.vector(2).decode("ascii", "replace")
    return fields


def tls_fingerprint(hello: ClientHello) -> TlsFingerprint:
    """The client's TLS identity: equal for every connection of one TLS stack and
    configuration, whatever the host, the connection's state or the GREASE drawn.

    Built like JA4 from what the client *offers*, not from the order it sends
    extensions in (Chrome shuffles them per connection since version 110):

    - GREASE values (0x0a0a, 0x1a1a, ... 0xfafa) are dropped from every list;
    - the TLS version is the highest non-GREASE supported_versions entry (else the
      legacy version): ``t13``, ``t12``, ...;
    - cipher suites are sorted;
    - extension types are sorted, without those that vary by connection: server_name
      (0; absent for an IP address), ALPN (16; kept as its own list), padding (21),
      pre_shared_key (41) and early_data (42) (a resumed session adds them);
    - supported groups, signature algorithms and ALPN protocols keep their order (a
      stack's preference order is part of its identity).

    ``full`` is the readable form, e.g. ``t13 ciphers=002f,... ext=0005,... groups=...
    sigalgs=... alpn=h2,http/1.1``; ``id`` is ``t13_<ciphers>_<extensions>_<12 hex>``,
    the counts and the first 12 hex digits of the SHA-256 of ``full``.
    """
    versions = [v for v in hello.supported_versions if v not in GREASE]
    version = max(versions) if versions else hello.legacy_version
    label = "t" + VERSIONS.get(version, f"{version:04x}")
    ciphers = sorted(c for c in hello.cipher_suites if c not in GREASE)
    extensions = sorted(
        {t for t in hello.extension_types if t not in GREASE and t not in VARIABLE_EXTENSIONS}
    )
    groups = [g for g in hello.supported_groups if g not in GREASE]
    sigalgs = [s for s in hello.signature_algorithms if s not in GREASE]
    # GREASE ALPN names (RFC 8701 reserves protocol ids too) are not real protocols.
    alpn = [p for p in hello.alpn if not _grease_alpn(p)]
    full = (
        f"{label} ciphers={_hex(ciphers)} ext={_hex(extensions)} groups={_hex(groups)}"
        f" sigalgs={_hex(sigalgs)} alpn={','.join(alpn)}"
    )
    digest = hashlib.sha256(full.encode()).hexdigest()[:12]
    return TlsFingerprint(f"{label}_{len(ciphers):02d}_{len(extensions):02d}_{digest}", full)


def _hex(values: list[int]) -> str:
    return ",".join(f"{v:04x}" for v in values)


def _grease_alpn(protocol: str) -> bool:
    raw = protocol.encode("latin-1", "replace")
    return len(raw) == 2 and raw[0] == raw[1] and raw[0] & 0x0F == 0x0A


def peek_client_hello(sock: socket.socket) -> bytes:
    """The connection's first TLS record, left unread in the socket for the handshake.

    Uses the socket's timeout; raises ClientHelloError when the peer closes or sends
    something else first (plain HTTP on the TLS port, say).
    """
    head = _peek(sock, RECORD_HEADER)
    return _peek(sock, record_length(head))


def _peek(sock: socket.socket, n: int) -> bytes:
    # MSG_WAITALL with MSG_PEEK waits on Linux until n bytes are queued; a shorter
    # answer means the peer closed (or sent less and stopped): not a ClientHello.
    data = sock.recv(n, socket.MSG_PEEK | socket.MSG_WAITALL)
    if len(data) < n:
        raise ClientHelloError(f"connection gave {len(data)} of {n} bytes of a TLS record")
    return data
