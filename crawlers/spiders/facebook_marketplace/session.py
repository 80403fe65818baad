"""The logged-in session Marketplace is served to: its cookies, from the secret
``FACEBOOK_SESSION_COOKIES`` setting (a Cookie header or JSON), never logged."""

from __future__ import annotations

import json

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from core.config import secret_value

REQUIRED_COOKIES = ("c_user", "xs")  # the user id and the session secret


class FacebookSessionMissing(NotConfigured):
    """No usable logged-in session: Marketplace shows nothing to an anonymous client."""


def parse_session_cookies(raw: str) -> dict[str, str]:
    """Cookies from a Cookie header (``a=1; b=2``), a JSON object or a JSON export list."""
    raw = raw.strip()
    cookies: dict[str, str] = {}
    if raw.startswith(("{", "[")):
        data = json.loads(raw)
        if isinstance(data, dict):
            cookies = {str(k): str(v) for k, v in data.items()}
        else:  # browser extensions export [{"name": ..., "value": ..., "domain": ...}, ...]
            cookies = {
                str(c["name"]): str(c["value"])
                for c in data
                if isinstance(c, dict) and "name" in c and "value" in c
            }
    else:
        for part in raw.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name:
                cookies[name.strip()] = value.strip()
    return cookies


def session_cookies(settings: BaseSettings) -> dict[str, str]:
    """The configured session, or FacebookSessionMissing naming what is wrong (not the values)."""
    secret = secret_value(settings.get("FACEBOOK_SESSION_COOKIES"))
    if secret is None or not secret.strip():
        raise FacebookSessionMissing(
            "facebook_marketplace needs a logged-in facebook.com session: set "
            "FACEBOOK_SESSION_COOKIES to the session's cookies (a Cookie header "
            "'c_user=...; xs=...' or JSON) from the secret store"
        )
    try:
        cookies = parse_session_cookies(secret)
    except (ValueError, TypeError, KeyError) as exc:
        raise FacebookSessionMissing(
            "FACEBOOK_SESSION_COOKIES is neither a Cookie header nor cookie JSON "
            f"({type(exc).__name__})"
        ) from None
    missing = [name for name in REQUIRED_COOKIES if not cookies.get(name)]
    if missing:
        raise FacebookSessionMissing(
            f"FACEBOOK_SESSION_COOKIES lacks the session cookie(s) {', '.join(missing)}"
        )
    return cookies
