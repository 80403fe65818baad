"""Test helpers: a demo job's items stored as the real pipelines store them, and an
embedder wrapper that counts calls and remembers vectors across tests.

``store_job`` pushes demo products through the platform's own item pipelines
(validate -> dedup -> store, built with ``from_crawler`` as Scrapy builds them) into a
real Redis and a real Elasticsearch node: the items land in ``items-<site>`` and the job's
new/changed keys in Redis exactly as after a crawl, without the HTTP part of the crawl.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import hashlib
import os
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from itemadapter import ItemAdapter
from scrapy.utils.test import get_crawler

from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from indexing.embedders import Embedder, LocalEmbedder
from standins.demo_site.catalog import Product
from tests.indexing import stored_vectors
from tests.indexing.stored_vectors import StoredVectors

BASE_URL = "http://demo.example"
PLATFORM = {"crawlers.addon.ScrapingPlatform": 0}


def product_item(product: Product, job_id: str, **changes: Any) -> DemoProduct:
    fields = {**product.to_dict(BASE_URL), **changes, "job_id": job_id}
    return DemoProduct(**fields)


def store_job(
    es_url: str, redis_url: str, site: str, job_id: str, items: Iterable[DemoProduct]
) -> dict[str, Any]:
    """Run ``items`` through the real pipelines as job ``job_id`` of ``site``; the stats."""
    services = {"REDIS_URL": redis_url, "ELASTICSEARCH_URL": es_url}
    return asyncio.run(_push(site, job_id, list(items), services))


async def _push(
    site: str, job_id: str, items: list[DemoProduct], services: dict[str, str]
) -> dict[str, Any]:
    # The platform add-on (its defaults), configured by settings as a crawl is.
    settings = {"ADDONS": PLATFORM, **services, "LOG_LEVEL": "WARNING"}
    crawler = get_crawler(DemoSpider, settings)
    crawler.spider = DemoSpider.from_crawler(crawler, job_id=job_id, base_url=BASE_URL)
    crawler.spider.name = site  # the pipelines key everything by the spider's name
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    await dedup.open_spider()
    await store.open_spider()
    slots = asyncio.Semaphore(200)

    async def one(item: DemoProduct) -> None:
        async with slots:
            valid = await validate.process_item(ItemAdapter(item).item)
            await store.process_item(await dedup.process_item(valid))

    await asyncio.gather(*(one(item) for item in items))
    await store.close_spider()
    await CrawlServices.of(crawler).aclose()
    return dict(crawler.stats.get_stats())


class SharedVectors:
    """Vectors one model computed, shared by the xdist workers of one test run.

    The search and indexing fixtures embed the same demo catalog on several workers; the
    first worker to need a text embeds it while holding a file lock, the others wait and
    read it. One SQLite file per model under the run's shared temporary directory, so
    nothing outlives the run and a changed embedder is never served stale vectors.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_suffix(".lock")
        with closing(sqlite3.connect(path, timeout=60)) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, v BLOB)")

    @contextmanager
    def held(self) -> Iterator[None]:
        with open(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get(self, texts: Sequence[str]) -> dict[str, list[float]]:
        by_hash = {_text_hash(t): t for t in texts}
        found: dict[str, list[float]] = {}
        with closing(sqlite3.connect(self.path, timeout=60)) as db:
            hashes = list(by_hash)
            for start in range(0, len(hashes), 500):  # SQLite's bound-parameter limit
                part = hashes[start : start + 500]
                marks = ",".join("?" * len(part))
                query = f"SELECT text_hash, v FROM vectors WHERE text_hash IN ({marks})"
                for text_hash, blob in db.execute(query, part):
                    found[by_hash[text_hash]] = array("d", blob).tolist()
        return found

    def put(self, vectors: dict[str, list[float]]) -> None:
        rows = [(_text_hash(t), array("d", v).tobytes()) for t, v in vectors.items()]
        with closing(sqlite3.connect(self.path, timeout=60)) as db, db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RecordingEmbedder:
    """Wraps a real embedder: counts the texts it is asked for, and serves repeats of a
    text from memory, from ``stored`` (the demo catalog's vectors kept in the repository:
    ``tests.indexing.stored_vectors``) and from ``shared`` (the other workers' vectors),
    so the suite embeds a text once per model, not once per site, worker or run.
    ``computed`` counts the texts the model itself embedded in this process."""

    def __init__(
        self,
        inner: Embedder,
        shared: SharedVectors | None = None,
        stored: StoredVectors | None = None,
    ) -> None:
        self.inner = inner
        self.shared = shared
        self.stored = stored
        self.calls = 0
        self.texts = 0
        self.computed = 0
        self._memory: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    @property
    def memory(self) -> dict[str, list[float]]:
        """Every vector this process has served, by text."""
        with self._lock:
            return dict(self._memory)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
            missing = sorted({t for t in texts if t not in self._memory})
        if missing:
            vectors = self.stored.get(missing) if self.stored is not None else {}
            rest = [t for t in missing if t not in vectors]
            if rest:
                vectors.update(self._compute(rest))
            with self._lock:
                self._memory.update(vectors)
        return [self._memory[t] for t in texts]

    def _compute(self, texts: list[str]) -> dict[str, list[float]]:
        if self.shared is None:
            return self._embed(texts)
        with self.shared.held():
            found = self.shared.get(texts)
            missing = [t for t in texts if t not in found]
            if missing:
                made = self._embed(missing)
                self.shared.put(made)
                found.update(made)
        return found

    def _embed(self, texts: list[str]) -> dict[str, list[float]]:
        vectors = dict(zip(texts, self.inner.embed(texts), strict=True))
        with self._lock:
            self.computed += len(texts)
        return vectors


class CountingModel:
    """A deterministic stand-in model that records what it was asked to embed (its values
    are exact in float16, as the kept vectors store them)."""

    dims = 3

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return [[float(len(t)), float(sum(map(ord, t))), 0.5] for t in texts]


def recording(inner: Embedder, shared_dir: Path | None) -> RecordingEmbedder:
    """``inner`` behind the run's shared vectors and, unless they are being rewritten
    (``make test-vectors``), the vectors kept in the repository."""
    stored = None if stored_vectors.writing() else StoredVectors.load(inner.name)
    return RecordingEmbedder(inner, shared_vectors(shared_dir, inner.name), stored)


def shared_vectors(directory: Path | None, model: str) -> SharedVectors | None:
    """The run's shared vectors of ``model`` under ``directory`` (None: not shared)."""
    if directory is None:
        return None
    digest = hashlib.sha256(model.encode()).hexdigest()[:16]
    return SharedVectors(directory / f"vectors-{digest}.sqlite")


def run_shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A directory every xdist worker of this run shares: the run's temporary root, which
    holds each worker's base directory (None outside xdist: nothing to share)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return None
    return tmp_path_factory.getbasetemp().parent


@functools.cache
def shared_local_embedder(directory: Path | None = None) -> RecordingEmbedder:
    """One offline model per test process, shared by tests/indexing and tests/search (and
    its vectors by the run's workers through ``directory``). One inference thread: the
    run's workers already fill the cores, and a second thread costs 10% more CPU for the
    same vectors (measured on 100 chunks: 8.2 vs 9.0 CPU s)."""
    return recording(LocalEmbedder(threads=1), directory)
