"""Levels 3 and 4: challenge nonces, sealed session cookies, per-session rate limits.

A session cookie is ``<payload>.<mac>``: base64url JSON (session id, expiry, and what it
is bound to: a hash of the User-Agent, the client's address, the TLS fingerprint of the
connection that solved the challenge) and its HMAC-SHA256 under a secret drawn at
process start. Like cf_clearance, it is worthless to another browser, another machine or
another TLS stack, and a restart of the stand-in voids every cookie.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

# The cookie's name, in one place (the platform's docs and the tests read it from here).
COOKIE_NAME = "__defense_session"
NONCE_TTL = 300.0  # seconds a challenge page's nonce stays solvable
# Leading zero bits of SHA-256("<nonce>:<answer>"): 2**13 digests on average, which
# Chromium's WebCrypto does in ~110 ms on average at 13 us a digest (median ~60 ms; 1 in
# 10 over 160 ms): a real cost per session, no noticeable wait for a person.
DIFFICULTY = 13
_SPENT_NONCES = 100_000  # a nonce mints one session; remembered this many back

# Why a cookie does not let a request through (the challenge's log reasons).
NO_COOKIE = "no_cookie"
TAMPERED = "tampered"
EXPIRED = "expired"
FOREIGN_UA = "foreign_ua"
FOREIGN_CLIENT = "foreign_client"
FOREIGN_TLS = "foreign_tls"
# Why a verify POST is refused.
MALFORMED = "malformed"
BAD_NONCE = "bad_nonce"
STALE_NONCE = "stale_nonce"
SPENT_NONCE = "spent_nonce"
WEBDRIVER = "webdriver"
BAD_ANSWER = "bad_answer"
# Why level 4 answers with a CAPTCHA.
RATE = "rate"
BURNT = "burnt"


@dataclass(frozen=True)
class Binding:
    """What a session is bound to: the requester as the edge sees it."""

    user_agent: str
    client: str
    tls: str

    @property
    def ua_hash(self) -> str:
        return hashlib.sha256(self.user_agent.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Opened:
    """A cookie whose seal holds: its session id, and why it fails (None: it is good)."""

    session: str
    problem: str | None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def leading_zero_bits(digest: bytes) -> int:
    bits = 0
    for byte in digest:
        if byte:
            return bits + 8 - byte.bit_length()
        bits += 8
    return bits


def pow_ok(nonce: str, answer: int, difficulty: int) -> bool:
    """Whether ``answer`` solves the challenge's proof of work (as the page computes it)."""
    digest = hashlib.sha256(f"{nonce}:{answer}".encode()).digest()
    return leading_zero_bits(digest) >= difficulty


@dataclass
class _Session:
    hits: deque[float] = field(default_factory=deque)
    burnt: bool = False


class Sessions:
    """Nonces, cookies and per-session request windows; safe to share between threads."""

    def __init__(
        self,
        *,
        ttl: float,
        rate: int,
        window: float,
        difficulty: int = DIFFICULTY,
        secret: bytes | None = None,
    ) -> None:
        self.ttl = ttl
        self.rate = rate
        self.window = window
        self.difficulty = difficulty
        self._secret = secret or secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._spent: OrderedDict[str, None] = OrderedDict()

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._secret, data, hashlib.sha256).digest()

    # -- the challenge ----------------------------------------------------------------
    def nonce(self, now: float | None = None) -> str:
        """A fresh challenge nonce: random, timestamped, signed (no server state)."""
        issued = int(now if now is not None else time.time())
        body = f"{secrets.token_hex(8)}.{issued}"
        return f"{body}.{self._mac(body.encode()).hex()[:16]}"

    def verify(self, payload: object, now: float | None = None) -> str | None:
        """Why a verify POST's JSON is refused, or None when it solves a live nonce.

        A good answer spends its nonce: one challenge page mints one session.
        """
        now = now if now is not None else time.time()
        if not isinstance(payload, dict):
            return MALFORMED
        nonce, answer = payload.get("nonce"), payload.get("answer")
        if not isinstance(nonce, str) or not isinstance(answer, int) or isinstance(answer, bool):
            return MALFORMED
        body, _, mac = nonce.rpartition(".")
        if not hmac.compare_digest(mac, self._mac(body.encode()).hex()[:16]):
            return BAD_NONCE
        try:
            issued = int(body.rpartition(".")[2])
        except ValueError:
            return BAD_NONCE
        if not 0 <= now - issued <= NONCE_TTL:
            return STALE_NONCE
        if payload.get("webdriver") is not False:
            return WEBDRIVER
        if answer < 0 or not pow_ok(nonce, answer, self.difficulty):
            return BAD_ANSWER
        with self._lock:
            if nonce in self._spent:
                return SPENT_NONCE
            self._spent[nonce] = None
            while len(self._spent) > _SPENT_NONCES:
                self._spent.popitem(last=False)
        return None

    # -- cookies ----------------------------------------------------------------------
    def issue(self, binding: Binding, now: float | None = None) -> tuple[str, str]:
        """A new session for ``binding``: (session id, sealed cookie value)."""
        session = secrets.token_hex(8)
        expires = math.ceil((now if now is not None else time.time()) + self.ttl)
        claims = {
            "sid": session,
            "exp": expires,
            "ua": binding.ua_hash,
            "ip": binding.client,
            "tls": binding.tls,
        }
        payload = json.dumps(claims, separators=(",", ":")).encode()
        with self._lock:
            self._sessions[session] = _Session()
        return session, f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def open(self, value: str | None, binding: Binding, now: float | None = None) -> Opened | str:
        """The cookie's session and whether it holds for ``binding``; a reason string
        when there is no session to speak of (no cookie, a broken seal)."""
        if not value:
            return NO_COOKIE
        payload_b64, _, mac_b64 = value.partition(".")
        try:
            payload, mac = _unb64(payload_b64), _unb64(mac_b64)
        except (binascii.Error, ValueError):
            return TAMPERED
        if not hmac.compare_digest(mac, self._mac(payload)):
            return TAMPERED
        claims = json.loads(payload)  # sealed by us: well-formed
        session = str(claims["sid"])
        now = now if now is not None else time.time()
        problem = None
        if now >= claims["exp"]:
            problem = EXPIRED
        elif claims["ua"] != binding.ua_hash:
            problem = FOREIGN_UA
        elif claims["ip"] != binding.client:
            problem = FOREIGN_CLIENT
        elif claims["tls"] != binding.tls:
            problem = FOREIGN_TLS
        return Opened(session, problem)

    # -- level 4 ----------------------------------------------------------------------
    def burnt(self, session: str) -> bool:
        with self._lock:
            state = self._sessions.get(session)
            return state is not None and state.burnt

    def hit(self, session: str, now: float | None = None) -> str | None:
        """Count one request of ``session``: None while within the rate, ``burnt`` for
        a burnt session, ``rate`` for the request that exceeds it (burning it)."""
        now = now if now is not None else time.monotonic()
        with self._lock:
            state = self._sessions.setdefault(session, _Session())
            if state.burnt:
                return BURNT
            while state.hits and state.hits[0] <= now - self.window:
                state.hits.popleft()
            if len(state.hits) >= self.rate:
                state.burnt = True
                state.hits.clear()
                return RATE
            state.hits.append(now)
            return None
