"""A local stand-in for DataDome / AWS WAF / Cloudflare-class bot defenses.

``python -m harness.bot_defense --upstream http://127.0.0.1:8000 --level N [--port P]
[--log FILE] [--cookie-ttl S] [--session-rate N --rate-window S] [--chromium PATH]
[--allow-fingerprint FP ...]``

An HTTPS-only reverse proxy in front of the demo shop, so tests and ``bench.access`` can
measure how the platform gets pages past each kind of defense. Levels are cumulative:
0 pass-through, 1 header consistency, 2 the TLS ClientHello's fingerprint, 3 a JavaScript
challenge with a bound session cookie, 4 a per-session rate limit answered by a CAPTCHA.
Its own log has one JSONL line per response (``GET /__defense/stats``: the counts).
Levels, wire and log: docs/bot-defense.md.
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
