"""The stand-in itself: a threaded HTTPS reverse proxy that decides, per request, whether
a client gets the upstream's page or a vendor's refusal (see ``harness.bot_defense``).

One thread per client connection. Before the TLS handshake the thread peeks at the
ClientHello and fingerprints it; then it serves HTTP/1.1 requests on the connection
(keep-alive) until the client closes or idles out, relaying the ones that pass through
a shared pool of upstream connections.

Raw socketserver, not the loopback base (``standins.loopback``, aiohttp): it fingerprints
each connection's ClientHello before the TLS handshake, which aiohttp never hands a handler.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socketserver
import ssl
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.bot_defense import ledger, pages, rules, sessions, styles
from harness.bot_defense.http_io import ConnectionHandler
from harness.bot_defense.ledger import Ledger
from harness.bot_defense.sessions import Binding, Opened, Sessions
from harness.bot_defense.upstream import UpstreamPool
from harness.http_framing import hop_by_hop

MAX_LEVEL = 4
LEARN_PATH = "/__defense/learn"
STATS_PATHS = frozenset({"/__defense/stats", "/__proxy/stats"})
CLEAR_PATH = "/__defense/clear"
ROBOTS_PATH = "/robots.txt"
# Besides the hop-by-hop headers (harness.http_framing.hop_by_hop): a request's Host and
# Expect are answered here (Host is re-added as the client sent it), its length and
# cookies re-made; an answer's length is this connection's own.
_REQUEST_DROPPED = frozenset({"host", "expect", "content-length", "cookie"})
_RESPONSE_DROPPED = frozenset({"content-length"})
_NO_STORE = "private, max-age=0, no-store, no-cache, must-revalidate"


@dataclass(frozen=True)
class Config:
    upstream: str
    level: int
    host: str = "127.0.0.1"
    port: int = 8443
    cert: Path = Path("bot-defense.crt")
    key: Path = Path("bot-defense.key")
    log: Path | None = None
    cookie_ttl: float = 600.0
    session_rate: int = 20
    rate_window: float = 10.0
    difficulty: int = sessions.DIFFICULTY
    allow: tuple[str, ...] = ()
    style: str = "cloudflare"  # harness.bot_defense.styles
    challenge_robots: bool = False  # robots.txt challenged like any path (level 3+)

    def __post_init__(self) -> None:
        if not 0 <= self.level <= MAX_LEVEL:
            raise ValueError(f"level must be 0..{MAX_LEVEL}, not {self.level}")
        if self.style not in styles.STYLES:
            raise ValueError(f"style must be one of {styles.STYLES}, not {self.style!r}")

    @property
    def cookie_name(self) -> str:
        return styles.cookie_name(self.style)


@dataclass
class Reply:
    """A response the stand-in makes itself (a refusal, or the verify POST's answer)."""

    status: int
    decision: str
    reason: str | None
    body: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    session: str | None = None
    ref: str | None = None


@dataclass(frozen=True)
class Relay:
    """Pass the request to the upstream; ``session``: its session id for the log."""

    session: str | None = None


class DefenseServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, config: Config) -> None:
        self.config = config
        self.ledger = Ledger(config.log)
        self.sessions = Sessions(
            ttl=config.cookie_ttl,
            rate=config.session_rate,
            window=config.rate_window,
            difficulty=config.difficulty,
        )
        self.upstream = UpstreamPool(config.upstream)
        self.allowlist: dict[str, str] = dict.fromkeys(config.allow, "(--allow-fingerprint)")
        # Until learning is over only the learn page is served, and nothing is logged.
        self.learning = config.level >= 2
        self.learned: dict[str, str] = {}
        self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ssl_context.load_cert_chain(config.cert, config.key)
        # HTTP/1.1 only: the log's one-line-per-response and the relaying stay simple,
        # and Chromium and curl_cffi both fall back to it without a change of ClientHello.
        self.ssl_context.set_alpn_protocols(["http/1.1"])
        super().__init__((config.host, config.port), DefenseHandler)

    def finish_learning(self) -> None:
        self.allowlist.update(self.learned)
        self.learning = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that resets or drops a connection is normal traffic, not a crash.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def stats(self) -> dict[str, Any]:
        config = self.config
        return {
            "ready": not self.learning,
            "level": config.level,
            "upstream": config.upstream,
            "style": config.style,
            "challenge_robots": config.challenge_robots,
            "cookie_name": config.cookie_name,
            "cookie_ttl": config.cookie_ttl,
            "session_rate": config.session_rate,
            "rate_window": config.rate_window,
            "difficulty": config.difficulty,
            "allowlist": [{"id": fid, "full": full} for fid, full in self.allowlist.items()],
            **self.ledger.snapshot(),
        }


class DefenseHandler(ConnectionHandler):
    """Decides per request: the stand-in's own answer (a refusal, a challenge) or a relay."""

    server: DefenseServer

    # -- one request ------------------------------------------------------------------
    def serve(self) -> None:
        server = self.server
        target = urlsplit(self.path)
        path = target.path or "/"
        if path in STATS_PATHS or path == CLEAR_PATH:
            self._internal(path)
            return
        body = self._read_body()
        if server.learning:
            self._learn(path)
            return
        decision = self._decide(path, body)
        if isinstance(decision, Reply):
            self._reply(decision)
            return
        target_path = target.path + (f"?{target.query}" if target.query else "")
        self._relay(target_path, body, decision.session)

    def _decide(self, path: str, body: bytes) -> Reply | Relay:
        """What the stand-in answers itself, or a Relay (levels are cumulative)."""
        server, level = self.server, self.server.config.level
        assert self.fingerprint is not None
        if level >= 2 and self.fingerprint.id not in server.allowlist:
            return self._tls_refusal()
        if level >= 1 and (problem := rules.header_problem(self.headers)):
            page = styles.headers_refusal(server.config.style, self._host())
            headers = page.headers
            return Reply(page.status, ledger.HEADERS, problem, page.body, headers, ref=page.ref)
        if level < 3:
            return Relay()
        if path == pages.VERIFY_PATH and self.command == "POST":
            return self._verify(body)
        cookie, _ = _split_cookies(self.headers.get_all("Cookie") or [], server.config.cookie_name)
        opened = server.sessions.open(cookie, self._binding())
        if path == ROBOTS_PATH and not server.config.challenge_robots:
            # Crawlers must be able to read the rules without a session.
            return Relay(opened.session if isinstance(opened, Opened) else None)
        if not isinstance(opened, Opened):
            return self._challenge(opened, None)
        if level >= 4 and server.sessions.burnt(opened.session):
            return self._captcha(sessions.BURNT, opened.session)
        if opened.problem is not None:
            return self._challenge(opened.problem, opened.session)
        if level >= 4 and (limit := server.sessions.hit(opened.session)):
            return self._captcha(limit, opened.session)
        return Relay(opened.session)

    def _binding(self) -> Binding:
        assert self.fingerprint is not None
        user_agent = self.headers.get("User-Agent") or ""
        return Binding(user_agent, self.client_address[0], self.fingerprint.id)

    def _tls_refusal(self) -> Reply:
        reference = f"{secrets.token_hex(4)}.{int(time.time())}.{secrets.token_hex(4)[:7]}"
        url = f"https://{self._host()}{self.path}"
        return Reply(
            403,
            ledger.TLS,
            "unlisted_fingerprint",
            pages.tls_block(url, reference),
            [("Server", "AkamaiGHost"), ("Mime-Version", "1.0"), ("Cache-Control", _NO_STORE)],
            ref=f"18.{reference}",
        )

    def _challenge(self, reason: str, session: str | None) -> Reply:
        config = self.server.config
        nonce = self.server.sessions.nonce()
        page = styles.challenge(config.style, self._host(), nonce, config.difficulty, self.path)
        return Reply(
            page.status, ledger.CHALLENGE, reason, page.body, page.headers, session, page.ref
        )

    def _captcha(self, reason: str, session: str) -> Reply:
        cid = secrets.token_urlsafe(24)
        headers = [("X-DataDome", "protected"), ("Cache-Control", _NO_STORE)]
        page = pages.captcha(self._host(), cid)
        return Reply(403, ledger.CAPTCHA, reason, page, headers, session, cid)

    def _verify(self, body: bytes) -> Reply:
        """The challenge's POST: a cookie for a right answer, 403 JSON otherwise."""
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        problem = self.server.sessions.verify(payload)
        if problem is not None:
            answer = json.dumps({"ok": False, "reason": problem})
            headers = [("Content-Type", "application/json"), ("Cache-Control", _NO_STORE)]
            return Reply(403, ledger.VERIFY_FAILED, problem, answer, headers)
        config = self.server.config
        session, value = self.server.sessions.issue(self._binding())
        headers, answer = styles.verified(config.style, value, int(config.cookie_ttl))
        return Reply(200, ledger.VERIFIED, None, answer, headers, session)

    def _reply(self, reply: Reply) -> None:
        headers = reply.headers
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers = [("Content-Type", "text/html; charset=UTF-8"), *headers]
        self._log(reply.status, reply.decision, reply.reason, reply.session, reply.ref)
        self._write(reply.status, headers, reply.body.encode())

    # -- relaying ---------------------------------------------------------------------
    def _relay(self, target: str, body: bytes, session: str | None) -> None:
        server = self.server
        cookies = self.headers.get_all("Cookie") or []
        _, others = _split_cookies(cookies, server.config.cookie_name)
        dropped = hop_by_hop(self.headers.items()) | _REQUEST_DROPPED
        headers = [("Host", self._host())]
        headers += [
            (name, value) for name, value in self.headers.items() if name.lower() not in dropped
        ]
        if others:
            headers.append(("Cookie", others))
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers.append(("Content-Length", str(len(body))))
        headers.append(("X-Forwarded-For", self.client_address[0]))
        # The upstream builds absolute URLs (sitemaps, canonical links) from Host and
        # this: they must point back at the stand-in, not at the plain-HTTP upstream.
        headers.append(("X-Forwarded-Proto", "https"))
        try:
            answer = server.upstream.request(self.command, target, headers, body)
        except Exception as exc:  # any upstream failure (OSError, HTTPException) is a 502
            message = f"502 upstream error: {type(exc).__name__}\n".encode()
            self._log(502, ledger.PASS, "upstream_error", session)
            self._write(502, [("Content-Type", "text/plain")], message)
            return
        dropped = hop_by_hop(answer.headers) | _RESPONSE_DROPPED
        out = [(name, value) for name, value in answer.headers if name.lower() not in dropped]
        no_body = self.command == "HEAD" or answer.status in (204, 304) or answer.status < 200
        if self.command == "HEAD":
            out += [(n, v) for n, v in answer.headers if n.lower() == "content-length"]
        self._log(answer.status, ledger.PASS, None, session)
        self._write(answer.status, out, answer.body, reason=answer.reason, framed=not no_body)

    # -- internal endpoints -----------------------------------------------------------
    def _internal(self, path: str) -> None:
        self._read_body()
        server = self.server
        if path == CLEAR_PATH:
            if self.command != "POST":
                self._write(405, [("Allow", "POST")], b"")
                return
            server.ledger.clear()
        status = 503 if server.learning else 200
        data = json.dumps(server.stats()).encode()
        self._write(status, [("Content-Type", "application/json")], data)

    def _learn(self, path: str) -> None:
        assert self.fingerprint is not None
        if path != LEARN_PATH:
            self._write(404, [("Content-Type", "text/plain")], b"learning\n")
            return
        self.server.learned[self.fingerprint.id] = self.fingerprint.full
        page = pages.learn_page(self.fingerprint.id).encode()
        self._write(200, [("Content-Type", "text/html; charset=utf-8")], page)


def _split_cookies(values: Sequence[str], name: str) -> tuple[str | None, str]:
    """(the value of cookie ``name`` or None, the other cookies as one header value)."""
    ours: str | None = None
    others = []
    for header in values:
        for part in header.split(";"):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            if sep and key.strip() == name:
                ours = value.strip().strip('"')
            else:
                others.append(part)
    return ours, "; ".join(others)


def serve_in_thread(server: DefenseServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="bot-defense", daemon=True)
    thread.start()
    return thread


def close(server: DefenseServer) -> None:
    with contextlib.suppress(Exception):
        server.shutdown()
    server.server_close()
    server.upstream.close()
