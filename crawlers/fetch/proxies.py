"""Rotating proxies: scrapy-rotating-proxies' pool, with the site's block classifier as ban
policy.

``RotatingProxies`` picks a live proxy per request (``meta["rotated_proxy"]``) and marks
it good or dead from ``meta["proxy_ban"]``, which ``BanDetection`` sets from the block
verdict. Only the library's public parts are used (its pool, backoff and ban-policy
interface), not its middlewares; retries are left to ``BlockRetryMiddleware``.

Reads: ``ROTATING_PROXY_LIST_PATH`` / ``ROTATING_PROXY_LIST`` (filled from ``PROXY_LIST`` /
``PROXY_LIST_FILE``, or a profile's ``[settings]``); off without proxies unless the profile
says ``needs_proxies = true``. Why not its middlewares, ban policy and stats:
docs/fetching.md "Proxies".
"""

from __future__ import annotations

import logging
import random
from functools import partial
from pathlib import Path
from typing import Protocol

from rotating_proxies.expire import Proxies, exp_backoff_full_jitter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, IgnoreRequest
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import task

from crawlers.fetch.classify import ResponseClassifier
from crawlers.fetch.identity import SESSION_META
from crawlers.fetch.redact import install_redaction, normalize_proxy, proxy_id
from crawlers.fetch.rendering import BrowserCrashedError, RenderFailedError
from crawlers.fetch.retry import CHALLENGE_META, PROXY_EXCLUDE_META, ROTATED_PROXY_META
from crawlers.runtime.logs import not_configured

logger = logging.getLogger(__name__)

PROXY_BAN_META = "proxy_ban"  # the ban verdict of the request's proxy: True, False, None
REANIMATE_INTERVAL = 5.0  # seconds between moves of rested dead proxies back to unchecked


class ProxyConfigError(RuntimeError):
    """The site needs proxies and none are configured."""


def configured_proxies(settings: BaseSettings) -> list[str]:
    """The proxy list: the file in ROTATING_PROXY_LIST_PATH, else ROTATING_PROXY_LIST."""
    path = settings.get("ROTATING_PROXY_LIST_PATH")
    if path:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    else:
        lines = settings.getlist("ROTATING_PROXY_LIST")
    return list(
        dict.fromkeys(
            normalize_proxy(line)
            for line in lines
            if line.strip() and not line.strip().startswith("#")
        )
    )


def _site_needs_proxies(crawler: Crawler) -> bool:
    load_profile = getattr(crawler.spidercls, "load_profile", None)
    if load_profile is None:
        return False
    try:
        return bool(load_profile().needs_proxies)
    except Exception:  # a spider without a profile file: nothing to enforce
        return False


def _proxy_list_or_off(crawler: Crawler) -> list[str]:
    proxies = configured_proxies(crawler.settings)
    if proxies:
        return proxies
    if _site_needs_proxies(crawler):
        raise ProxyConfigError(
            f"site {crawler.spidercls.name!r} needs proxies (profile: needs_proxies = true) "
            "but none are configured: set PROXY_LIST / PROXY_LIST_FILE or the profile's "
            "ROTATING_PROXY_LIST(_PATH)"
        )
    raise not_configured("RotatingProxies", "no proxies configured: direct connections")


class RedactedProxies(Proxies):
    """The library's pool; transitions logged by ``host:port``, unknown proxies ignored."""

    def mark_dead(self, proxy: str, _time: float | None = None) -> None:
        if proxy not in self.proxies:
            return  # the library would logger.warn (deprecated) and return
        was_good = proxy in self.good
        super().mark_dead(proxy, _time)
        logger.debug(
            "proxy %s is dead (%s), rests %.0fs",
            proxy_id(proxy),
            "was good" if was_good else "unchecked",
            self.proxies[proxy].backoff_time or 0.0,
        )

    def mark_good(self, proxy: str) -> None:
        if proxy not in self.proxies:
            return
        if proxy not in self.good:
            logger.debug("proxy %s is good", proxy_id(proxy))
        super().mark_good(proxy)


class RotatingProxies:
    def __init__(self, crawler: Crawler, proxy_list: list[str]) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        backoff = partial(
            exp_backoff_full_jitter,
            base=settings.getfloat("ROTATING_PROXY_BACKOFF_BASE"),
            cap=settings.getfloat("ROTATING_PROXY_BACKOFF_CAP"),
        )
        self.proxies = RedactedProxies(proxy_list, backoff=backoff)
        self.logstats_interval = settings.getfloat("ROTATING_PROXY_LOGSTATS_INTERVAL")
        self.stop_if_no_proxies = settings.getbool("ROTATING_PROXY_CLOSE_SPIDER")
        self.tasks: list[task.LoopingCall] = []
        # Its DEBUG lines print proxy URLs with their credentials.
        logging.getLogger("rotating_proxies.expire").setLevel(logging.INFO)
        install_redaction()
        self.stats.set_value("proxies/total", len(self.proxies.proxies))
        self.stats.set_value("proxies/unchecked", len(self.proxies.unchecked))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RotatingProxies:
        middleware = cls(crawler, _proxy_list_or_off(crawler))
        crawler.signals.connect(middleware.engine_started, signal=signals.engine_started)
        crawler.signals.connect(middleware.engine_stopped, signal=signals.engine_stopped)
        logger.info(
            "rotating %d proxies: %s",
            len(middleware.proxies.proxies),
            ", ".join(sorted(proxy_id(p) for p in middleware.proxies.proxies)),
        )
        return middleware

    def engine_started(self) -> None:
        log = task.LoopingCall(self.log_stats)
        log.start(self.logstats_interval, now=True)
        reanimate = task.LoopingCall(self.reanimate)
        reanimate.start(REANIMATE_INTERVAL, now=False)
        self.tasks = [log, reanimate]

    def engine_stopped(self) -> None:
        for looping in self.tasks:
            if looping.running:
                looping.stop()

    def log_stats(self) -> None:
        logger.info("%s", self.proxies)

    def reanimate(self) -> None:
        if self.proxies.reanimate():
            logger.debug("rested proxies are unchecked again: %s", self.proxies)

    def get_proxy_slot(self, proxy: str) -> str:
        # host:port, so proxies on one host keep their own concurrency and delay.
        return proxy_id(proxy)

    def process_request(self, request: Request) -> None:
        if "proxy" in request.meta and not request.meta.get(ROTATED_PROXY_META):
            return  # the spider chose a proxy (or None = direct) for this request itself
        proxy = self._choose(set(request.meta.get(PROXY_EXCLUDE_META) or ()))
        request.meta["proxy"] = proxy
        request.meta["download_slot"] = self.get_proxy_slot(proxy)
        request.meta[ROTATED_PROXY_META] = True
        self.stats.inc_value(f"proxies/requests/{proxy_id(proxy)}")

    def _choose(self, excluded: set[str]) -> str:
        available = list(self.proxies.unchecked | self.proxies.good)
        if not available:
            if self.stop_if_no_proxies:
                raise CloseSpider("no_proxies")
            logger.warning("no live proxies: every dead proxy is checked again")
            self.proxies.reset()
            available = list(self.proxies.unchecked | self.proxies.good)
            if not available:
                raise CloseSpider("no_proxies_after_reset")
        # A retry goes through a proxy this request has not failed on, if there is one.
        fresh = [p for p in available if proxy_id(p) not in excluded]
        return random.choice(fresh or available)

    def process_response(self, request: Request, response: Response) -> Response:
        self._record(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._record(request)

    def _record(self, request: Request) -> None:
        """Mark the proxy by the ban verdict; retrying is BlockRetryMiddleware's job."""
        proxy = self.proxies.get_proxy(request.meta.get("proxy"))
        if not (proxy and request.meta.get(ROTATED_PROXY_META)):
            return
        ban = request.meta.get(PROXY_BAN_META)
        name = proxy_id(proxy)
        if ban is True:
            self.proxies.mark_dead(proxy)
            self.stats.inc_value("proxies/marked_dead")
            self.stats.inc_value(f"proxies/bans/{name}")
        elif ban is False:
            self.proxies.mark_good(proxy)
            self.stats.inc_value(f"proxies/ok/{name}")
        pool = self.proxies
        self.stats.set_value("proxies/good", len(pool.good))
        self.stats.set_value("proxies/dead", len(pool.dead))
        self.stats.set_value("proxies/unchecked", len(pool.unchecked) - len(pool.reanimated))
        self.stats.set_value("proxies/reanimated", len(pool.reanimated))
        self.stats.set_value("proxies/mean_backoff", pool.mean_backoff_time)


class BlockBanPolicy:
    """A proxy is banned when the site answers it with a block page, by the site's rules.

    Responses: blocked/CAPTCHA/throttled -> ban; ok -> not a ban; other errors (404, 5xx)
    -> unknown (the site's trouble, not the proxy's). Exceptions: connection-level
    failures and timeouts -> ban (a page that never loads through a proxy is most often
    the proxy: a wrong guess only rests it); a browser crash, and browser errors that are
    not network errors -> unknown.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.classifier = ResponseClassifier.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BlockBanPolicy:
        return cls(crawler)

    def response_is_ban(self, request: Request, response: Response) -> bool | None:
        verdict = self.classifier.verdict(request, response)
        if verdict.kind == "challenge" and (
            request.meta.get(SESSION_META) or request.meta.get(CHALLENGE_META)
        ):
            return None  # the session's clearance is in question, not the proxy
        if verdict.is_block:
            return True
        return False if verdict.ok else None

    def exception_is_ban(self, request: Request, exception: Exception) -> bool | None:
        if isinstance(exception, IgnoreRequest | BrowserCrashedError):
            return None
        if isinstance(exception, RenderFailedError):
            return True if exception.network else None
        return True


class BanPolicy(Protocol):
    """scrapy-rotating-proxies' ban policy interface (``ROTATING_PROXY_BAN_POLICY``): each
    answers True (a ban), False (not a ban) or None (unknown)."""

    def response_is_ban(self, request: Request, response: Response) -> bool | None: ...

    def exception_is_ban(self, request: Request, exception: Exception) -> bool | None: ...


class BanDetection:
    """The ban verdict of every answer through a proxy, by ``ROTATING_PROXY_BAN_POLICY``
    (or the spider's own ``response_is_ban`` / ``exception_is_ban``, as the library allows)."""

    def __init__(self, crawler: Crawler, policy: BanPolicy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.policy = policy

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BanDetection:
        if not configured_proxies(crawler.settings):
            raise not_configured("BanDetection", "no proxies: nothing to ban")
        policy_cls = load_object(crawler.settings["ROTATING_PROXY_BAN_POLICY"])
        return cls(crawler, build_from_crawler(policy_cls, crawler))

    def process_response(self, request: Request, response: Response) -> Response:
        is_ban = getattr(self.crawler.spider, "response_is_ban", self.policy.response_is_ban)
        ban = is_ban(request, response)
        request.meta[PROXY_BAN_META] = ban
        if ban:
            self.stats.inc_value(f"bans/status/{response.status}")
            if not response.body:
                self.stats.inc_value("bans/empty")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        is_ban = getattr(self.crawler.spider, "exception_is_ban", self.policy.exception_is_ban)
        ban = is_ban(request, exception)
        if ban:
            kind = type(exception)
            self.stats.inc_value(f"bans/error/{kind.__module__}.{kind.__name__}")
        request.meta[PROXY_BAN_META] = ban
