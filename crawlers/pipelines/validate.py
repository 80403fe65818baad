"""Validation: every item against its type's schema; invalid ones dropped, reasons counted.

Counters (Scrapy stats, summed into the job's stats in Redis):
``validation/valid/<type>``, ``validation/dropped/<type>`` and one
``validation/invalid/<type>/<field>/<reason>`` per field error (e.g.
``validation/invalid/demo_product/price/float_type``, ``.../name/missing``). Unknown item
classes count as ``validation/dropped/_unknown/<class>``. Each drop is also logged by
Scrapy ("Dropped: ...") with every field error.

With ``REDIS_URL`` each dropped item is also recorded in the job's ledger
(``core.figures.ledger``: keyed by the item's key, else its fields' digest), before the drop: the
report's ``items_invalid`` counts that record, exact after any worker kill.

An ``ItemSeen`` (an item seen unchanged without its page being parsed,
``crawlers.recrawl.context``) has no schema fields: it is passed on when its key and item type
are set and the type is declared, counted ``recrawl/seen/<reason>``; otherwise dropped,
counted ``validation/dropped/_seen``.

A text field longer than ``ITEM_FIELD_MAX_CHARS`` (a 20 MB description) is cut first and
marked (``crawlers.limits.bounded.TRUNCATED_MARK``), counted ``items/truncated_fields`` and
``items/truncated/<type>/<field>``, one WARNING line per item.

The item passed on is pydantic's normalised copy (e.g. an int in a float field becomes a
float), so equal content always hashes equally in dedup.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from core.items_schema import (
    ItemSchema,
    UnknownItemType,
    plain_fields,
)
from crawlers.items import schema_by_type, schema_for
from crawlers.limits.bounded import truncate_text_fields
from crawlers.recrawl.context import ItemSeen
from crawlers.runtime.item_context import carry_context
from crawlers.runtime.jobs import job_of, site_of
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)


class ValidationPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.ledger = CrawlServices.of(crawler).ledger
        self.max_chars = crawler.settings.getint("ITEM_FIELD_MAX_CHARS")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ValidationPipeline:
        return cls(crawler)

    def _inc(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, ItemSeen):
            return self._seen(item)
        try:
            schema = schema_for(item)
        except UnknownItemType as exc:
            self._inc(f"validation/dropped/_unknown/{type(item).__name__}")
            raise DropItem(str(exc)) from None
        self._truncate(item, schema.item_type)
        result = schema.validate(item)
        if result.ok:
            self._inc(f"validation/valid/{schema.item_type}")
            # The item's context (re-crawl state) follows its normalised copy.
            carry_context(item, result.item)
            return result.item
        for error in result.errors:
            self._inc(f"validation/invalid/{schema.item_type}/{error.field}/{error.reason}")
        self._inc(f"validation/dropped/{schema.item_type}")
        fields = ItemAdapter(item)
        where = fields.get(schema.id_field) if schema.id_field else None
        where = where or fields.get(schema.url_field) or "?"
        message = f"invalid {schema.item_type} {where}: " + "; ".join(str(e) for e in result.errors)
        await self._record(schema, item, message)
        raise DropItem(message)

    def _truncate(self, item: Any, item_type: str) -> None:
        """Text fields over ``ITEM_FIELD_MAX_CHARS`` cut and marked, counted, one line."""
        fields = ItemAdapter(item)
        values = {name: fields.get(name) for name in fields.field_names() if name in fields}
        cut = truncate_text_fields(values, self.max_chars)
        if not cut:
            return
        for name in cut:
            fields[name] = values[name]
            self._inc(f"items/truncated/{item_type}/{name}")
        self._inc("items/truncated_fields")
        logger.warning(
            "%s: %s cut at ITEM_FIELD_MAX_CHARS=%d (counted in items/truncated_fields)",
            fields.get("url") or item_type,
            ", ".join(f"{name} ({n} characters dropped)" for name, n in cut.items()),
            self.max_chars,
        )

    def _seen(self, item: ItemSeen) -> ItemSeen:
        problem = None
        if not item.key or not item.item_type:
            problem = "no key or item type"
        elif item.key.split(":", 2)[1:2] != [item.item_type]:
            problem = f"key is not <site>:{item.item_type}:<id>"
        else:
            try:
                schema_by_type(item.item_type)
            except UnknownItemType as exc:
                problem = str(exc)
        if problem is not None:
            self._inc("validation/dropped/_seen")
            raise DropItem(f"invalid ItemSeen {item.key or item.url or '?'}: {problem}")
        self._inc(f"recrawl/seen/{item.reason}")
        return item

    async def _record(self, schema: ItemSchema, item: Any, message: str) -> None:
        fields = plain_fields(item)
        job_id = job_of(fields, self.crawler)
        if self.ledger is None or job_id is None:
            return
        try:
            ref = schema.key(site_of(self.crawler), fields)
        except ValueError:
            # Nothing to key it on: the same invalid content is still one record.
            ref = f"{schema.item_type}:content:{schema.content_hash(fields)}"
        await self.ledger.invalid(job_id, ref, message)
