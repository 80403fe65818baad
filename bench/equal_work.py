"""Equal work in the frontier benchmark: every configuration's items, digested the same way.

Both sides of ``bench.frontier`` produce the demo spider's items with the demo spider's
own extraction (``crawlers.spiders.demo.extract_product``), so they can be compared
item for item: each item is reduced to the digest of its fields (``item_digest``; the
job id aside, which differs per run) and a configuration's items to the digest of their
sorted digests (``combined``), whatever the number of processes that produced them.

Scrapy side: ``DigestingPipelines``, set as ``ITEM_PROCESSOR``, is Scrapy's own pipeline
manager (whatever ``ITEM_PIPELINES`` holds runs unchanged) that also records the digest
of every item that came through all pipelines (``item_scraped``) and writes them, one a
line, to ``<BENCH_DIGEST_DIR>/<pid>.digests`` when the spider closes. Replacing the
manager instead of adding an extension leaves the add-on's component dicts (the
frontier's worker extension among them) as production has them. The crawlee script
(``bench/crawlee_demo.py``) writes the same file with the same ``item_digest``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.pipelines import ItemPipelineManager

from core.items_schema import content_hash, plain_fields

DIGEST_DIR_SETTING = "BENCH_DIGEST_DIR"
# Set per run, not by the page: the same product crawled twice digests the same.
RUN_FIELDS = frozenset({"job_id"})


def item_digest(item: Any) -> str:
    """The digest of an item's fields (dataclass or dict), the run's own fields aside."""
    fields = plain_fields(item)
    return content_hash({name: value for name, value in fields.items() if name not in RUN_FIELDS})


def combined(digests: Iterable[str]) -> str:
    """One digest for a set of items, independent of their order and of who produced them."""
    return hashlib.sha256("\n".join(sorted(digests)).encode()).hexdigest()[:16]


def write_digests(directory: Path, digests: Iterable[str]) -> Path:
    path = directory / f"{os.getpid()}.digests"
    path.write_text("".join(f"{digest}\n" for digest in digests))
    return path


def read_digests(directory: Path) -> list[str]:
    """Every digest the processes of a run wrote in ``directory``."""
    return [
        line for path in sorted(directory.glob("*.digests")) for line in path.read_text().split()
    ]


class DigestingPipelines(ItemPipelineManager):
    """Scrapy's pipeline manager, recording the digest of every item scraped."""

    digests: list[str]
    directory: Path | None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        manager = super().from_crawler(crawler)
        manager.digests = []
        directory = crawler.settings.get(DIGEST_DIR_SETTING)
        manager.directory = Path(directory) if directory else None
        crawler.signals.connect(manager.item_scraped, signal=signals.item_scraped)
        return manager

    def item_scraped(self, item: Any) -> None:
        self.digests.append(item_digest(item))

    async def close_spider_async(self) -> None:
        await super().close_spider_async()
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_digests(self.directory, self.digests)
