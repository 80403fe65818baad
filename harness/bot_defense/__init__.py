"""A local stand-in for DataDome / AWS WAF / Cloudflare-class bot defenses.

``python -m harness.bot_defense --upstream http://127.0.0.1:8000 --level N [--port P]
[--log FILE] [--cookie-ttl S] [--session-rate N --rate-window S] [--chromium PATH]
[--allow-fingerprint FP ...]``

An HTTPS-only reverse proxy (self-signed certificate, ALPN ``http/1.1``, keep-alive)
put in front of the demo shop, so tests and ``bench.access`` can measure how the
platform gets pages past each kind of defense. Levels are cumulative:

0. pass-through (still TLS, still logged);
1. header consistency (``rules``): a browser's UA, client hints that match it, a real
   ``Accept-Language``, ``Sec-Fetch-*`` on navigations; else Cloudflare's Error 1010;
2. the TLS ClientHello's fingerprint (``tls``) must be one Debian's Chromium sent when
   asked at start (``learn``); else Akamai's "Access Denied";
3. a JavaScript challenge (Cloudflare's "Just a moment..."): a proof of work that
   automation-marked browsers refuse to run, rewarded with a sealed session cookie
   bound to the UA, the client address and the TLS fingerprint (``sessions``);
4. a per-session rate limit whose excess burns the session: DataDome's CAPTCHA page
   for every later request with that cookie.

Its own log (``ledger``) has one JSONL line per response it sends, and
``GET /__defense/stats`` the same counts. docs/bot-defense.md has the details.
"""

from harness.bot_defense.ledger import DECISIONS
from harness.bot_defense.pages import (
    CAPTCHA_SCRIPT,
    CAPTCHA_TEXT,
    CHALLENGE_TITLE,
    HEADERS_BLOCK_DETAIL,
    HEADERS_BLOCK_TEXT,
    HEADERS_BLOCK_TITLE,
    TLS_BLOCK_TITLE,
    VERIFY_PATH,
)
from harness.bot_defense.service import BotDefense
from harness.bot_defense.sessions import COOKIE_NAME, DIFFICULTY
from harness.bot_defense.tls import (
    ClientHello,
    TlsFingerprint,
    parse_client_hello,
    tls_fingerprint,
)

__all__ = [
    "CAPTCHA_SCRIPT",
    "CAPTCHA_TEXT",
    "CHALLENGE_TITLE",
    "COOKIE_NAME",
    "DECISIONS",
    "DIFFICULTY",
    "HEADERS_BLOCK_DETAIL",
    "HEADERS_BLOCK_TEXT",
    "HEADERS_BLOCK_TITLE",
    "TLS_BLOCK_TITLE",
    "VERIFY_PATH",
    "BotDefense",
    "ClientHello",
    "TlsFingerprint",
    "parse_client_hello",
    "tls_fingerprint",
]
