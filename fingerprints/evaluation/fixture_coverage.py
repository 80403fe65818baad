"""``coverage.json`` derived from the site's fixtures: the items a crawl of them gives.

The builder runs the site's callbacks on its fixture pages offline, as a crawl would
reach them: the pages of the entry page types (a search, a company page) through their
callbacks, and every request that carries a partial item (a search card to its hotel
page, a product to its reviews API) answered from the site's own files, through
``replay.json``'s routes (the replay server's manifest). The complete items' fill rates
are the coverage baseline; the tolerances already reviewed in ``coverage.json`` are kept.

A field some fixture page fills (alone, or on a card) but that no complete item has
(rate 0.0) means the builder lost it, not the site: ``BaselineError``, nothing written.
So does a *hole*: a field of the item type that no derived item has and that the
profile does not declare unread (``[fingerprint] not_read``): no fixture shows it, so
the gate could never see it go (a rental listing's category, a vacation home's missing
score). Each field's rate where the page shows it (``fingerprints.extraction.evidence``) is kept
beside its rate over all items (``when_shown``) when some pages lack it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from itemadapter import ItemAdapter

from fingerprints.baselines.coverage import (
    DEFAULT_MIN_ITEMS,
    DEFAULT_TOLERANCE,
    CoverageBaseline,
    FieldExpectation,
    is_filled,
    load_coverage_baseline,
)
from fingerprints.baselines.store import SITES_DIR, BaselineError, FingerprintConfig, site_dir
from fingerprints.extraction.callbacks import HARNESS_FIELDS, PageOutput, run_callbacks, site_spider
from fingerprints.extraction.evidence import EvidenceRules, Tally, tallies
from fingerprints.sampling.fetch import Page

REPLAY_FILE = "replay.json"
_SET_ON_FAILURE = frozenset({"incomplete"})  # names what a failed part left out: no data


def _canonical(path: str, query: str, ignore: frozenset[str]) -> str:
    pairs = sorted(p for p in parse_qsl(query, keep_blank_values=True) if p[0] not in ignore)
    return path + (f"?{urlencode(pairs)}" if pairs else "")


def _routes(site: str, sites_dir: Path) -> tuple[dict[str, tuple[Path, int, str]], frozenset[str]]:
    root = site_dir(site, sites_dir)
    manifest = root / REPLAY_FILE
    if not manifest.is_file():
        return {}, frozenset()
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    ignore = frozenset(raw.get("ignore_query") or ())
    routes: dict[str, tuple[Path, int, str]] = {}
    for key, spec in (raw.get("routes") or {}).items():
        spec = {"file": spec} if isinstance(spec, str) else dict(spec)
        path, _, query = key.partition("?")
        kind = spec.get("content_type") or (
            "application/json" if str(spec["file"]).endswith(".json") else "text/html"
        )
        routes[_canonical(path, query, ignore)] = (
            root / spec["file"],
            int(spec.get("status", 200)),
            kind,
        )
    return routes, ignore


def replay_fetch(site: str, sites_dir: Path = SITES_DIR) -> Any:
    """A ``Fetch`` answering from the site's files through ``replay.json`` (None: none)."""
    routes, ignore = _routes(site, sites_dir)
    if not routes:
        return None

    def fetch(urls: Sequence[str]) -> dict[str, Page]:
        pages = {}
        for url in urls:
            parts = urlsplit(url)
            route = routes.get(_canonical(parts.path, parts.query, ignore))
            if route is None or not route[0].is_file():
                continue  # not a fixture: reported as not fetched
            path, status, kind = route
            headers = {"Content-Type": kind}
            pages[url] = Page(url, "_parts", status, headers, path.read_bytes(), path=url)
        return pages

    return fetch


def fixture_outputs(
    site: str, sites_dir: Path = SITES_DIR, profiles_dir: Path | None = None
) -> tuple[list[PageOutput], list[PageOutput]]:
    """(every fixture page through its callback alone, the crawl of the entry pages)."""
    from fingerprints.gate import _fixture_sample

    config = FingerprintConfig.for_site(site, profiles_dir)
    callbacks = config.callbacks
    rules = {
        name: EvidenceRules(pt.shows, pt.absent, pt.empty)
        for name, pt in config.page_types.items()
        if pt.shows or pt.absent or pt.empty
    }
    spider = site_spider(site)
    pages = _at_sample_urls(spider, config, _fixture_sample(site, sites_dir), sites_dir)
    alone = run_callbacks(spider, pages, callbacks, declared=config.declared_callbacks, rules=rules)
    # The page types a listing's cards lead to are reached through the cards, as a crawl
    # reaches them: their requests become parts (with the card), answered from the files.
    targets = {callback for output in alone for callback in output.card_callbacks}
    entry = {name: cb for name, cb in callbacks.items() if cb not in targets}
    crawl = run_callbacks(
        spider,
        [page for page in pages if page.page_type in entry],
        entry,
        fetch=replay_fetch(site, sites_dir),
        rules=rules,
        page_types={cb: pt for pt, cb in callbacks.items() if cb},
    )
    return alone, crawl


def _at_sample_urls(
    spider: Any, config: FingerprintConfig, pages: Sequence[Page], sites_dir: Path
) -> list[Page]:
    """Each fixture at the URL the gate's sample requests for it (its ``sample_paths``,
    built by the spider, so a dated search carries its dates), where replay.json says
    which file that URL serves; other fixtures keep their file path."""
    routes, ignore = _routes(spider.name, sites_dir)
    root = site_dir(spider.name, sites_dir)
    base = str(getattr(spider, "base_url", "") or "").rstrip("/")
    urls: dict[str, str] = {}
    for page_type in config.page_types.values():
        for path in page_type.sample_paths:
            url = base + path
            if hasattr(spider, "make_request_from_entry"):
                url = spider.make_request_from_entry({"url": url}).url
            parts = urlsplit(url)
            route = routes.get(_canonical(parts.path, parts.query, ignore))
            if route is not None:
                urls.setdefault(route[0].relative_to(root).as_posix(), url)
    return [replace(page, url=urls.get(page.url, page.url)) for page in pages]


def carried_fields(outputs: Sequence[PageOutput]) -> set[str]:
    """Fields some fixture page fills: on its items or on its cards."""
    records = [record for output in outputs for record in (*output.items, *output.cards)]
    return {
        name
        for record in records
        for name, value in ItemAdapter(record).items()
        if is_filled(value) and name not in HARNESS_FIELDS
    }


def derive_coverage(
    site: str,
    alone: Sequence[PageOutput],
    crawl: Sequence[PageOutput],
    previous: CoverageBaseline | None = None,
    *,
    fields: Sequence[str] = (),
    not_read: Sequence[str] = (),
) -> CoverageBaseline:
    """The coverage baseline of the crawl's items (pure); ``previous``' tolerances kept.

    Raises ``BaselineError`` when there is no item, a field the fixtures carry has a rate
    of 0.0 (the builder missed it: a card not joined, a part not answered), a field of
    ``fields`` (the item type's) has none and is not in ``not_read`` (a hole), or a field
    of ``not_read`` is filled."""
    groups = [
        ([_without_failure(item) for item in items], evidence)
        for output in crawl
        for items, evidence in output.item_groups()
    ]
    items = [item for chunk, _ in groups for item in chunk]
    derived = CoverageBaseline.from_items(
        site,
        items,
        tolerance=previous.tolerance if previous else DEFAULT_TOLERANCE,
        min_items=previous.min_items if previous else DEFAULT_MIN_ITEMS,
    )
    shown = tallies(groups)
    derived = replace(
        derived,
        fields={
            name: replace(e, when_shown=_when_shown(shown.get(name), len(items)))
            for name, e in derived.fields.items()
        },
    )
    holes = sorted(
        name
        for name in fields
        if name not in not_read
        and name not in HARNESS_FIELDS | _SET_ON_FAILURE
        and derived.fields.get(name, FieldExpectation(0.0)).rate == 0.0
    )
    if holes:
        raise BaselineError(
            f"{site}: no fixture shows {', '.join(holes)} (rate 0.0): add a fixture page "
            "that has it, or name it in the profile's [fingerprint] not_read; "
            "coverage.json not written"
        )
    unread = sorted(n for n in not_read if derived.fields.get(n, FieldExpectation(0)).rate > 0)
    if unread:
        raise BaselineError(
            f"{site}: the profile's [fingerprint] not_read names {', '.join(unread)}, which "
            "the fixtures fill; coverage.json not written"
        )
    missed = sorted(
        name
        for name in carried_fields([*alone, *crawl])
        if derived.fields.get(name, FieldExpectation(0.0)).rate == 0.0
    )
    if missed:
        raise BaselineError(
            f"{site}: the fixtures carry {', '.join(missed)} but no derived item has it "
            "(rate 0.0): the coverage builder lost it; coverage.json not written"
        )
    if previous is None:
        return derived
    kept = {
        name: replace(e, tolerance=previous.fields[name].tolerance)
        if name in previous.fields
        else e
        for name, e in derived.fields.items()
    }
    return CoverageBaseline(site, kept, derived.tolerance, derived.min_items, derived.items)


def _without_failure(item: Any) -> dict[str, Any]:
    return {k: v for k, v in ItemAdapter(item).items() if k not in _SET_ON_FAILURE}


def _when_shown(total: Tally | None, items: int) -> float | None:
    """The rate among the items expected to have the field, when that is not all of them."""
    if total is None or total.expected >= items or not total.expected:
        return None
    return round(total.filled / total.expected, 4)


def coverage_from_fixtures(
    site: str, sites_dir: Path = SITES_DIR, profiles_dir: Path | None = None
) -> CoverageBaseline:
    """What ``python -m fingerprints coverage <site> --from-fixtures`` writes."""
    try:
        previous: CoverageBaseline | None = load_coverage_baseline(site, sites_dir)
    except BaselineError:
        previous = None
    alone, crawl = fixture_outputs(site, sites_dir, profiles_dir)
    config = FingerprintConfig.for_site(site, profiles_dir)
    return derive_coverage(
        site,
        alone,
        crawl,
        previous,
        fields=item_fields(crawl),
        not_read=config.not_read,
    )


def item_fields(outputs: Sequence[PageOutput]) -> tuple[str, ...]:
    """Every field of the item type the outputs yield (none without an item)."""
    for output in outputs:
        for item in output.items:
            return tuple(ItemAdapter(item).field_names())
    return ()


def describe(baseline: CoverageBaseline) -> Mapping[str, float]:
    return {name: e.rate for name, e in sorted(baseline.fields.items())}
