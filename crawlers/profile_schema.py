"""The schema of site profiles: value types, the tables, one-line messages for their errors.

``crawlers.profiles.SiteProfile`` is the top table; the tables here are its parts.
Validation is strict, as TOML is typed: ``"300"`` is no integer, ``"no"`` no boolean and
``"/home"`` no list of paths; an unknown key is an error. ``describe`` turns pydantic's
report into one line: ``politeness.concurrency_per_domain: expected an integer, got
"sixteen"``. docs/sites.md lists every key.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
import types
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from cronsim import CronSim, CronSimError
from cssselect import SelectorError
from parsel import Selector
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

RenderMode = Literal["never", "always", "per_request", "auto"]
FetchIdentity = Literal["browser", "crawler"]

# -- value types ---------------------------------------------------------------------------------


def _expected(what: str, test: Callable[[Any], bool]) -> AfterValidator:
    """A check after the type's own: its failure reads ``expected <what>, got <value>``."""

    def check(value: Any) -> Any:
        if not test(value):
            raise PydanticCustomError("expected", "expected {expected}", {"expected": what})
        return value

    return AfterValidator(check)


def _list_as_tuple(value: Any) -> Any:
    # TOML arrays arrive as lists; strict mode takes only tuples for a tuple field (and
    # leaves a string a string, so "/home" is refused instead of split into characters).
    return tuple(value) if isinstance(value, list) else value


def _is_http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _cron(expression: str) -> str:
    """A standard 5-field cron (minute hour day month weekday), parsed by cronsim. Seconds
    fields and ``@daily``-style nicknames are refused: the health check reads a site's
    freshness window from the weekday field."""
    if len(expression.split()) != 5:
        problem = "needs 5 fields"
    else:
        try:
            CronSim(expression, dt.datetime(2000, 1, 1))
            return expression
        except CronSimError as exc:
            problem = str(exc).lower()
    raise PydanticCustomError(
        "expected",
        "expected {expected}",
        {"expected": "a 5-field cron (minute hour day month weekday)", "detail": problem},
    )


_PAGE_TYPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# A site's name: its profile's file name, and part of its worker service, Redis keys,
# index names and deployment, so lowercase letters, digits and _ only.
SITE_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")

Text = Annotated[str, _expected("a non-empty string", lambda value: bool(value.strip()))]
SiteName = Annotated[
    str,
    _expected(
        "a site name of a-z, 0-9 and _ (e.g. acme_shop)",
        lambda name: bool(SITE_NAME.fullmatch(name)),
    ),
]
HttpUrl = Annotated[str, _expected("an http(s) URL like https://www.example.com", _is_http_url)]
UrlPath = Annotated[str, _expected("a path starting with /", lambda value: value.startswith("/"))]
UrlPaths = Annotated[tuple[UrlPath, ...], BeforeValidator(_list_as_tuple)]
Cron = Annotated[str, AfterValidator(_cron)]
Threshold = Annotated[float, Field(gt=0, le=1)]
PageTypeName = Annotated[
    str,
    _expected(
        "a page type name of a-z, 0-9, _ and - (not starting with _ or -)",
        lambda name: bool(name) and name[0] not in "_-" and set(name) <= _PAGE_TYPE_CHARS,
    ),
]
SpiderMethod = Annotated[str, _expected("the name of a spider method", str.isidentifier)]
SchemaType = Annotated[
    str,
    _expected(
        "a schema.org type name like Product",
        lambda name: name.isascii() and name.isalnum() and name[:1].isalpha(),
    ),
]


# -- the tables ----------------------------------------------------------------------------------


class Table(BaseModel):
    """A profile table: strict types, no unknown keys, read-only once loaded."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


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
    session_rate: Annotated[float, Field(gt=0)] | None = None  # requests/s per session
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
    item_callbacks: Annotated[tuple[SpiderMethod, ...], BeforeValidator(_list_as_tuple)] = ()
    # Listing-card fields that reflect the item; empty: every detail page is fetched.
    card_fields: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = ()
    # A card may stand for its item only while the item's last full fetch is younger ...
    max_age_days: Annotated[float, Field(gt=0)] = 7.0
    # ... and every item is fetched in full at least every this many runs (rolling refresh).
    refresh_runs: Annotated[int, Field(ge=1)] = 10
    # An item not seen in this many consecutive completed full jobs is marked removed.
    removed_after_jobs: Annotated[int, Field(ge=1)] = 3


class PageTypeTable(Table):
    sample_paths: list[UrlPath] = []
    selectors: dict[str, Text] = {}
    threshold: Threshold | None = None
    # The spider method that parses this page type: the gate runs it on a drifted sample.
    callback: SpiderMethod | None = None
    # Field -> a selector matching where a page shows the field: a field empty on a page
    # that does not show it is absent there, not lost (fingerprints.evidence).
    shows: dict[str, Text] = {}


class FingerprintTable(Table):
    """The structure gate's ``[fingerprint]`` table. fingerprints.baseline.FingerprintConfig
    reads it (as ``SiteProfile.fingerprint``); this schema refuses a malformed one early, by
    the same rules."""

    threshold: Threshold | None = None
    strict: bool = False  # any structure drift fails the gate, even with complete extraction
    page_types: dict[PageTypeName, PageTypeTable] = {}


# -- page types of a profile-driven site (crawlers.spiders.generic, docs/sites.md) ------------


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError(
            "expected",
            "expected {expected}",
            {"expected": "a regular expression", "detail": str(exc)},
        ) from None
    return value


Regex = Annotated[str, AfterValidator(_regex)]
Regexes = Annotated[tuple[Regex, ...], BeforeValidator(_list_as_tuple)]

# An empty document: selectors are compiled against it when the profile loads, so a
# malformed one is the profile's one-line error, not a crash on the first page.
_PROBE = Selector(text="<html></html>")


def _css(value: str) -> str:
    try:
        _PROBE.css(value)
    except SelectorError as exc:
        raise PydanticCustomError(
            "expected", "expected {expected}", {"expected": "a CSS selector", "detail": str(exc)}
        ) from None
    return value


def _xpath(value: str) -> str:
    try:
        _PROBE.xpath(value)
    except ValueError as exc:
        raise PydanticCustomError(
            "expected",
            "expected {expected}",
            {"expected": "an XPath expression", "detail": str(exc).removeprefix("XPath error: ")},
        ) from None
    return value


def _is_path(query: str) -> bool:
    # The gate reads a selector starting like a path as XPath, any other as CSS
    # (fingerprints.structure.count_selector).
    return query.strip().startswith(("/", "(", "./"))


def _gate_selector(value: str) -> str:
    return _xpath(value) if _is_path(value) else _css(value)


Css = Annotated[Text, AfterValidator(_css)]
XPath = Annotated[Text, AfterValidator(_xpath)]
GateSelector = Annotated[Text, AfterValidator(_gate_selector)]
# A value a rule may state as is (``value = "EUR"``) or a value map may give.
Scalar = str | int | float | bool


class FieldRule(Table):
    """Where one item field is read on a page: exactly one source, then optional shaping.

    Sources: ``data`` (a dotted path in the page's item node of structured data, JSON-LD
    or microdata, e.g. ``offers.price``; ``og:title`` reads OpenGraph), ``css`` /
    ``xpath`` (the matched elements' text, or ``attr``), ``table`` + ``label`` (a key/value
    table or ``<dl>``: the value next to the key cell reading ``label``), ``url`` (a regular
    expression on the page's URL, its first group), ``value`` (a constant).
    Shaping: ``re`` (first group of a regular expression on the text), ``map`` (printed
    value -> stored value, case-insensitive, e.g. ``"In stock" = "InStock"``), ``count``
    (the number of matched elements, e.g. filled stars), ``all`` (every match, for list
    fields); ``default``: the value when the source finds nothing. The value is then
    converted to the item field's type (money, count, URL...).
    """

    data: Text | None = None
    css: Css | None = None
    xpath: XPath | None = None
    table: Css | None = None
    label: Text | None = None
    url: Regex | None = None
    value: Scalar | None = None
    attr: Text | None = None
    re: Regex | None = None
    map: dict[str, Scalar] = {}
    count: bool = False
    all: bool = False
    # The value when the source finds nothing on a page that has it (e.g. ``remote =
    # false`` beside a map of ``TELECOMMUTE``); not applied to a page missing the item.
    default: Scalar | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FieldRule:
        sources = [name for name in FIELD_SOURCES if getattr(self, name) is not None]
        if len(sources) != 1:
            raise PydanticCustomError(
                "expected",
                "expected {expected}",
                {
                    "expected": "exactly one of " + ", ".join(FIELD_SOURCES),
                    "detail": f"found {', '.join(sources) or 'none'}",
                },
            )
        if (self.table is None) != (self.label is None):
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "table and label together"}
            )
        if self.count and self.css is None and self.xpath is None:
            raise PydanticCustomError(
                "expected", "expected {expected}", {"expected": "count with css or xpath"}
            )
        return self

    @property
    def selector(self) -> str | None:
        """The CSS or XPath this rule relies on (the structure gate counts its matches), if
        any: an XPath computing a value (``string(//h1)``) selects no elements to count."""
        if self.xpath is not None:
            return self.xpath if _is_path(self.xpath) else None
        return self.css or self.table


FIELD_SOURCES = ("data", "css", "xpath", "table", "url", "value")


def _rules(value: Any) -> Any:
    # One rule or a list of fallbacks (the first that gives a value wins): always a tuple.
    if isinstance(value, dict):
        return (value,)
    return _list_as_tuple(value)


FieldRules = Annotated[tuple[FieldRule, ...], BeforeValidator(_rules), Field(min_length=1)]


class FollowRule(Table):
    """Links a page type follows (Scrapy's LinkExtractor): within the ``css`` / ``xpath``
    regions (none: the whole page), whose URL matches one of ``allow`` (none: any) and none
    of ``deny``; ``to`` names the page type they lead to (none: the first page type whose
    ``url_patterns`` match each link)."""

    css: Css | None = None
    xpath: XPath | None = None
    allow: Regexes = ()
    deny: Regexes = ()
    to: PageTypeName | None = None

    @property
    def selector(self) -> str | None:
        return self.css or self.xpath


class ItemField(Table):
    """One field of an item type a profile declares (``[item_fields]``,
    crawlers.declared_items): its type, whether an item is invalid without it, whether it
    is the site's own id (the item key), and whether it holds a list."""

    type: Literal[
        "text",
        "keyword",
        "long_text",
        "url",
        "date",
        "money",
        "currency",
        "count",
        "number",
        "bool",
        "country",
        "language",
    ] = "text"
    required: bool = False
    key: bool = False
    list: bool = False


class MarketTable(Table):
    """Where the site's pages are read (``[market]``): their country (ISO 3166, ``DE``),
    the languages they print in (``["de", "en"]``: dates and number words) and the
    currency they pay in (ISO 4217; default the country's). Unset: each page's
    ``<html lang>``."""

    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$")] | None = None
    languages: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = ()
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = None


class PageTable(Table):
    """One page type of a profile-driven site (``[pages.<name>]``): how it is recognised,
    which links it follows, which item it yields, and the structure gate's samples. Its
    rules' selectors are the gate's selectors for the page type (one set)."""

    # Regular expressions searched in a URL's path and query: start and sitemap URLs, and
    # links of follow rules without ``to``, go to the first page type matching them.
    url_patterns: Regexes = ()
    follow: Annotated[tuple[FollowRule, ...], BeforeValidator(_list_as_tuple)] = ()
    # The schema.org type of the page's item node (``Product``, ``JobPosting``): ``data``
    # rules read that node. A page type with ``fields`` yields one item per page.
    item: SchemaType | None = None
    fields: dict[Text, FieldRules] = {}
    # Many items per page (quotes, reviews, search results without detail pages): the
    # repeated container, CSS or XPath; each match is one item, its fields' css/xpath/
    # table rules read within it (an XPath from it starts with ``./``).
    items: GateSelector | None = None
    # The gate (docs/fingerprints.md): sample pages, a threshold, and selectors beyond the
    # rules' own ones.
    sample_paths: list[UrlPath] = []
    selectors: dict[str, GateSelector] = {}
    threshold: Threshold | None = None


# -- one-line messages ---------------------------------------------------------------------------

_EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "string_type": "a string",
    "tuple_type": "a list of strings",
    "list_type": "a list of strings",
    "dict_type": "a table",
    "model_type": "a table",
}
_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def describe(error: ValidationError, root: type[Table]) -> str:
    """The first problem of ``error`` (raised validating ``root``) as one line:
    ``key.path: expected ..., got ...``, with how many more there are."""
    problems = error.errors(include_url=False)
    first = problems[0]
    loc = tuple(part for part in first["loc"] if part != "[key]")  # a bad key: its own name
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    # A whole-profile check names the key it is about itself (crawlers.profiles).
    key = str((first.get("ctx") or {}).get("key") or key)
    text = f"{key.lstrip('.')}: {_problem(first, loc, root)}"
    if len(problems) > 1:
        more = len(problems) - 1
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return text


def _problem(error: ErrorDetails, loc: tuple[str | int, ...], root: type[Table]) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error["input"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        known = _keys_at(root, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean {shown(close[0])}?" if close else f"known keys: {', '.join(known)}"
        return f"unknown key ({hint})"
    if kind == "expected":
        expected = ctx["expected"]
    elif kind == "literal_error":
        expected = "one of " + ctx["expected"].replace("'", '"')
    elif kind == "too_short":
        expected = f"at least {ctx['min_length']} entry"
    elif bound := next((b for b in _BOUNDS if b in ctx), None):
        expected = f"a value {_BOUNDS[bound]} {ctx[bound]:g}"
    else:
        expected = _EXPECTED.get(kind) or error["msg"].lower().removeprefix("input should be ")
    detail = f" ({ctx['detail']})" if ctx.get("detail") else ""
    if "got" in ctx:
        value = ctx["got"]
    return f"expected {expected}, got {shown(value)}{detail}"


def _keys_at(root: type[Table], parent: Sequence[str | int]) -> list[str]:
    """The keys the schema allows in the table at ``parent``, for a misspelt key's hint."""
    annotation: Any = root
    for part in parent:
        annotation = _table_type(annotation)
        if isinstance(part, int):  # tuple[Table, ...] / list[Table]: one of its entries
            annotation = get_args(annotation)[0]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = annotation.model_fields
            annotation = next(f.annotation for n, f in fields.items() if (f.alias or n) == part)
        else:  # dict[str, Table]: ``part`` is a name the profile chose
            annotation = get_args(annotation)[1]
    model = _table_type(annotation)
    return [field.alias or name for name, field in model.model_fields.items()]


def _table_type(annotation: Any) -> Any:
    """``Table | None`` -> ``Table``; ``Annotated[X, ...]`` -> ``X``."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return next(arg for arg in get_args(annotation) if arg is not type(None))
    return annotation


def shown(value: Any) -> str:
    """A value the way TOML writes it (strings quoted), shortened."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, str | list | tuple):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return text if len(text) <= 80 else text[:77] + "..."
    return str(value)
