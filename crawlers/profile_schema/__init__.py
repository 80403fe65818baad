"""The schema of site profiles: the tables of a site's crawl and of its structure gate.

``crawlers.profiles.SiteProfile`` is the top table; the tables here are its parts, with
the value types in ``crawlers.profile_schema.values``, the ``[pages]`` tables of a
profile-driven site in ``crawlers.profile_schema.pages`` and the one-line messages in
``crawlers.profile_schema.messages``.
Validation is strict, as TOML is typed: ``"300"`` is no integer, ``"no"`` no boolean and
``"/home"`` no list of paths; an unknown key is an error. ``describe`` turns pydantic's
report into one line: ``politeness.concurrency_per_domain: expected an integer, got
"sixteen"``. docs/sites.md lists every key.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from crawlers.profile_schema.messages import describe, shown
from crawlers.profile_schema.pages import FieldRule, FollowRule, ItemField, MarketTable, PageTable
from crawlers.profile_schema.values import (
    SITE_NAME,
    FetchIdentity,
    GateSelector,
    PageTypeName,
    Regex,
    Scalar,
    SpiderMethod,
    Table,
    Text,
    Threshold,
    UrlPath,
    list_as_tuple,
)

# What the rest of the platform imports from here: the tables, and the names and
# messages of crawlers.profile_schema.values / .pages / .messages.
__all__ = [
    "SITE_NAME",
    "Budget",
    "Evidence",
    "Fetch",
    "FieldRule",
    "FingerprintTable",
    "FollowRule",
    "ItemField",
    "MarketTable",
    "PageTable",
    "PageTypeTable",
    "Politeness",
    "Recrawl",
    "Shown",
    "Table",
    "Timeouts",
    "describe",
    "shown",
]

# -- the tables ----------------------------------------------------------------------------------


class Politeness(Table):
    obey_robots: bool = True
    download_delay: Annotated[float, Field(ge=0)] = 0.0
    concurrency_per_domain: Annotated[int, Field(ge=1)] = 16
    autothrottle: bool = True
    autothrottle_target: Annotated[float, Field(gt=0)] = 8.0


class Fetch(Table):
    """How the platform gets the site's pages (docs/fetching.md "Identity" and
    "Sessions"). Unset keys keep the platform's defaults (crawlers/defaults.py)."""

    # browser: the installed Chromium's headers and TLS fingerprint; crawler: the platform
    # announces itself (Scrapy's HTTP/1.1 client), for sites that need nothing more.
    identity: FetchIdentity | None = None
    accept_language: Text | None = None  # the site's market, e.g. "es-ES,es;q=0.9"
    sessions: bool | None = None  # visitors with their own cookies, proxy and budget
    session_pool: Annotated[int, Field(ge=1)] | None = None  # sessions at once
    session_rate: Annotated[float, Field(ge=0)] | None = None  # requests/s per session; 0: none
    session_max_uses: Annotated[int, Field(ge=0)] | None = None  # 0: no limit
    session_max_age: Annotated[float, Field(ge=0)] | None = None  # seconds; 0: no limit
    challenges: bool | None = None  # pass JavaScript challenges in Chromium

    def scrapy_settings(self) -> dict[str, Any]:
        names = {
            "identity": "FETCH_IDENTITY",
            "accept_language": "BROWSER_ACCEPT_LANGUAGE",
            "sessions": "SESSIONS_ENABLED",
            "session_pool": "SESSION_POOL_SIZE",
            "session_rate": "SESSION_MAX_RATE",
            "session_max_uses": "SESSION_MAX_USES",
            "session_max_age": "SESSION_MAX_AGE",
            "challenges": "SESSION_PASS_CHALLENGES",
        }
        return {
            setting: getattr(self, key)
            for key, setting in names.items()
            if getattr(self, key) is not None
        }


class Budget(Table):
    """The site's crawl budgets (crawlers/limits/budget.py, docs/configuration.md "Crawl
    budgets"); unset keys keep the platform's defaults, 0 switches one off."""

    depth: Annotated[int, Field(ge=0)] | None = None  # DEPTH_LIMIT
    chain: Annotated[int, Field(ge=0)] | None = None  # CRAWL_MAX_CHAIN
    pages: Annotated[int, Field(ge=0)] | None = None  # CRAWL_MAX_PAGES, per job
    seconds: Annotated[float, Field(ge=0)] | None = None  # CRAWL_MAX_SECONDS, per job
    links_per_page: Annotated[int, Field(ge=0)] | None = None  # CRAWL_MAX_LINKS_PER_PAGE

    def scrapy_settings(self) -> dict[str, Any]:
        names = {
            "depth": "DEPTH_LIMIT",
            "chain": "CRAWL_MAX_CHAIN",
            "pages": "CRAWL_MAX_PAGES",
            "seconds": "CRAWL_MAX_SECONDS",
            "links_per_page": "CRAWL_MAX_LINKS_PER_PAGE",
        }
        return {
            setting: getattr(self, key)
            for key, setting in names.items()
            if getattr(self, key) is not None
        }


class Timeouts(Table):
    """Seconds. The producer may take up to 2 h for bootstrap-heavy sites."""

    producer: Annotated[int, Field(gt=0, le=2 * 3600)] = 30 * 60
    drain: Annotated[int, Field(gt=0)] = 2 * 3600
    download: Annotated[int, Field(gt=0)] = 30


class Recrawl(Table):
    """What a re-crawl may skip (docs/recrawl.md): conditional GETs of item pages, detail
    pages whose listing card did not change, and when an unseen item counts as removed."""

    # Item pages (by the spider method parsing them) fetched with the validators their
    # last 200 answer gave (If-None-Match / If-Modified-Since); a 304 counts unchanged.
    conditional: bool = True
    item_callbacks: Annotated[tuple[SpiderMethod, ...], BeforeValidator(list_as_tuple)] = ()
    # Listing-card fields that reflect the item; empty: every detail page is fetched.
    card_fields: Annotated[tuple[Text, ...], BeforeValidator(list_as_tuple)] = ()
    # A card may stand for its item only while the item's last full fetch is younger ...
    max_age_days: Annotated[float, Field(gt=0)] = 7.0
    # ... and every item is fetched in full at least every this many runs (rolling refresh).
    refresh_runs: Annotated[int, Field(ge=1)] = 10
    # An item not seen in this many consecutive completed full jobs is marked removed.
    removed_after_jobs: Annotated[int, Field(ge=1)] = 3


def _one_of(table: Table, keys: tuple[str, ...]) -> None:
    found = [key for key in keys if getattr(table, key) not in (None, ())]
    if len(found) != 1:
        raise PydanticCustomError(
            "expected",
            "expected {expected}",
            {"expected": "exactly one of " + ", ".join(keys), "detail": f"found {found}"},
        )


def _as_tuple(value: Any) -> Any:
    """One value or a list of them (TOML): always a tuple."""
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)


class Shown(Table):
    """Where a page shows a field, one instance per match (fingerprints.extraction.evidence):
    ``select`` (CSS, or XPath when it starts like a path; matches with non-blank text)
    or ``re`` (a regular expression on the page's source, e.g. a key of its JSON state)."""

    select: GateSelector | None = None
    re: Regex | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Shown:
        _one_of(self, ("select", "re"))
        return self


class Evidence(Table):
    """Evidence that a page, or one record of it, lacks a field (fingerprints.extraction.evidence).
    Exactly one of: ``page`` (a selector: where it matches, no record of the page has the
    field: an undated search shows no prices), ``re`` (a regular expression on the page's
    source, the same), ``each`` (a selector: each match is one record that lacks it: a
    card reading "price on request"), ``field`` with ``equals`` (a record whose ``field``
    holds one of these values lacks it: ``review_count`` 0 for the review score)."""

    page: GateSelector | None = None
    re: Regex | None = None
    each: GateSelector | None = None
    field: Text | None = None
    equals: Annotated[tuple[Scalar, ...], BeforeValidator(_as_tuple)] = ()

    @model_validator(mode="after")
    def _one_source(self) -> Evidence:
        _one_of(self, ("page", "re", "each", "field"))
        if (self.field is None) != (not self.equals):
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "field and equals together"}
            )
        return self


def _shown_rules(value: Any) -> Any:
    # A selector string, one {select|re} table, or a list of either: always a tuple of tables.
    items = value if isinstance(value, list | tuple) else [value]
    return tuple({"select": item} if isinstance(item, str) else item for item in items)


def _evidence_rules(value: Any) -> Any:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


ShownRules = Annotated[tuple[Shown, ...], BeforeValidator(_shown_rules), Field(min_length=1)]
EvidenceRules = Annotated[
    tuple[Evidence, ...], BeforeValidator(_evidence_rules), Field(min_length=1)
]


class PageTypeTable(Table):
    sample_paths: list[UrlPath] = []
    # Compiled when the profile loads (CSS, or XPath when it starts like a path).
    selectors: dict[str, GateSelector] = {}
    threshold: Threshold | None = None
    # The spider method that parses this page type: the gate runs it on every sample.
    callback: SpiderMethod | None = None
    # Field -> where a page shows the field (counted: one instance per match, the largest
    # count of the alternatives): a field is expected of at most that many records of the
    # page, so a page that shows none lacks it (fingerprints.extraction.evidence).
    shows: dict[str, ShownRules] = {}
    # Field -> evidence that the page, or one record of it, lacks the field.
    absent: dict[str, EvidenceRules] = {}
    # Evidence that a page has no record at all (a business nobody reviewed yet): its
    # callback yielding nothing is no loss there. ``page`` or ``re`` rules.
    empty: Annotated[tuple[Evidence, ...], BeforeValidator(_evidence_rules)] = ()

    @model_validator(mode="after")
    def _empty_is_page_wide(self) -> PageTypeTable:
        if any(rule.page is None and rule.re is None for rule in self.empty):
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "empty rules of page or re"}
            )
        return self


class FingerprintTable(Table):
    """The structure gate's ``[fingerprint]`` table, validated once when the profile loads:
    fingerprints.baselines.store.FingerprintConfig reads it typed (``SiteProfile.gate_table``),
    and the spider reads its selectors by key (``SiteProfile.selectors``)."""

    threshold: Threshold | None = None
    strict: bool = False  # any structure drift fails the gate, even with complete extraction
    # A field falls when the sample fills less than this share of its baseline rate: a
    # required one stops the run (extraction_broken), another warns (None: the gate's).
    floor: Threshold | None = None
    # The fields the site is scraped for: their fall stops the run (none: the item type's
    # required fields).
    required: Annotated[tuple[Text, ...], BeforeValidator(list_as_tuple)] = ()
    # Item fields the site's spider never fills (the site has no such thing, or it is not
    # read): the coverage baseline holds no rate for them, every other field must have one.
    not_read: Annotated[tuple[Text, ...], BeforeValidator(list_as_tuple)] = ()
    page_types: dict[PageTypeName, PageTypeTable] = {}
