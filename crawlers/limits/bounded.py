"""Bounded values: what a page carries cannot make a value, a log line or a parse unbounded.

* ``loads``: JSON whose nesting is deeper than the interpreter's stack raises
  ``JSONTooDeep`` (a ``ValueError``, so every ``except ValueError`` around a parse keeps
  the crawl going) instead of an uncaught ``RecursionError``;
* ``response_json``: a JSON response decoded as JSON is (UTF-8 unless the response says
  otherwise); bytes that are not valid UTF-8 are replaced with U+FFFD, never read as
  another encoding's mojibake, and counted (``decode/invalid_utf8``) with one line;
  too deep counted ``json/too_deep``;
* ``truncate_text_fields``: text fields longer than ``ITEM_FIELD_MAX_CHARS`` cut and
  marked (``TRUNCATED_MARK``), for the validation pipeline to count;
* ``LineCap``: a logging filter that cuts any log line at ``LOG_MAX_LINE_CHARS``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse

from crawlers.runtime.logs import not_configured

logger = logging.getLogger(__name__)

# Appended to a text cut at the field size cap: the stored value says it is not whole.
TRUNCATED_MARK = " [truncated: {dropped} more characters]"


class JSONTooDeep(ValueError):
    """JSON nested deeper than can be parsed (``RecursionError`` in the parser)."""


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads``, raising ``JSONTooDeep`` rather than ``RecursionError``."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise JSONTooDeep("JSON nested too deeply to parse") from None


def response_json(response: Response, stats: Any = None) -> Any:
    """The JSON document of ``response``; ``ValueError`` (``JSONTooDeep`` included) when it
    is none. Invalid UTF-8 is replaced and counted, one WARNING line naming the URL."""
    declared = _declared_charset(response)
    if declared and declared not in ("utf-8", "utf8") and isinstance(response, TextResponse):
        text = response.text  # the site said which encoding: Scrapy decodes by it
    else:
        try:
            text = response.body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if stats is not None:
                stats.inc_value("decode/invalid_utf8")
            logger.warning(
                "%s: invalid UTF-8 at byte %d of the JSON (%s); the bad bytes are stored "
                "as U+FFFD (counted in decode/invalid_utf8)",
                response.url,
                exc.start,
                exc.reason,
            )
            text = response.body.decode("utf-8-sig", errors="replace")
    try:
        return loads(text)
    except JSONTooDeep:
        if stats is not None:
            stats.inc_value("json/too_deep")
        raise


def _declared_charset(response: Response) -> str | None:
    content_type = response.headers.get(b"Content-Type") or b""
    for part in content_type.decode("latin-1").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip("\"' ").lower()
    return None


def truncate_text_fields(fields: dict[str, Any], max_chars: int) -> dict[str, int]:
    """Cut every text value longer than ``max_chars`` in ``fields`` (in place, nested
    lists and dicts too), marking it; returns field name -> characters dropped."""
    cut: dict[str, int] = {}
    if max_chars <= 0:
        return cut
    for name, value in list(fields.items()):
        new, dropped = _truncate(value, max_chars)
        if dropped:
            fields[name] = new
            cut[name] = dropped
    return cut


def _truncate(value: Any, max_chars: int) -> tuple[Any, int]:
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value, 0
        dropped = len(value) - max_chars
        return value[:max_chars] + TRUNCATED_MARK.format(dropped=dropped), dropped
    if isinstance(value, list | tuple):
        results = [_truncate(entry, max_chars) for entry in value]
        dropped = sum(d for _, d in results)
        return (type(value)(v for v, _ in results) if dropped else value), dropped
    if isinstance(value, dict):
        total = 0
        out = {}
        for key, entry in value.items():
            out[key], dropped = _truncate(entry, max_chars)
            total += dropped
        return (out if total else value), total
    return value, 0


class LineCap(logging.Filter):
    """Cuts a log record's message at ``max_chars`` (the rest counted in the line), so one
    page full of broken blocks cannot write a megabyte-long line."""

    def __init__(self, max_chars: int) -> None:
        super().__init__()
        self.max_chars = max_chars

    def filter(self, record: logging.LogRecord) -> bool:
        if self.max_chars <= 0:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: the handler reports it as it would
            return True
        if len(message) > self.max_chars:
            cut = len(message) - self.max_chars
            record.msg = f"{message[: self.max_chars]} [... {cut} more characters cut]"
            record.args = None
        return True


def install_line_cap(max_chars: int) -> None:
    """``LineCap`` on every handler of the root logger (Scrapy's among them), once."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, LineCap) for f in handler.filters):
            handler.addFilter(LineCap(max_chars))


class LogLineCap:
    """The extension installing ``LineCap`` (``LOG_MAX_LINE_CHARS``; 0: lines not cut)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogLineCap:
        max_chars = crawler.settings.getint("LOG_MAX_LINE_CHARS")
        if max_chars <= 0:
            raise not_configured("LogLineCap", "LOG_MAX_LINE_CHARS=0: log lines not cut")
        install_line_cap(max_chars)
        return cls()
