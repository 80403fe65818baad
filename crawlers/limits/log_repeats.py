"""Repeated log lines said once, with a count: a page of 100,000 links whose followed
links all answer 404 wrote 1,000 ERROR lines, one per link.

``RepeatFilter`` sits on the root logger's output handlers (Scrapy's among them; not on
its counting handler: ``log_count/ERROR`` still counts every record). It keys each
WARNING or ERROR record by its logger, its level and its message with the URLs taken out;
the first ``LOG_REPEATS_SHOWN`` records of a key are written as they are, the rest are
held back and counted. Every ``LOG_REPEATS_INTERVAL`` seconds, and at the crawl's close,
one line per key that held records back says how many, naming a few of their URLs:

    ERROR: 997 more lines like "request failed: <url> (HTTP 404)", e.g. http://x/a, ...

A key's budget starts again after each summary (an always-on worker keeps saying what
goes on). Stat: ``log/repeats_held``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.log import LogCounterHandler
from twisted.internet import task

logger = logging.getLogger(__name__)

_URL = re.compile(r"https?://[^\s<>\"'()\[\],]+")
EXAMPLES = 3  # URLs a summary names
MAX_KEYS = 10_000  # distinct repeated lines tracked; beyond, lines pass as they are
SEEN_ATTR = "repeat_verdict"  # set on a record by the first handler's filter
SUMMARY_ATTR = "repeat_summary"


@dataclass
class _Repeats:
    level: int
    name: str
    shape: str  # the message with <url> for each URL
    shown: int = 0
    held: int = 0
    examples: list[str] = field(default_factory=list)


class RepeatFilter(logging.Filter):
    """Lets the first ``shown`` records of each (logger, level, message shape) through."""

    def __init__(self, shown: int) -> None:
        super().__init__()
        self.shown = shown
        self.keys: dict[tuple[str, int, str], _Repeats] = {}
        self.held_total = 0

    def filter(self, record: logging.LogRecord) -> bool:
        verdict = record.__dict__.get(SEEN_ATTR)
        if verdict is None:
            verdict = self._decide(record)
            setattr(record, SEEN_ATTR, verdict)  # the other handlers decide alike
        return bool(verdict)

    def _decide(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.__dict__.get(SUMMARY_ATTR):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: the handler reports it as it would
            return True
        shape = _URL.sub("<url>", message)
        key = (record.name, record.levelno, shape)
        repeats = self.keys.get(key)
        if repeats is None:
            if len(self.keys) >= MAX_KEYS:
                return True
            repeats = self.keys[key] = _Repeats(record.levelno, record.name, shape)
        if repeats.shown < self.shown:
            repeats.shown += 1
            return True
        repeats.held += 1
        self.held_total += 1
        if len(repeats.examples) < EXAMPLES:
            repeats.examples.extend(_URL.findall(message)[:1])
        return False

    def summarize(self) -> None:
        """One line per key that held records back since the last summary; budgets reset."""
        for repeats in list(self.keys.values()):
            if repeats.held:
                examples = ", ".join(repeats.examples)
                logging.getLogger(repeats.name).log(
                    repeats.level,
                    '%d more lines like "%s"%s',
                    repeats.held,
                    repeats.shape,
                    f", e.g. {examples}" if examples else "",
                    extra={SUMMARY_ATTR: True},
                )
        self.keys.clear()


def _not_a_summary(record: logging.LogRecord) -> bool:
    # The counter counted each line a summary stands for: the summary is no new error.
    return not record.__dict__.get(SUMMARY_ATTR)


def install_repeat_filter(shown: int) -> RepeatFilter:
    """One ``RepeatFilter`` on every output handler of the root logger; its counting
    handler (``log_count/<LEVEL>``) counts every record but the summaries."""
    repeat_filter = RepeatFilter(shown)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, RepeatFilter)]:
            handler.removeFilter(old)  # a second crawl in this process: its own counts
        if isinstance(handler, LogCounterHandler):
            if _not_a_summary not in handler.filters:
                handler.addFilter(_not_a_summary)
        else:
            handler.addFilter(repeat_filter)
    return repeat_filter


class LogRepeats:
    """The extension: ``LOG_REPEATS_SHOWN`` lines per repeated line (0: every line
    written), a summary every ``LOG_REPEATS_INTERVAL`` seconds and at close."""

    def __init__(self, crawler: Crawler, shown: int, interval: float) -> None:
        self.crawler = crawler
        self.shown = shown
        self.filter = RepeatFilter(shown)
        self.interval = interval
        self.loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogRepeats:
        shown = crawler.settings.getint("LOG_REPEATS_SHOWN")
        if shown <= 0:
            raise NotConfigured("LOG_REPEATS_SHOWN=0: every repeated line is written")
        extension = cls(crawler, shown, crawler.settings.getfloat("LOG_REPEATS_INTERVAL"))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        # Not earlier: Scrapy replaces its root handler once the extensions are built, and
        # adds the counting handler (LogCount) when the spider opens, before this runs.
        self.filter = install_repeat_filter(self.shown)
        if self.interval > 0:
            self.loop = task.LoopingCall(self.summarize)
            self.loop.start(self.interval, now=False)

    def summarize(self) -> None:
        if self.crawler.stats is not None and self.filter.held_total:
            self.crawler.stats.inc_value("log/repeats_held", self.filter.held_total)
            self.filter.held_total = 0
        self.filter.summarize()

    def spider_closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.summarize()
