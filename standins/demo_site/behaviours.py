"""Switchable misbehaviour for tests: block pages, slowness, errors and broken pages.

A behaviour (``error_burst``, ``unavailable``, ``redirect_loop``, ``offsite_redirect``,
``forbidden``, ``throttle``, ``captcha``, ``slow``, ``malformed_html``, ``bad_encoding``,
``huge_page``, ``unreadable``) is set globally, per client (the ``X-Demo-Client`` header)
or for one request (``?__behaviour=name``), as a JSON setting. Which requests it hits is
deterministic (a seeded hash of the request's key under ``rate``, the first ``attempts``
requests of the scope), so a retry can succeed.

Reads: the settings posted to ``/__control``. Each behaviour's settings and the rate
rule: docs/demo-site.md "Behaviours for tests".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from aiohttp import web

BEHAVIOURS: dict[str, dict[str, Any]] = {
    "error_burst": {"count": 5},
    "unavailable": {"rate": 1.0, "attempts": 1},
    "redirect_loop": {"rate": 1.0},
    "offsite_redirect": {"rate": 1.0},
    "forbidden": {"rate": 1.0, "attempts": 1},
    "throttle": {"rate": 1.0, "attempts": 1, "retry_after": 1},
    "captcha": {"rate": 1.0, "attempts": 1},
    "slow": {"rate": 1.0, "ms": 500},
    "malformed_html": {"rate": 1.0},
    "bad_encoding": {"rate": 1.0},
    "huge_page": {"rate": 1.0, "mb": 20},
    "unreadable": {"rate": 1.0},
}
BLOCKS = ("forbidden", "throttle", "captcha")
# Behaviours that count a selected key's attempts (the rate rule below).
COUNTED = (*BLOCKS, "unavailable")
# Bounds keep a typo in a test from hanging the site or exhausting memory.
_LIMITS: dict[str, tuple[float, float]] = {
    "rate": (0.0, 1.0),
    "attempts": (1, 1_000_000),
    "count": (0, 1_000_000),
    "retry_after": (0, 3600),
    "ms": (0, 120_000),
    "mb": (0.001, 200),
}


class BehaviourError(ValueError):
    """A control request named an unknown behaviour or gave a bad parameter."""


def normalize(name: str, spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """``spec`` validated and completed with defaults (values may be strings)."""
    if name not in BEHAVIOURS:
        raise BehaviourError(f"unknown behaviour {name!r}; known: {', '.join(BEHAVIOURS)}")
    defaults = BEHAVIOURS[name]
    result: dict[str, Any] = {**defaults, "paths": None}
    for key, value in (spec or {}).items():
        if key == "paths":
            if value is not None and (
                not isinstance(value, list) or not all(isinstance(p, str) for p in value)
            ):
                raise BehaviourError(f"{name}.paths must be a list of path prefixes or null")
            result["paths"] = value
            continue
        if key not in defaults:
            raise BehaviourError(f"{name} takes {', '.join([*defaults, 'paths'])}, not {key!r}")
        if value is None and key == "attempts":
            result[key] = None  # block every request of a selected key
            continue
        kind = type(defaults[key])
        try:
            number = kind(value)
        except (TypeError, ValueError) as exc:
            raise BehaviourError(f"{name}.{key} must be a number, got {value!r}") from exc
        low, high = _LIMITS[key]
        if not low <= number <= high:
            raise BehaviourError(f"{name}.{key} must be within [{low}, {high}]")
        result[key] = number
    return result


def selected(seed: int, name: str, key: str, rate: float) -> bool:
    """Whether ``key`` falls in the ``rate`` fraction chosen for behaviour ``name``."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.blake2b(f"{seed}:{name}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


@dataclass
class Decision:
    response: web.Response | None = None  # answer instead of the page
    delay_ms: int = 0
    transforms: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)


class BehaviourEngine:
    """The configured behaviours and the counters their rules need."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.global_specs: dict[str, dict[str, Any]] = {}
        self.client_specs: dict[str, dict[str, dict[str, Any]]] = {}
        self._attempts: dict[tuple[str, str, str], int] = {}
        self._burst_left: dict[str, int] = {}  # scope -> error_burst requests still to fail

    def reset(self) -> None:
        self.global_specs.clear()
        self.client_specs.clear()
        self._attempts.clear()
        self._burst_left.clear()

    def reseed(self, seed: int) -> None:
        """A new seed for the rate rule; attempt counts start afresh."""
        self.seed = seed
        self._attempts.clear()

    def configure(
        self,
        behaviours: Mapping[str, Any] | None = None,
        clients: Mapping[str, Any] | None = None,
    ) -> None:
        """Merge settings: ``{name: spec}`` sets a behaviour, ``{name: null}`` removes it.

        ``clients`` maps a client name to such a mapping, or to null to drop all of that
        client's settings. Everything is validated before anything changes.
        """
        new_global = self._merged(self.global_specs, behaviours, "global")
        new_clients = {name: dict(specs) for name, specs in self.client_specs.items()}
        touched: list[tuple[str, str]] = [(name, "global") for name in behaviours or {}]
        for client, specs in (clients or {}).items():
            if specs is None:
                new_clients.pop(client, None)
                continue
            if not isinstance(specs, Mapping):
                raise BehaviourError(f"clients.{client} must be an object or null")
            new_clients[client] = self._merged(
                new_clients.get(client, {}), specs, f"client:{client}"
            )
            touched += [(name, f"client:{client}") for name in specs]
        self.global_specs = new_global
        self.client_specs = {name: specs for name, specs in new_clients.items() if specs}
        # A (re)configured behaviour starts afresh: its attempt counts and burst budget.
        for name, scope in touched:
            self._attempts = {k: v for k, v in self._attempts.items() if k[:2] != (scope, name)}
            if name == "error_burst":
                spec = self._spec_in(scope, name)
                if spec is None:
                    self._burst_left.pop(scope, None)
                else:
                    self._burst_left[scope] = spec["count"]

    @staticmethod
    def _merged(
        current: Mapping[str, dict[str, Any]], changes: Mapping[str, Any] | None, where: str
    ) -> dict[str, dict[str, Any]]:
        merged = dict(current)
        if changes is None:
            return merged
        if not isinstance(changes, Mapping):
            raise BehaviourError(f"{where} behaviours must be an object")
        for name, spec in changes.items():
            if spec is None:
                merged.pop(name, None)
            elif isinstance(spec, Mapping):
                merged[name] = normalize(name, spec)
            else:
                raise BehaviourError(f"{where}.{name} must be an object or null")
        return merged

    def _spec_in(self, scope: str, name: str) -> dict[str, Any] | None:
        if scope == "global":
            return self.global_specs.get(name)
        return self.client_specs.get(scope.removeprefix("client:"), {}).get(name)

    def snapshot(self) -> dict[str, Any]:
        return {
            "behaviours": self.global_specs,
            "clients": self.client_specs,
            "error_burst_remaining": dict(self._burst_left),
        }

    def decide(
        self,
        *,
        path: str,
        key: str,
        client: str | None,
        forced: Mapping[str, dict[str, Any]],
        base: str = "http://127.0.0.1",
    ) -> Decision:
        """What to do with a request (``base``: the scheme and Host it was sent to)."""
        decision = Decision()
        client_specs = self.client_specs.get(client, {}) if client else {}
        for name in BEHAVIOURS:
            if name in forced:
                spec, scope = forced[name], "request"
            elif name in client_specs:
                spec, scope = client_specs[name], f"client:{client}"
            elif name in self.global_specs:
                spec, scope = self.global_specs[name], "global"
            else:
                continue
            if scope != "request":
                prefixes = spec.get("paths")
                if prefixes is not None and not any(path.startswith(p) for p in prefixes):
                    continue
            forced_now = scope == "request"

            if name == "error_burst":
                left = self._burst_left.get(scope, 0)
                if not forced_now and left <= 0:
                    continue
                if not forced_now:
                    self._burst_left[scope] = left - 1
                decision.applied.append(name)
                decision.response = error_response()
                return decision

            if not forced_now and not selected(self.seed, name, key, spec["rate"]):
                continue

            if name == "redirect_loop":
                decision.applied.append(name)
                decision.response = web.Response(
                    status=302, headers={"Location": loop_location(key, forced)}
                )
                return decision

            if name == "offsite_redirect":
                decision.applied.append(name)
                location = other_host(base) + key
                decision.response = web.Response(status=302, headers={"Location": location})
                return decision

            if name in COUNTED:
                if not forced_now:
                    counter = (scope, name, key)
                    self._attempts[counter] = self._attempts.get(counter, 0) + 1
                    if spec["attempts"] is not None and self._attempts[counter] > spec["attempts"]:
                        continue
                decision.applied.append(name)
                decision.response = (
                    error_response() if name == "unavailable" else block_response(name, spec)
                )
                return decision

            decision.applied.append(name)
            if name == "slow":
                decision.delay_ms += spec["ms"]
            else:
                decision.transforms.append((name, spec))
        return decision


def other_host(base: str) -> str:
    """``base`` (``scheme://host[:port]``) on the server's other loopback name."""
    scheme, _, netloc = base.partition("://")
    host, colon, port = netloc.rpartition(":") if netloc.count(":") == 1 else (netloc, "", "")
    other = "127.0.0.1" if host == "localhost" else "localhost"
    return f"{scheme}://{other}{colon}{port}"


def loop_location(key: str, forced: Mapping[str, dict[str, Any]]) -> str:
    """The other end of a redirect loop: ``key`` with ``__loop=1`` (keeping forcing)."""
    params = []
    if forced:
        params.append("__behaviour=" + ",".join(forced))
    params.append("__loop=1")
    return key + ("&" if "?" in key else "?") + "&".join(params)


# -- responses -----------------------------------------------------------------------

_CAPTCHA_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="robots" content="noindex, nofollow">
<title>Verify you are human</title>
<script src="https://ct.captcha-delivery.com/c.js"></script>
<style>#captcha-container{max-width:480px;margin:10% auto;font-family:sans-serif}</style>
</head>
<body>
<div id="captcha-container" class="captcha-container">
<h1>Verify you are human</h1>
<p>We detected unusual activity from your network. Please complete the security check
below to continue to the store.</p>
<form id="captcha-form" class="captcha-form" action="/__captcha/verify" method="post">
<input type="hidden" name="cid" value="AHrlqAAAAAMA1Qx7Zg3sJkQAWkN2bQ==">
<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=AHrlqAAAAAMA1Qx7Zg3sJkQ"
 title="DataDome CAPTCHA" width="100%" height="500" frameborder="0"></iframe>
<div class="g-recaptcha" data-sitekey="6LdDemoKeyForTestsOnly000000000000000000"></div>
<button type="submit">I am not a robot</button>
</form>
<p class="captcha-footer">Request ID: 7f3c2a9e-demo · Protected by DataDome</p>
</div>
</body>
</html>
"""

_FORBIDDEN_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Access Denied</title></head>
<body>
<h1>Access Denied</h1>
<p>You don't have permission to access this resource on this server.</p>
<p>Your request was blocked by our security service.</p>
<p>Reference&#32;&#35;18&#46;5c3e1702&#46;1717171717&#46;2a9f3b1</p>
</body></html>
"""

_THROTTLE_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>429 Too Many Requests</title></head>
<body><h1>Too Many Requests</h1>
<p>You have sent too many requests in a given amount of time. Please slow down.</p>
</body></html>
"""

_ERROR_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>503 Service Unavailable</title></head>
<body><h1>Service Unavailable</h1>
<p>The server is temporarily unable to service your request. Please try again later.</p>
</body></html>
"""


def block_response(name: str, spec: Mapping[str, Any]) -> web.Response:
    if name == "captcha":
        # HTTP 200 on purpose: the block is only visible in the content.
        return web.Response(text=_CAPTCHA_PAGE, content_type="text/html", charset="utf-8")
    if name == "forbidden":
        return web.Response(
            status=403, text=_FORBIDDEN_PAGE, content_type="text/html", charset="utf-8"
        )
    return web.Response(
        status=429,
        text=_THROTTLE_PAGE,
        content_type="text/html",
        charset="utf-8",
        headers={"Retry-After": str(spec.get("retry_after", 1))},
    )


def error_response() -> web.Response:
    return web.Response(status=503, text=_ERROR_PAGE, content_type="text/html", charset="utf-8")


# -- content transforms -----------------------------------------------------------------

_BODY_OPEN = re.compile(r"<body[^>]*>")


_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)\b[^>]*>")
_KEPT_TAGS = frozenset({"html", "head", "body", "title"})


def unreadable(html: str) -> str:
    """The page in markup nothing was written for: no scripts, and every element of the
    body a bare ``div``; the text is all there, but no selector (not even ``h1``),
    microdata or JSON-LD finds it."""

    def bare(match: re.Match[str]) -> str:
        closing, name = match.group(1), match.group(2).lower()
        return f"<{closing}{name if name in _KEPT_TAGS else 'div'}>"

    return _TAG.sub(bare, _SCRIPT.sub("", html))


def malformed(html: str) -> str:
    """Broken markup a browser still renders: unclosed and misnested tags, stray closers.

    Text and attribute values are untouched, so all the data is still in the page.
    """
    broken = html.replace("</p>", "").replace("</li>", "")
    broken = broken.replace("</body>", "").replace("</html>", "")
    broken = broken.replace("</main>", "</div></span></main>", 1)
    junk = (
        '<div class="promo-banner"><b><i>Summer sale!</b></i>'
        "<table><tr><td>Free shipping over 50 € "
    )
    match = _BODY_OPEN.search(broken)
    if match:
        broken = broken[: match.end()] + junk + broken[match.end() :]
    return broken


def misencoded(html: str) -> bytes:
    """The page in Windows-1252 while the header and <meta> both still say UTF-8."""
    return html.encode("cp1252", errors="xmlcharrefreplace")


@lru_cache(maxsize=8)
def _padding(size: int) -> bytes:
    # A huge hydration blob is the usual way real pages get this big.
    unit = b"0123456789abcdefghijklmnopqrstuvwxyz" * 28 + b"\n"
    count = max(1, -(-size // len(unit)))  # rounded up: at least the size asked for
    return b'<script type="application/json" id="filler">"' + unit * count + b'"</script>\n'


def padded(body: bytes, mb: float) -> bytes:
    """``body`` grown to about ``mb`` MB; the real content stays ahead of the padding."""
    target = int(mb * 1024 * 1024)
    padding = _padding(max(0, target - len(body)))
    index = body.rfind(b"</body>")
    if index < 0:
        return body + padding
    return body[:index] + padding + body[index:]
