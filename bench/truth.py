"""Truth from outside: what a chaos run stored, against the generator and the job's report.

The report side is what the flow's report step writes and what its readers read: the jobs
document, written into Elasticsearch's ``jobs`` index by ``core.jobs.index.write_job_document``
over ``job_counters`` as the step writes it, then read back from there (never re-derived
here). The truth
side is the items index in Elasticsearch (read through ``core.store.read``) compared with
the demo shop's generator (``standins.demo_site.catalog``), and the shop's access log.

* ``tally(expected, docs, started_ms)`` is pure: expected products by item key and the
  stored documents in, a ``Truth`` out;
* ``read_docs`` / ``report_document`` do the I/O (``report_document`` writes the jobs
  document and reads it back);
* ``checks(document, truth, ...)`` pairs each report figure with its truth.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from elasticsearch import Elasticsearch
from elasticsearch.helpers import scan

from core.jobs.index import JOBS_ALIAS, job_counters, job_started_at, write_job_document
from core.store import get_items, items_index, spill_size
from crawlers.items import schema_by_type
from standins.demo_site.catalog import Catalog

SITE = "demo"
ITEM_TYPE = "demo_product"
# A product's parts: fetched by requests of their own after its page (the reviews API).
PARTS = ("reviews",)
# What a stored document is compared on besides its parts (bookkeeping fields aside).
PRODUCT_FIELDS = (
    "sku",
    "url",
    "name",
    "brand",
    "category",
    "category_slug",
    "price",
    "currency",
    "availability",
    "rating",
    "review_count",
    "description",
    "image",
)
SAMPLE = 5  # example keys kept per finding, for the report


def item_key(sku: str) -> str:
    return schema_by_type(ITEM_TYPE).key(SITE, {"sku": sku})


def expected_products(catalog: Catalog, base_url: str) -> dict[str, dict[str, Any]]:
    """The generator's products, as the spider should extract them, by item key."""
    return {item_key(p.sku): p.to_dict(base_url) for p in catalog.products}


@dataclass
class Truth:
    """What is in Elasticsearch, measured against the generator."""

    expected: int
    stored: int  # documents in the site's items index
    job_docs: int  # documents whose job_id is the job's
    new: int  # job documents first seen during the job
    changed: int  # job documents seen before the job whose content changed in it
    unchanged: int  # job documents seen before the job, content as it was
    missing: list[str] = field(default_factory=list)  # expected keys without a document
    unexpected: list[str] = field(default_factory=list)  # documents of keys not expected
    duplicate_skus: list[str] = field(default_factory=list)  # skus on 2+ documents
    duplicate_urls: list[str] = field(default_factory=list)  # urls on 2+ documents
    incomplete: list[str] = field(default_factory=list)  # documents marked incomplete
    parts_missing: dict[str, list[str]] = field(default_factory=dict)  # key -> parts marked
    # part -> documents (a plain dict: dataclasses.asdict mangles a Counter)
    incomplete_parts: dict[str, int] = field(default_factory=dict)
    complete_without_parts: list[str] = field(default_factory=list)  # unmarked, parts wrong
    marked_but_complete: list[str] = field(default_factory=list)  # marked, parts all there
    wrong_fields: list[str] = field(default_factory=list)  # product fields differ

    @property
    def duplicates(self) -> int:
        return len(self.duplicate_skus) + len(self.duplicate_urls)


def incomplete_parts(doc: Mapping[str, Any]) -> list[str]:
    """The parts a document says it is missing (``incomplete``); [] when complete."""
    value = doc.get("incomplete")
    if not value:
        return []
    return [str(part) for part in (value if isinstance(value, list) else [value])]


def tally(
    expected: Mapping[str, Mapping[str, Any]],
    docs: Iterable[Mapping[str, Any]],
    *,
    job_id: str,
    started_ms: int | None,
) -> Truth:
    """Compare the stored documents (``_source`` of each, scanned) with ``expected``.

    ``started_ms``: when the job was produced; a job document first seen at or after it
    is new, one seen before changed (``last_changed`` at or after it) or unchanged.
    """
    docs = list(docs)
    keys = Counter(str(doc.get("item_key")) for doc in docs)
    skus = Counter(str(doc.get("sku")) for doc in docs)
    urls = Counter(str(doc.get("url")) for doc in docs)
    truth = Truth(
        expected=len(expected),
        stored=len(docs),
        job_docs=0,
        new=0,
        changed=0,
        unchanged=0,
        missing=sorted(set(expected) - set(keys)),
        unexpected=sorted(set(keys) - set(expected)),
        duplicate_skus=sorted(sku for sku, n in skus.items() if n > 1),
        duplicate_urls=sorted(url for url, n in urls.items() if n > 1),
    )
    # Same key twice cannot be two documents (the id is the key); a repeated key here
    # would be a second index behind the read alias.
    truth.duplicate_skus += sorted(f"key:{key}" for key, n in keys.items() if n > 1)
    for doc in docs:
        key = str(doc.get("item_key"))
        if doc.get("job_id") == job_id:
            truth.job_docs += 1
            first_seen = _epoch_ms(doc.get("first_seen"))
            last_changed = _epoch_ms(doc.get("last_changed"))
            if started_ms is None or (first_seen is not None and first_seen >= started_ms):
                truth.new += 1
            elif last_changed is not None and last_changed >= started_ms:
                truth.changed += 1
            else:
                truth.unchanged += 1
        want = expected.get(key)
        if want is None:
            continue
        marked = incomplete_parts(doc)
        parts_ok = all(_same(doc.get(part), want.get(part)) for part in PARTS)
        if marked:
            truth.incomplete.append(key)
            truth.parts_missing[key] = marked
            for part in marked:
                truth.incomplete_parts[part] = truth.incomplete_parts.get(part, 0) + 1
            if parts_ok:
                truth.marked_but_complete.append(key)
        elif not parts_ok:
            truth.complete_without_parts.append(key)
        if not all(_same(doc.get(name), want.get(name)) for name in PRODUCT_FIELDS):
            truth.wrong_fields.append(key)
    for found in (truth.incomplete, truth.complete_without_parts, truth.wrong_fields):
        found.sort()
    return truth


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(wanted, float) or isinstance(stored, float):
        return stored is not None and wanted is not None and abs(stored - wanted) < 1e-9
    return bool(stored == wanted)


def _epoch_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


# -- I/O ------------------------------------------------------------------------------------


def read_docs(es: Elasticsearch, expected_keys: Iterable[str]) -> list[dict[str, Any]]:
    """Every document behind the site's read alias (scanned), after a refresh.

    The expected keys are also fetched by id (``get_items``, real time): a document the
    scan saw must be the one the key names, so the two reads agree or the index is off.
    """
    es.indices.refresh(index=items_index(SITE))
    docs = [
        hit["_source"]
        for hit in scan(es, index=items_index(SITE), query={"query": {"match_all": {}}}, size=1000)
    ]
    by_id = get_items(es, expected_keys, site=SITE)
    scanned = {str(doc.get("item_key")) for doc in docs}
    if set(by_id) - scanned:
        raise RuntimeError(
            f"{len(set(by_id) - scanned)} documents found by id but not by the scan of "
            f"{items_index(SITE)}"
        )
    return docs


def report_document(server: redis.Redis, es: Elasticsearch, job_id: str) -> dict[str, Any]:
    """The job's document as the flow's report step writes it into the ``jobs`` index
    (``orchestration.scrape_tasks.report_task``: the job's counters from Redis, the spill
    left), read back from Elasticsearch: what the run report, Kibana and Slack show."""
    write_job_document(
        es,
        SITE,
        job_id,
        "completed",
        job_started_at(server, SITE, job_id),
        dt.datetime.now(dt.UTC),
        job_counters(server, SITE, job_id),
        spill_remaining=spill_size(server, SITE),
        refresh=True,
    )
    return dict(es.get(index=JOBS_ALIAS, id=f"{SITE}:{job_id}")["_source"])


# -- checks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One line of the verdict: a figure against its truth.

    ``enforced`` checks decide the run (exit code, test); the others are shown only.
    ``limit``: the check passes when ``report <= truth`` (a time against its bound).
    """

    name: str
    report: float | int | None
    truth: float | int | None
    enforced: bool = True
    limit: bool = False
    note: str = ""

    @property
    def ok(self) -> bool:
        if self.report is None or self.truth is None:
            return not self.enforced
        if self.limit:
            return self.report <= self.truth
        return self.report == self.truth

    @property
    def failed(self) -> bool:
        """Whether this check fails the run: an enforced one that is not ok (``info`` rows
        are shown, never counted)."""
        return self.enforced and not self.ok

    @property
    def verdict(self) -> str:
        if not self.enforced:
            return "info"
        if self.ok:
            return "ok"
        if self.limit or self.report is None or self.truth is None:
            return "FAIL"
        return f"FAIL ({self.report - self.truth:+})"


REPORT_FIGURES = (
    # (jobs-document field, Truth attribute)
    ("items_scraped", "job_docs"),
    ("items_stored", "job_docs"),
    ("items_new", "new"),
    ("items_changed", "changed"),
    ("items_unchanged", "unchanged"),
)


def checks(document: Mapping[str, Any], truth: Truth, *, blocks_served: int) -> list[Check]:
    """The store's truth and every report figure against it (see the module docstring)."""
    result = [
        Check("stored docs vs expected", truth.stored, truth.expected),
        Check("missing", len(truth.missing), 0),
        Check("duplicates (same sku or url twice)", truth.duplicates, 0),
        Check("unexpected docs (key not in the catalog)", len(truth.unexpected), 0),
        Check("complete without parts", len(truth.complete_without_parts), 0),
        Check("product fields differ from generator", len(truth.wrong_fields), 0),
        Check("incomplete (docs marked)", len(truth.incomplete), None, enforced=False),
        Check("marked incomplete but complete", len(truth.marked_but_complete), 0, False),
    ]
    for name, attribute in REPORT_FIGURES:
        result.append(Check(f"report {name}", document.get(name), getattr(truth, attribute)))
    result += [
        # The demo shop serves no invalid product: every page carries the required fields.
        Check("report items_invalid", document.get("items_invalid"), 0),
        Check(
            "report items_incomplete",
            document.get("items_incomplete"),
            len(truth.incomplete),
            note="field not in the jobs document yet" if "items_incomplete" not in document else "",
        ),
        Check("report spill_remaining", document.get("spill_remaining"), 0),
        # Blocks a worker saw and died before recording cannot be counted by anyone, so
        # the shop's count of block pages served is shown, not enforced.
        Check("report blocks vs block pages served", document.get("blocks"), blocks_served, False),
    ]
    return result
