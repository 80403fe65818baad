"""Proxy URLs carry credentials: name proxies without them, and scrub them from logs.

A proxy is named by its ``host:port`` (``proxy_id``) in stats, log lines, exception
messages and Playwright context names. ``RedactingFilter`` is the safety net under that:
installed on the log handlers, it rewrites any ``scheme://user:password@`` that a library
(scrapy-rotating-proxies logs whole proxy URLs at DEBUG) would otherwise print.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
from urllib.parse import unquote, urlsplit

from scrapy.utils.url import add_http_if_no_scheme

# user:password@ (or user@) right after a scheme; the password may contain anything but
# whitespace, '/' and '@' (an '@' in a password must be percent-encoded in a URL anyway).
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)[^\s/@]+@", re.IGNORECASE)
_MASK = "***@"
# Per process: context names for proxies that differ only by credentials stay apart
# without the credentials, or anything derived from them, leaving the process.
_PROCESS_KEY = os.urandom(16)


def redact(text: str) -> str:
    """``text`` with every URL's ``user:password@`` replaced by ``***@``."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: m.group("scheme") + _MASK, text)


def normalize_proxy(url: str) -> str:
    """``host:port`` -> ``http://host:port``; whitespace stripped."""
    return add_http_if_no_scheme(url.strip())


def split_proxy(url: str) -> tuple[str, str | None, str | None, str]:
    """(scheme, user, password, host:port) of a proxy URL, as Scrapy's HttpProxyMiddleware
    splits it (credentials still percent-encoded; the last '@' ends them)."""
    parts = urlsplit(normalize_proxy(url))
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    return parts.scheme, (user if at else None), (password if colon else None), hostport


def proxy_id(url: str | None) -> str:
    """The proxy's name for stats and logs: ``host:port``, never its credentials."""
    if not url:
        return "direct"
    return split_proxy(url)[3]


def proxy_for_playwright(url: str) -> dict[str, str]:
    """Playwright's ``proxy`` context option: server, and credentials kept apart from it."""
    scheme, user, password, hostport = split_proxy(url)
    option = {"server": f"{scheme or 'http'}://{hostport}"}
    if user is not None:
        option["username"] = unquote(user)
        option["password"] = unquote(password or "")
    return option


def basic_credentials(header: bytes | str | None) -> tuple[str, str] | None:
    """(user, password) of a ``Basic`` Proxy-Authorization value (the header Scrapy's
    HttpProxyMiddleware builds); None for anything else."""
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    if not header or not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
    except ValueError:
        return None
    return user, password


def credential_tag(user: str, password: str) -> str:
    """A short per-process tag that tells credentials apart without revealing them."""
    digest = hmac.new(_PROCESS_KEY, f"{user}:{password}".encode(), hashlib.sha256)
    return digest.hexdigest()[:8]


class RedactingFilter(logging.Filter):
    """Scrubs credentials from a record's message before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken record is the logging module's problem, not ours
        if "@" in message:
            record.msg = redact(message)
            record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = str(exc)
            if "@" in text and _USERINFO.search(text):
                # Traceback text comes from the exception; keep the type, drop the secret.
                record.exc_text = f"{type(exc).__name__}: {redact(text)}"
        return True


_FILTER = RedactingFilter()


def install_redaction() -> None:
    """Put the filter on the root logger's handlers (Scrapy's and any test capture)."""
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
