"""The value types of site profiles: strings, names, URLs, paths, crons, thresholds,
regular expressions and selectors, each refusing a bad value with what it expected
(``expected a path starting with /``), and ``Table``, the base of every profile table.
Selectors are compiled when the profile loads, so a malformed one is the profile's
one-line error, not a crash on the first page."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from cronsim import CronSim, CronSimError
from cssselect import SelectorError
from parsel import Selector
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

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


def list_as_tuple(value: Any) -> Any:
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
# The name of an environment variable holding a secret of the site (its worker's only).
EnvName = Annotated[
    str,
    _expected(
        "an environment variable name of A-Z, 0-9 and _ (e.g. ACME_SESSION_COOKIES)",
        lambda name: bool(re.fullmatch(r"[A-Z][A-Z0-9_]*", name)),
    ),
]
HttpUrl = Annotated[str, _expected("an http(s) URL like https://www.example.com", _is_http_url)]
UrlPath = Annotated[str, _expected("a path starting with /", lambda value: value.startswith("/"))]
UrlPaths = Annotated[tuple[UrlPath, ...], BeforeValidator(list_as_tuple)]
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


# -- regular expressions and selectors ----------------------------------------------------------


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
Regexes = Annotated[tuple[Regex, ...], BeforeValidator(list_as_tuple)]

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


def is_path(query: str) -> bool:
    # The gate reads a selector starting like a path as XPath, any other as CSS
    # (fingerprints.structure.fingerprint.count_selector).
    return query.strip().startswith(("/", "(", "./"))


def _gate_selector(value: str) -> str:
    return _xpath(value) if is_path(value) else _css(value)


Css = Annotated[Text, AfterValidator(_css)]
XPath = Annotated[Text, AfterValidator(_xpath)]
GateSelector = Annotated[Text, AfterValidator(_gate_selector)]
# A value a rule may state as is (``value = "EUR"``) or a value map may give.
Scalar = str | int | float | bool
