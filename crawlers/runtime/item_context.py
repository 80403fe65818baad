"""What the crawl knows about an item beyond its fields, carried on the item itself.

A component that learns something about an item for a later one (the re-crawl context
of the page it came from, dedup's verdict for the store, extra store writes such as
change documents) puts it in the item's ``ItemContext`` (``item_context(item)``), an
attribute of the item object, as Spidermon keeps its validation results on the item.
It travels with the item through the pipelines; the validation pipeline, which passes
on a normalised copy, carries it over (``carry_context``). It is not one of the item's
fields: exports, schemas and mappings never see it. Items that leave the pipelines
(scraped, dropped or failed) have it taken off (``discard_context``, hooked to Scrapy's
item signals by ``CrawlServices``), so nothing outlives the crawl's use of the item.

A plain ``dict`` item cannot carry attributes: it has no context (``item_context`` raises
TypeError, ``find_context`` returns None) and is dropped by validation anyway (an
undeclared item class).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.dedup.detector import ItemState
from core.store import StoreAction

# Underscore-prefixed: scrapy.Item takes it as an attribute, not as a field.
_ATTR = "_platform_context"


@dataclass
class RecrawlContext:
    """What the request of an item's page knows of the item (all optional)."""

    key: str | None = None  # the item key, when known before the fetch (a listing card)
    card_hash: str | None = None  # hash of the listing card's fields the spider read
    full: bool = False  # the rolling refresh: fetched without validators, parsed in full
    url: str | None = None  # the item's page: the URL the validators below belong to
    etag: str | None = None  # the page's validators, as its 200 answer gave them
    last_modified: str | None = None


@dataclass(frozen=True)
class DedupNote:
    """What the store needs from dedup: the verdict/timestamps, the key, the fields
    (empty for an ``ItemSeen``: the store only refreshes its document). ``unsee``
    (an ``ItemSeen``'s): takes its ``unchanged`` back when its document is gone."""

    state: ItemState
    key: str
    fields: dict[str, Any]
    unsee: Callable[[], Awaitable[bool]] | None = None


@dataclass
class ItemContext:
    recrawl: RecrawlContext | None = None  # the page's, set by RecrawlContextMiddleware
    verdict: DedupNote | None = None  # dedup's, read by history and the store
    # Writes the store makes durable before the item's own (history's change documents).
    store_extra: list[StoreAction] = field(default_factory=list)


def item_context(item: Any) -> ItemContext:
    """The item's context, created on first use; TypeError for an item that cannot carry
    one (a dict)."""
    context = find_context(item)
    if context is None:
        context = ItemContext()
        try:
            object.__setattr__(item, _ATTR, context)  # frozen dataclasses too
        except (AttributeError, TypeError):
            raise TypeError(f"a {type(item).__name__} item cannot carry a context") from None
    return context


def find_context(item: Any) -> ItemContext | None:
    """The item's context if it has one."""
    context = getattr(item, _ATTR, None)
    return context if isinstance(context, ItemContext) else None


def noted_fields(item: Any) -> tuple[dict[str, Any], str] | None:
    """The plain fields and key dedup noted for ``item`` (pipelines after it reuse them
    instead of extracting them again: a few tenths of a millisecond per item each); None
    without a note (dedup off) or for an ``ItemSeen``'s (no fields)."""
    context = find_context(item)
    note = context.verdict if context is not None else None
    if note is None or not note.fields:
        return None
    return note.fields, note.key


def carry_context(old: Any, new: Any) -> None:
    """``new`` (a normalised copy of ``old``) takes ``old``'s context."""
    if old is new:
        return
    context = find_context(old)
    if context is None:
        return
    discard_context(old)
    object.__setattr__(new, _ATTR, context)


def discard_context(item: Any, **_: Any) -> None:
    """Take the item's context off (the item left the pipelines)."""
    if find_context(item) is not None:
        object.__delattr__(item, _ATTR)
