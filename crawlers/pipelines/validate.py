"""Validation: every item against its type's schema; invalid ones dropped, reasons counted.

Counters (Scrapy stats, summed into the job's stats in Redis):
``validation/valid/<type>``, ``validation/dropped/<type>`` and one
``validation/invalid/<type>/<field>/<reason>`` per field error (e.g.
``validation/invalid/demo_product/price/float_type``, ``.../name/missing``). Unknown item
classes count as ``validation/dropped/_unknown/<class>``. Each drop is also logged by
Scrapy ("Dropped: ...") with every field error.

The item passed on is pydantic's normalised copy (e.g. an int in a float field becomes a
float), so equal content always hashes equally in dedup.
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from core.items_schema import UnknownItemType, schema_for


class ValidationPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ValidationPipeline:
        return cls(crawler)

    def _inc(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name)

    def process_item(self, item: Any) -> Any:
        try:
            schema = schema_for(item)
        except UnknownItemType as exc:
            self._inc(f"validation/dropped/_unknown/{type(item).__name__}")
            raise DropItem(str(exc)) from None
        result = schema.validate(item)
        if result.ok:
            self._inc(f"validation/valid/{schema.item_type}")
            return result.item
        for error in result.errors:
            self._inc(f"validation/invalid/{schema.item_type}/{error.field}/{error.reason}")
        self._inc(f"validation/dropped/{schema.item_type}")
        fields = ItemAdapter(item)
        where = fields.get(schema.id_field) if schema.id_field else None
        where = where or fields.get(schema.url_field) or "?"
        raise DropItem(
            f"invalid {schema.item_type} {where}: " + "; ".join(str(e) for e in result.errors)
        )
