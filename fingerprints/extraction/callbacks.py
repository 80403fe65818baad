"""Does the data still come out? The site's own callbacks on a sample whose structure changed.

``run_callbacks`` builds the site spider with the project's settings (no crawl, reactor,
frontier or pipelines) and calls the callback the profile names for each page type on the
sampled pages; a request carrying a partial item completes it through ``fetch`` (up to
``PART_DEPTH`` hops), any other request is counted as navigation, never followed; a
request to another page type's callback keeps its partial item as one of the page's
*cards*. Each page's evidence (``fingerprints.extraction.evidence``) is read with its page type's
rules; with ``visible`` a page is read again without its scripts.
``fingerprints.extraction.judgement.judge_extraction`` judges the outputs (pure).

Reads: the profile's ``[fingerprint.page_types.<type>] callback``. Rules: docs/fingerprints.md
"Verdicts: judged by the data, on every run".
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.responsetypes import responsetypes
from scrapy.settings import Settings
from scrapy.spiderloader import get_spider_loader
from scrapy.statscollectors import MemoryStatsCollector

from fingerprints.extraction.evidence import NO_EVIDENCE, EvidenceRules, PageEvidence
from fingerprints.sampling.fetch import Page

SETTINGS_MODULE = "crawlers.settings"
PART_DEPTH = 2  # product page -> reviews API -> (one more, e.g. a second API page)
HARNESS_FIELDS = frozenset({"job_id", "incomplete"})  # set by middlewares, not extraction
# Fetch absolute URLs (the follow-up requests of a sample): one Page per URL, by URL.
Fetch = Callable[[Sequence[str]], Mapping[str, Page]]
# Inline scripts: what a page embeds as data (JSON state, JSON-LD, variables), not shows.
_SCRIPTS = re.compile(rb"<script\b(?![^>]*\bsrc=)[^>]*>.*?</script\s*>", re.S | re.I)


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
    # What the page shows and lacks, by its page type's rules (fingerprints.extraction.evidence).
    evidence: PageEvidence = NO_EVIDENCE
    # Parallel to ``items`` when some came from a part of another page type (its page's
    # evidence); empty: every item is the page's.
    item_evidence: tuple[PageEvidence, ...] = ()
    # The cards read from the page without its scripts (None: not read that way).
    visible_cards: tuple[Any, ...] | None = None
    # Parts that could not be fetched (no network in this check): the items they would
    # complete are not there, through no fault of the page.
    unfetched: tuple[str, ...] = ()

    def item_groups(self) -> list[tuple[list[Any], PageEvidence]]:
        """The items with the evidence of the page each describes."""
        if len(self.item_evidence) != len(self.items):
            return [(list(self.items), self.evidence)]
        groups: list[tuple[list[Any], PageEvidence]] = []
        for item, evidence in zip(self.items, self.item_evidence, strict=True):
            if groups and groups[-1][1] is evidence:
                groups[-1][0].append(item)
            else:
                groups.append(([item], evidence))
        return groups


# -- the harness (builds the spider, calls callbacks; fetches only through ``fetch``) ------


class NoSpider(LookupError):
    """The project has no spider of the site's name (a site kept outside the repository,
    fetched by the sampler's plain spider): there are no callbacks to run."""


def site_spider(site: str, base_url: str | None = None) -> Spider:
    """The site's spider with its profile's settings, ready for callbacks, never crawling."""
    settings = Settings()
    settings.setmodule(SETTINGS_MODULE, priority="project")
    try:
        spider_class = get_spider_loader(settings).load(site)
    except KeyError:
        raise NoSpider(f"no spider named {site!r} in this project") from None
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
    # By url and body: from_args would read bytes keys only, and these headers are text.
    cls = responsetypes.from_args(url=url, body=page.body)
    request = request or Request(url)
    return cls(url=url, status=page.status, headers=headers, body=page.body, request=request)


def run_callbacks(
    spider: Spider,
    pages: Sequence[Page],
    callbacks: Mapping[str, str | None],
    *,
    fetch: Fetch | None = None,
    declared: Iterable[str] | None = None,
    rules: Mapping[str, EvidenceRules] | None = None,
    page_types: Mapping[str, str] | None = None,
    visible: bool = False,
) -> list[PageOutput]:
    """Each page through its page type's callback; parts fetched with ``fetch`` (none:
    a part is recorded as not fetched, e.g. in the fixture check, which has no network).

    ``declared``: every callback the site's profile names (None: those of ``callbacks``);
    a request to one is another page type's page, never fetched. ``rules``: page type ->
    its evidence rules (each page's evidence is recorded); ``page_types``: callback ->
    page type, for the evidence of parts (default: ``callbacks`` inverted). ``visible``:
    pages that yield cards are read again without their scripts (``visible_cards``)."""
    outputs: list[PageOutput] = []
    pending: list[tuple[int, Request]] = []
    declared = set(declared or ()) | {name for name in callbacks.values() if name}
    rules = rules or {}
    kinds = dict(page_types or {cb: pt for pt, cb in callbacks.items() if cb})
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
        page_rules = rules.get(page.page_type)
        if page_rules:
            output = replace(output, evidence=page_rules.read(page.body))
        if visible and output.cards:
            shown = replace(page, body=_SCRIPTS.sub(b"", page.body))
            with _quiet(spider):  # its "no embedded data" warnings are this read's point
                seen, _ = _call(
                    spider, method, page_response(shown, base=base), {}, shown, name, declared
                )
            output = replace(output, visible_cards=seen.cards)
        pending += [(len(outputs), part) for part in parts]
        outputs.append(output)
    for _ in range(PART_DEPTH):
        if not pending:
            break
        pending = _follow(spider, outputs, pending, fetch, rules, kinds)
    for index, request in pending:
        outputs[index] = _with_error(outputs[index], f"{request.url}: more than {PART_DEPTH} hops")
    return outputs


def _follow(
    spider: Spider,
    outputs: list[PageOutput],
    pending: list[tuple[int, Request]],
    fetch: Fetch | None,
    rules: Mapping[str, EvidenceRules],
    kinds: Mapping[str, str],
) -> list[tuple[int, Request]]:
    if fetch is None:
        for index, request in pending:
            problem = f"{request.url}: follow-up request not fetched (no network in this check)"
            outputs[index] = replace(outputs[index], unfetched=(*outputs[index].unfetched, problem))
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
        before = outputs[index]
        # A part of another page type (a card's hotel page) is that page's evidence; an API
        # answer completes the page's own item.
        part_rules = rules.get(kinds.get(_callback_name(request), ""))
        evidence = part_rules.read(page.body) if part_rules else before.evidence
        own = before.item_evidence or (before.evidence,) * len(before.items)
        outputs[index] = replace(
            before,
            items=before.items + output.items,
            item_evidence=(*own, *(evidence,) * len(output.items)),
            requests=before.requests + output.requests,
            errors=before.errors + output.errors,
        )
        more += [(index, part) for part in parts]
    return more


@contextlib.contextmanager
def _quiet(spider: Spider) -> Iterator[None]:
    logger = logging.getLogger(spider.name)
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


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
                        # A page type reached through cards only when the request carries
                        # one (a profile-only site's plain links lead to pages, not cards).
                        partial = _partial_items(output.cb_kwargs)
                        cards += partial
                        if partial:
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
