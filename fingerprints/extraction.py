"""Does the data still come out? The site's own callbacks on a sample whose structure changed.

A structure change is not always a scraping failure: a redesign that renames classes and
wraps blocks in new elements leaves JSON-LD, microdata and ``__NEXT_DATA__`` in place, and
the spider reads its fields from those. So when the gate sees a changed page type, it
runs the callback the profile names for it (``[fingerprint.page_types.<type>] callback``)
on the sampled pages and judges what comes out.

Two halves, I/O at the edges:

- ``run_callbacks`` is the harness: it builds the site spider with the project's settings
  (no crawl, no reactor, no frontier, no pipelines) and calls the callback on each page.
  A request that carries a partial item in ``cb_kwargs`` completes that item (a reviews
  API, a detail page): it is fetched with ``fetch`` (the sampler, in the live gate) and its
  callback run, up to ``PART_DEPTH`` hops. Any other request is navigation: counted, never
  followed. A request to the callback another page type declares (a search page's detail
  pages) is navigation too, even with a partial item: that page type is judged on its own
  sample, and the partial item is kept as one of the page's *cards* (what the listing
  read of each card: its price, currency, title). ``declared`` names every callback of the
  site's profile, also when only some page types are judged (``--page-type``). A POST
  (a GraphQL continuation) is never a part: ``fetch`` gets URLs. Requests back to the
  page's own callback are counted apart (``pagination``). Items are tagged with the
  spider's job id, as ``JobTagMiddleware`` would.
- ``judge_extraction`` is pure: outputs and the site's coverage baseline in, a report out.
  Extraction is complete when every page yielded items or requests other than its own
  pagination (a listing's detail pages), no callback failed, every
  item validates against its schema (``core.items_schema``), no field of the coverage
  baseline is lost (``fingerprints.evidence.judge_lost``: a field the page does not show
  is absent, not lost) and no card field is lost (``card_baselines``: the fill rates of
  the cards the same callback reads on the site's fixtures).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.responsetypes import responsetypes
from scrapy.settings import Settings
from scrapy.spiderloader import get_spider_loader
from scrapy.statscollectors import MemoryStatsCollector

from core.items_schema import UnknownItemType
from crawlers.items import schema_for
from fingerprints.coverage import CoverageBaseline, is_filled, lost_fields
from fingerprints.evidence import PageItems, judge_lost, missed, page_evidence
from fingerprints.sampler import Page

SETTINGS_MODULE = "crawlers.settings"
PART_DEPTH = 2  # product page -> reviews API -> (one more, e.g. a second API page)
MAX_INVALID_SHOWN = 5
CARD_NO_DROPS = 2**31  # card baselines' min_items: never enough cards to judge drops
# A failed page type without items failed on every field the baseline fills this often.
EXPECTED_RATE = 0.5
_HARNESS_FIELDS = frozenset({"job_id", "incomplete"})  # set by middlewares, not extraction
# Fetch absolute URLs (the follow-up requests of a sample): one Page per URL, by URL.
Fetch = Callable[[Sequence[str]], Mapping[str, Page]]


@dataclass(frozen=True)
class PageOutput:
    """What the callback (and the parts it asked for) yielded for one sampled page."""

    url: str
    page_type: str
    callback: str | None
    items: tuple[Any, ...] = ()
    requests: int = 0  # navigation requests: counted, not followed
    errors: tuple[str, ...] = ()  # the callback raised, none declared, a part not fetched
    pagination: int = 0  # requests back to the page's own callback: no proof of data
    # The partial items of requests to another page type's callback (a search card).
    cards: tuple[Any, ...] = ()
    card_callbacks: frozenset[str] = frozenset()  # the callbacks the cards go to
    # Field -> whether the page shows it, for the fields its profile gives a ``shows`` rule.
    evidence: Mapping[str, bool] = field(default_factory=dict)


# -- the harness (builds the spider, calls callbacks; fetches only through ``fetch``) ------


def site_spider(site: str, base_url: str | None = None) -> Spider:
    """The site's spider with its profile's settings, ready for callbacks, never crawling."""
    settings = Settings()
    settings.setmodule(SETTINGS_MODULE, priority="project")
    spider_class = get_spider_loader(settings).load(site)
    crawler = Crawler(spider_class, settings)
    crawler.stats = MemoryStatsCollector(crawler)  # the spiders count what they see
    kwargs: dict[str, Any] = {"job_id": f"fingerprint-{site}"}
    if base_url:
        kwargs["base_url"] = base_url
    spider = spider_class.from_crawler(crawler, **kwargs)
    crawler.spider = spider
    return spider


def page_response(
    page: Page, request: Request | None = None, base: str = "http://fixture.invalid"
) -> Response:
    """The page as Scrapy gives it to a callback (a fixture's path is put under ``base``)."""
    url = page.url if "://" in page.url else base.rstrip("/") + "/" + page.url.lstrip("/")
    headers = dict(page.headers)
    cls = responsetypes.from_args(headers=headers, url=url, body=page.body)
    request = request or Request(url)
    return cls(url=url, status=page.status, headers=headers, body=page.body, request=request)


def run_callbacks(
    spider: Spider,
    pages: Sequence[Page],
    callbacks: Mapping[str, str | None],
    *,
    fetch: Fetch | None = None,
    declared: Iterable[str] | None = None,
    shows: Mapping[str, Mapping[str, str]] | None = None,
) -> list[PageOutput]:
    """Each page through its page type's callback; parts fetched with ``fetch`` (none:
    a part is reported as not fetched, e.g. in the fixture check, which has no network).

    ``declared``: every callback the site's profile names (None: those of ``callbacks``);
    a request to one is another page type's page, never fetched. ``shows``: page type ->
    field -> the rule of ``fingerprints.evidence`` (what each page shows is recorded)."""
    outputs: list[PageOutput] = []
    pending: list[tuple[int, Request]] = []
    declared = set(declared or ()) | {name for name in callbacks.values() if name}
    for page in pages:
        name = callbacks.get(page.page_type)
        method = getattr(spider, name, None) if name else None
        if method is None:
            problem = (
                f"the spider has no method {name!r}"
                if name
                else f"no callback declared ([fingerprint.page_types.{page.page_type}] callback)"
            )
            outputs.append(PageOutput(page.url, page.page_type, name, errors=(problem,)))
            continue
        base = str(getattr(spider, "base_url", "") or "http://fixture.invalid")
        response = page_response(page, base=base)
        output, parts = _call(spider, method, response, {}, page, name, declared)
        rules = (shows or {}).get(page.page_type) or {}
        if rules:
            output = replace(output, evidence=page_evidence(page.body, rules))
        pending += [(len(outputs), part) for part in parts]
        outputs.append(output)
    for _ in range(PART_DEPTH):
        if not pending:
            break
        pending = _follow(spider, outputs, pending, fetch)
    for index, request in pending:
        outputs[index] = _with_error(outputs[index], f"{request.url}: more than {PART_DEPTH} hops")
    return outputs


def _follow(
    spider: Spider,
    outputs: list[PageOutput],
    pending: list[tuple[int, Request]],
    fetch: Fetch | None,
) -> list[tuple[int, Request]]:
    if fetch is None:
        for index, request in pending:
            problem = f"{request.url}: follow-up request not fetched (no network in this check)"
            outputs[index] = _with_error(outputs[index], problem)
        return []
    fetched = fetch(list(dict.fromkeys(request.url for _, request in pending)))
    more: list[tuple[int, Request]] = []
    for index, request in pending:
        page = fetched.get(request.url)
        reason = _unusable(page)
        if page is None or reason:
            outputs[index] = _with_error(outputs[index], f"{request.url}: {reason}")
            continue
        method = request.callback if callable(request.callback) else spider.parse
        output, parts = _call(
            spider, method, page_response(page, request), request.cb_kwargs, page, None, set()
        )
        outputs[index] = replace(
            outputs[index],
            items=outputs[index].items + output.items,
            requests=outputs[index].requests + output.requests,
            errors=outputs[index].errors + output.errors,
        )
        more += [(index, part) for part in parts]
    return more


def _unusable(page: Page | None) -> str:
    if page is None:
        return "not fetched"
    if page.error:
        return page.error
    if not 200 <= page.status < 300:
        return f"HTTP {page.status}"
    return ""


def _with_error(output: PageOutput, problem: str) -> PageOutput:
    return replace(output, errors=(*output.errors, problem))


def _call(
    spider: Spider,
    method: Callable[..., Any],
    response: Response,
    kwargs: Mapping[str, Any],
    page: Page,
    name: str | None,
    declared: set[str],
) -> tuple[PageOutput, list[Request]]:
    """``declared``: the callbacks the profile names (a request to one is never followed:
    its page type is judged on its own sample)."""
    items: list[Any] = []
    parts: list[Request] = []
    cards: list[Any] = []
    card_callbacks: set[str] = set()
    navigation = pagination = 0
    try:
        for output in _outputs(method(response, **kwargs)):
            if isinstance(output, Request):
                target = _callback_name(output)
                if name and target == name:
                    pagination += 1
                if output.cb_kwargs and output.method == "GET" and target not in declared:
                    parts.append(output)  # carries a partial item: part of this page's data
                else:
                    navigation += 1
                    if target in declared and target != name:
                        cards += _partial_items(output.cb_kwargs)
                        card_callbacks.add(target)
            elif is_item(output):
                items.append(_tagged(output, spider))
    except Exception as exc:  # a callback that crashes on the new layout: extraction failed
        problem = f"{response.url}: {getattr(method, '__name__', 'callback')} raised {exc!r}"
        errors: tuple[str, ...] = (problem,)
        parts = []
    else:
        errors = ()
    result = PageOutput(
        page.url,
        page.page_type,
        name,
        tuple(items),
        navigation,
        errors,
        pagination=pagination,
        cards=tuple(cards),
        card_callbacks=frozenset(card_callbacks),
    )
    return result, parts


def _partial_items(kwargs: Mapping[str, Any]) -> list[Any]:
    """The partial items a request carries (``cb_kwargs={"partial": {...}}``)."""
    return [value for value in kwargs.values() if isinstance(value, Mapping) or is_item(value)]


def _callback_name(request: Request) -> str:
    """The name of the spider method a request calls back (Scrapy's default: ``parse``)."""
    callback = request.callback
    if callback is None:
        return "parse"
    return str(getattr(callback, "__name__", callback))


def _outputs(result: Any) -> list[Any]:
    """A callback's outputs, whether it returns, yields or is ``async``."""
    if result is None:
        return []
    if inspect.isasyncgen(result):

        async def drain() -> list[Any]:
            return [output async for output in result]

        return asyncio.run(drain())
    if inspect.iscoroutine(result):
        return _outputs(asyncio.run(result))
    if isinstance(result, Request) or is_item(result):
        return [result]
    return list(result)


def _tagged(item: Any, spider: Spider) -> Any:
    adapter = ItemAdapter(item)
    job_id = getattr(spider, "job_id", None)
    if job_id and "job_id" in adapter.field_names() and not adapter.get("job_id"):
        adapter["job_id"] = job_id
    return item


# -- the judgement (pure) -----------------------------------------------------------------------


@dataclass(frozen=True)
class PageTypeExtraction:
    page_type: str
    callback: str | None
    pages: int
    items: int
    requests: int
    invalid: tuple[Mapping[str, Any], ...] = ()  # {"url", "errors": [...]}
    lost_fields: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    expected_fields: tuple[str, ...] = ()  # the coverage baseline's (for a failed type)
    cards: int = 0
    lost_card_fields: tuple[str, ...] = ()  # card fields lost on every card of the sample

    @property
    def complete(self) -> bool:
        return (
            not self.errors
            and not self.invalid
            and not self.lost_fields
            and not self.lost_card_fields
        )

    @property
    def failed_fields(self) -> list[str]:
        """Fields lost on this page type's items or invalid on one of them; when it failed
        without yielding a single item, every field the coverage baseline expects."""
        if self.errors and not self.items:
            return list(self.expected_fields)
        names = list(self.lost_fields)
        names += [name for name in self.lost_card_fields if name not in names]
        for entry in self.invalid:
            for error in entry["errors"]:
                name = error.split(":", 1)[0].split(".", 1)[0]
                if name not in names:
                    names.append(name)
        return names

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "callback": self.callback,
            "pages": self.pages,
            "items": self.items,
            "requests": self.requests,
            "invalid_items": len(self.invalid),
            "invalid": list(self.invalid[:MAX_INVALID_SHOWN]),
            "lost_fields": list(self.lost_fields),
            "cards": self.cards,
            "lost_card_fields": list(self.lost_card_fields),
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class ExtractionReport:
    page_types: Mapping[str, PageTypeExtraction] = field(default_factory=dict)
    lost: tuple[str, ...] = ()  # coverage baseline fields lost over the whole sample
    coverage_note: str = ""  # e.g. no coverage baseline: only the item schemas judged

    @property
    def complete(self) -> bool:
        return bool(self.page_types) and all(p.complete for p in self.page_types.values())

    @property
    def failed_fields(self) -> dict[str, list[str]]:
        return {
            name: result.failed_fields
            for name, result in self.page_types.items()
            if result.failed_fields
        }

    def problems(self, limit: int = 3) -> list[str]:
        lines = []
        for name, result in self.page_types.items():
            if result.complete:
                continue
            parts = list(result.errors[:limit])
            if result.invalid:
                parts.append(f"{len(result.invalid)} invalid item(s)")
            if result.lost_fields:
                parts.append("fields lost: " + ", ".join(result.lost_fields))
            if result.lost_card_fields:
                parts.append("card fields lost: " + ", ".join(result.lost_card_fields))
            lines.append(f"{name}: " + "; ".join(parts))
        return lines

    def describe(self) -> str:
        counts = ", ".join(
            f"{name} {r.items} item(s)/{r.requests} link(s) from {r.pages} page(s)"
            for name, r in self.page_types.items()
        )
        return counts + (f" ({self.coverage_note})" if self.coverage_note else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "page_types": {k: v.to_dict() for k, v in self.page_types.items()},
            "lost_fields": list(self.lost),
            "failed_fields": self.failed_fields,
            "coverage_note": self.coverage_note,
        }


def judge_extraction(
    outputs: Sequence[PageOutput],
    coverage: CoverageBaseline | None,
    cards: Mapping[str, CoverageBaseline] | None = None,
) -> ExtractionReport:
    """Complete: every page yielded, nothing raised, every item valid, no field lost
    (a field a page does not show is absent there, not lost), no card field lost.

    ``cards``: page type -> the fill rates of its cards (``card_baselines``)."""
    pages = [PageItems(output.items, output.evidence) for output in outputs]
    lost = judge_lost(pages, coverage) if coverage else ()
    by_type: dict[str, list[PageOutput]] = {}
    for output in outputs:
        by_type.setdefault(output.page_type, []).append(output)
    expected = tuple(
        name
        for name, expectation in sorted((coverage.fields if coverage else {}).items())
        if expectation.rate >= EXPECTED_RATE and name not in _HARNESS_FIELDS
    )
    results = {
        name: replace(
            _judge_type(name, group, lost, (cards or {}).get(name)), expected_fields=expected
        )
        for name, group in by_type.items()
    }
    note = "" if coverage else "no coverage baseline: items judged by their schema only"
    return ExtractionReport(results, lost, note)


def _judge_type(
    name: str,
    outputs: Sequence[PageOutput],
    lost: Iterable[str],
    card_baseline: CoverageBaseline | None = None,
) -> PageTypeExtraction:
    errors: list[str] = []
    invalid: list[Mapping[str, Any]] = []
    items: list[Any] = []
    for output in outputs:
        errors += output.errors
        # A listing page's data is its requests for the detail pages: its pagination alone
        # is no proof that the listing still reads its cards.
        if not output.errors and not output.items and output.requests <= output.pagination:
            what = "nothing" if not output.requests else "only its own pagination"
            errors.append(f"{output.url}: the callback yielded {what}")
        for item in output.items:
            items.append(item)
            problems = _item_errors(item)
            if problems:
                invalid.append({"url": output.url, "errors": problems})
    # A field lost over the sample is this page type's loss when none of its items has it,
    # or when one of its pages shows the field and none of that page's items has it.
    own_pages = [PageItems(output.items, output.evidence) for output in outputs]
    own_lost = tuple(
        f
        for f in lost
        if items and (not filled_anywhere(items, f) or any(missed(page, f) for page in own_pages))
    )
    # A listing's data is its cards: a card field its fixtures fill, empty on every card.
    cards = [card for output in outputs for card in output.cards]
    lost_cards = (
        tuple(drop.field for drop in lost_fields(cards, card_baseline))
        if cards and card_baseline is not None
        else ()
    )
    return PageTypeExtraction(
        page_type=name,
        callback=outputs[0].callback,
        pages=len(outputs),
        items=len(items),
        requests=sum(o.requests for o in outputs),
        invalid=tuple(invalid),
        lost_fields=own_lost,
        errors=tuple(errors),
        cards=len(cards),
        lost_card_fields=lost_cards,
    )


def _item_errors(item: Any) -> list[str]:
    try:
        validation = schema_for(item).validate(item)
    except UnknownItemType as exc:
        return [f"_item: {exc}"]
    return [str(error) for error in validation.errors]


def card_baselines(
    site: str, outputs: Sequence[PageOutput], supplied: Iterable[str] = ()
) -> dict[str, CoverageBaseline]:
    """Page type -> the fill rates of the cards its callback reads on ``outputs`` (the
    site's fixtures): what a sample's cards are judged against. Types without cards have
    none. ``supplied``: fields the cards' own pages fill on their own (a hotel page's
    coordinates), which the item gets whatever its card lacks: not judged on the cards."""
    by_type: dict[str, list[Any]] = {}
    skip = set(supplied) | _HARNESS_FIELDS
    for output in outputs:
        by_type.setdefault(output.page_type, []).extend(
            {k: v for k, v in ItemAdapter(card).items() if k not in skip} for card in output.cards
        )
    # Cards vary with the search (a sample's cards are other properties than the
    # fixtures'), so their rates are no baseline for drops: only a field its fixtures
    # fill that is empty on every sampled card is lost (``lost_fields``' small-sample rule).
    return {
        name: CoverageBaseline.from_items(f"{site}:{name} cards", cards, min_items=CARD_NO_DROPS)
        for name, cards in by_type.items()
        if cards
    }


def filled_anywhere(items: Sequence[Any], name: str) -> bool:
    """Whether any of ``items`` fills field ``name`` (``fingerprints.coverage.is_filled``)."""
    return any(is_filled(ItemAdapter(item).get(name)) for item in items)
