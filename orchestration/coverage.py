"""The job's field coverage at job end (``fingerprints.baselines.coverage``), from what it
extracted.

The items are the job's documents in Elasticsearch that it extracted from their pages
(``core.store.read.extracted_by_job``: written in full by the job, new, changed or
unchanged). Items it only saw, unchanged by a 304 or by their listing card, are not: their
documents hold what an earlier job read, and judging those would pass a layout the
spider can no longer read as "coverage ok". Each is reduced to its item type's fields
(the store's own fields, ``content_hash``, ``first_seen``..., are not the site's data);
a job that extracted fewer items than the baseline's ``min_items`` is not judged (the
report says so). Their fill rates are judged against ``fingerprints/sites/<site>/
coverage.json`` when the site has one; a drop beyond its tolerance alerts
(``coverage_drop``). A site without one gets its measured rates in the report only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from core.config import PlatformSettings
from core.store.layout import COMMON_PROPERTIES
from core.store.read import extracted_by_job
from crawlers.items import registered_types
from fingerprints.baselines.coverage import CoverageReport, job_end_coverage
from orchestration.alerts import Delivery, notify
from orchestration.report import drop_text


def item_fields(document: Mapping[str, Any]) -> dict[str, Any]:
    """A stored document's item fields: its item type's fields (a field the store left
    out because it was empty counts as empty), or, for a type this process does not
    know, every field but the store's own."""
    schema = registered_types().get(str(document.get("item_type")))
    if schema is not None:
        return {name: document.get(name) for name in schema.field_names}
    return {name: value for name, value in document.items() if name not in COMMON_PROPERTIES}


def job_coverage(es: Elasticsearch, site: str, job_id: str, *, sites_dir: Path) -> CoverageReport:
    """The fill rates of the items the job extracted, judged against the site's coverage
    baseline if it has one."""
    items = [item_fields(document) for document in extracted_by_job(es, site, job_id)]
    fields = {name for item in items for name in item}
    return job_end_coverage(site, items, fields=sorted(fields), sites_dir=sites_dir)


def alert_coverage_drop(
    coverage: Mapping[str, Any],
    *,
    job_id: str,
    run_url: str | None,
    settings: PlatformSettings | None = None,
) -> Delivery | None:
    """The ``coverage_drop`` alert when a field's fill rate dropped beyond its tolerance
    (``CoverageReport.to_dict()``); None (nothing sent) when none did."""
    drops = coverage.get("drops") or []
    if not drops:
        return None
    return notify(
        "coverage_drop",
        settings=settings,
        site=coverage["site"],
        job_id=job_id,
        items=coverage["items"],
        drops=[drop_text(drop) for drop in drops],
        run_url=run_url,
    )
