"""Plain requests with the installed Chromium's TLS and HTTP/2 fingerprint (curl_cffi).

``ImpersonatingHandler`` is a Scrapy download handler on ``curl_cffi``'s ``AsyncSession``;
``ResilientPlaywrightHandler`` sends it the plain requests when ``FETCH_IDENTITY`` is
``browser``. It sends the request's headers exactly (no curl default, no cookie engine),
reuses connections per proxy, fetch session and target (at most ``FETCH_MAX_SESSIONS``),
follows no redirect, and maps curl's errors to Scrapy's ``RETRY_EXCEPTIONS``.

Reads: ``DOWNLOAD_TIMEOUT``, ``DOWNLOAD_MAXSIZE`` / ``DOWNLOAD_WARNSIZE`` (and their meta
keys), ``FETCH_TLS_VERIFY``, ``FETCH_MAX_SESSIONS``, ``meta["proxy"]``,
``meta["fetch_session"]``. Why not scrapy-impersonate, the wire rules and the stats:
docs/fetching.md "Identity: every request presents the Chromium the platform runs".
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections import Counter, OrderedDict
from typing import Any

from curl_cffi import CurlECode, CurlInfo, CurlOpt
from curl_cffi.curl import CURL_WRITEFUNC_ERROR, CurlError
from curl_cffi.requests import AsyncSession
from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from scrapy.http import Headers, Request, Response
from scrapy.responsetypes import responsetypes
from scrapy.utils.url import add_http_if_no_scheme

from crawlers.fetch.headers import browser_spelling, request_pairs, with_h2_priority
from crawlers.fetch.identity import SESSION_META, BrowserIdentity, identity_for, identity_of
from crawlers.fetch.redact import basic_credentials, proxy_id, redact

logger = logging.getLogger(__name__)

FLAG = "impersonated"
# Chromium sends these first on HTTP/1.1, before every other header; curl would put
# its own Host (and Content-Length) after the request's headers.
HEADER_ORDER = "host,connection,content-length"
# CURLINFO_HTTP_VERSION -> Scrapy's protocol names (its HTTP/2 handler says "h2").
PROTOCOLS = {1: "HTTP/1.0", 2: "HTTP/1.1", 3: "h2", 30: "h3"}
_BODY_METHODS = ("POST", "PUT", "PATCH")

SessionKey = tuple[str, str, str, int]  # proxy, session id, target, max size
_CURL_HINT = re.compile(r"\s*See https://curl\.se/libcurl/c/libcurl-errors\.html[^.]*\.")


class ConnectionLostError(DownloadFailedError):
    """The connection broke before a whole answer arrived (reset, closed, HTTP/2 error)."""


class ResponseHeadersRefused(DownloadFailedError):
    """curl refused the response's header block (its limits are not a browser's)."""


def download_error(code: int, message: str, url: str, timeout: float | None) -> Exception:
    """The Scrapy exception for curl error ``code`` (``RETRY_EXCEPTIONS`` all of them, so
    they are retried and, through a proxy, ban it, as Twisted's errors were)."""
    message = redact(_CURL_HINT.sub("", message))
    if code == CurlECode.OPERATION_TIMEDOUT:
        return DownloadTimeoutError(f"Getting {url} took longer than {timeout} seconds.")
    # A proxy that refused the CONNECT (407, 403, 502): curl says COULDNT_CONNECT or PROXY.
    if code == CurlECode.PROXY or "CONNECT tunnel failed" in message:
        return TunnelError(message)  # what Scrapy's HTTP/1.1 handler raises for it
    if code in (CurlECode.COULDNT_RESOLVE_HOST, CurlECode.COULDNT_RESOLVE_PROXY):
        return CannotResolveHostError(message)
    if code == CurlECode.COULDNT_CONNECT:
        return DownloadConnectionRefusedError(message)
    if code == CurlECode.PARTIAL_FILE:
        return ResponseDataLossError(message)
    if code == CurlECode.TOO_LARGE:
        return ResponseHeadersRefused(message)
    if code in (
        CurlECode.GOT_NOTHING,
        CurlECode.SEND_ERROR,
        CurlECode.RECV_ERROR,
        CurlECode.HTTP2,
        CurlECode.HTTP2_STREAM,
        CurlECode.WEIRD_SERVER_REPLY,
    ):
        return ConnectionLostError(message)
    return DownloadFailedError(message)  # TLS failures, bad encodings, the rest


class _Body:
    """curl's write callback: the body kept up to the request's maxsize, cut beyond."""

    def __init__(self, request: Request, maxsize: int, warnsize: int) -> None:
        self.request = request
        self.maxsize = maxsize
        self.warnsize = warnsize
        self.size = 0
        self.parts: list[bytes] = []
        self.cut = False
        self.warned = False

    def __call__(self, chunk: bytes) -> int:
        self.size += len(chunk)
        if self.maxsize and self.size > self.maxsize:
            self.cut = True
            self.parts.clear()
            return CURL_WRITEFUNC_ERROR  # curl aborts the transfer (CURLE_WRITE_ERROR)
        if self.warnsize and self.size > self.warnsize and not self.warned:
            self.warned = True
            logger.warning(
                "Received %d bytes which is larger than download warn size (%d) in request %s.",
                self.size,
                self.warnsize,
                self.request,
            )
        self.parts.append(chunk)
        return len(chunk)

    def value(self) -> bytes:
        return b"".join(self.parts)


class ImpersonatingHandler(BaseDownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.identity: BrowserIdentity = identity_for(crawler)
        self.verify = settings.getbool("FETCH_TLS_VERIFY")
        self.timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self.maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.warnsize = settings.getint("DOWNLOAD_WARNSIZE")
        self.fail_on_dataloss = settings.getbool("DOWNLOAD_FAIL_ON_DATALOSS")
        self.max_sessions = max(1, settings.getint("FETCH_MAX_SESSIONS"))
        # curl handles per session: requests in flight through one proxy/session at most.
        self.max_clients = max(1, settings.getint("CONCURRENT_REQUESTS"))
        self._sessions: OrderedDict[SessionKey, AsyncSession[Any]] = OrderedDict()
        self._busy: Counter[SessionKey] = Counter()

    # -- sessions -----------------------------------------------------------------------
    async def _session(self, key: SessionKey) -> AsyncSession[Any]:
        session = self._sessions.pop(key, None)
        if session is None:
            session = AsyncSession(
                impersonate=key[2],
                default_headers=False,
                allow_redirects=False,
                discard_cookies=True,
                trust_env=False,  # proxies come from meta["proxy"] only
                verify=self.verify,
                http_version="v2tls",
                max_clients=self.max_clients,
                curl_options={
                    CurlOpt.HTTPHEADER_ORDER: HEADER_ORDER,
                    # A Content-Length over it fails at the header (FILESIZE_EXCEEDED).
                    **({CurlOpt.MAXFILESIZE_LARGE: key[3]} if key[3] else {}),
                },
                curl_infos=[CurlInfo.STARTTRANSFER_TIME],
            )
            self._count("sessions_opened")
        self._sessions[key] = session  # the most recently used last
        await self._evict(keep=key)
        return session

    async def _evict(self, keep: SessionKey) -> None:
        """Close the least recently used idle sessions beyond FETCH_MAX_SESSIONS (a
        session with requests in flight stays until they end)."""
        while len(self._sessions) > self.max_sessions:
            victim = next(
                (key for key in self._sessions if key != keep and not self._busy[key]), None
            )
            if victim is None:
                return
            session = self._sessions.pop(victim)
            self._count("sessions_evicted")
            await session.close()

    def _count(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"impersonate/{name}")

    # -- one download ---------------------------------------------------------------------
    async def download_request(self, request: Request) -> Response:
        meta = request.meta
        proxy = meta.get("proxy")
        proxy_url = add_http_if_no_scheme(str(proxy)) if proxy else None
        headers: list[tuple[str, str | None]] = []
        proxy_auth = None
        for name, value in request_pairs(request):
            if name.lower() == "proxy-authorization":
                proxy_auth = basic_credentials(value)  # to the proxy, as curl's credentials
            else:
                headers.append((browser_spelling(name), value))  # Scrapy title-cased it
        names = {name.lower() for name, _ in headers}
        if (request.body or request.method in _BODY_METHODS) and "content-type" not in names:
            headers.append(("Content-Type", None))  # neither curl's form type nor another
        accept_encoding = next((v for n, v in headers if n.lower() == "accept-encoding"), None)
        if any(name.lower() == "sec-fetch-dest" for name, _ in headers):
            # A browser's request: Chromium's HTTP/2 priority header, which curl sends over
            # HTTP/2 only (ALPN decides after the headers are set), as Chromium does.
            headers = with_h2_priority(headers)
        identity = identity_of(request, self.identity)
        maxsize = int(meta.get("download_maxsize", self.maxsize) or 0)
        key = (proxy_url or "", str(meta.get(SESSION_META) or ""), identity.impersonate, maxsize)
        timeout = float(meta.get("download_timeout", self.timeout) or 0) or None
        body = _Body(request, maxsize, int(meta.get("download_warnsize", self.warnsize) or 0))
        self._busy[key] += 1
        try:
            session = await self._session(key)
            started = time.monotonic()
            try:
                answer = await session.request(
                    # Its Literal names the common methods; curl sends any (Scrapy's is a str).
                    request.method,  # type: ignore[arg-type]  # see above
                    request.url,
                    # Pairs whose None value curl sends no header for: curl_cffi's Headers
                    # takes them, its HeaderTypes types pairs as (str, str) only.
                    headers=headers,  # type: ignore[arg-type]  # see above
                    content=request.body or None,
                    timeout=timeout,
                    proxy=proxy_url,
                    proxy_auth=proxy_auth,
                    accept_encoding=accept_encoding,
                    content_callback=body,
                    quote=False,  # Scrapy's URL is already escaped: sent as it is
                )
            except CurlError as exc:
                decoded = accept_encoding is not None
                return self._failed(request, exc, body, timeout, proxy_url, decoded=decoded)
        finally:
            self._busy[key] -= 1
            if not self._busy[key]:
                del self._busy[key]
        meta["download_latency"] = float(
            answer.infos.get(CurlInfo.STARTTRANSFER_TIME) or time.monotonic() - started
        )
        return self._response(request, answer, body.value(), decoded=accept_encoding is not None)

    def _failed(
        self,
        request: Request,
        exc: CurlError,
        body: _Body,
        timeout: float | None,
        proxy_url: str | None,
        *,
        decoded: bool,
    ) -> Response:
        code = int(getattr(exc, "code", 0) or 0)
        if code == CurlECode.FILESIZE_EXCEEDED and not body.cut:
            # curl's MAXFILESIZE: the Content-Length said so (the body unread), or the raw
            # bytes of a body of unknown length passed the cap before their decoding did.
            declared = "Maximum file size exceeded" in str(exc)
            message = (
                f"{'Expected to receive' if declared else 'Received'} a body larger than "
                f"download max size ({body.maxsize}) in request {request}"
                + (" (its Content-Length said so: the body was not read)." if declared else ".")
            )
            logger.warning(message)
            raise DownloadCancelledError(message) from None
        if body.cut:
            message = (
                f"Received {body.size} bytes which is larger than download max size "
                f"({body.maxsize}) in request {request}."
            )
            logger.warning(message)
            raise DownloadCancelledError(message) from None
        answer = getattr(exc, "response", None)
        dataloss_ok = not request.meta.get("download_fail_on_dataloss", self.fail_on_dataloss)
        if code == CurlECode.PARTIAL_FILE and dataloss_ok and answer is not None:
            return self._response(request, answer, body.value(), decoded=decoded, dataloss=True)
        via = f" (via proxy {proxy_id(proxy_url)})" if proxy_url else ""
        raise download_error(code, f"{exc}{via}", request.url, timeout) from None

    @staticmethod
    def _response(
        request: Request, answer: Any, body: bytes, *, decoded: bool, dataloss: bool = False
    ) -> Response:
        headers = Headers()
        for name, value in answer.headers.multi_items():
            headers.appendlist(name, value)
        if decoded and b"Content-Encoding" in headers:
            # curl decoded the body: it is no longer encoded, nor of that length.
            headers.pop(b"Content-Encoding")
            headers.pop(b"Content-Length", None)
        primary_ip = answer.primary_ip
        cls = responsetypes.from_args(headers=headers, url=request.url, body=body)
        return cls(
            url=request.url,
            status=int(answer.status_code),
            headers=headers,
            body=body,
            flags=[FLAG, "dataloss"] if dataloss else [FLAG],
            request=request,
            ip_address=ipaddress.ip_address(primary_ip) if primary_ip else None,
            protocol=PROTOCOLS.get(int(answer.http_version or 0)),
        )

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), OrderedDict()
        for session in sessions:
            await session.close()
