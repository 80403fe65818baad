"""Change history: the old and new values of the fields that matter per item type.

An item type names its history fields (``@item_schema(..., history=(...))``: price,
availability, rating, ...). For an item dedup found new or changed, ``HistoryState``
stores those fields' values in Redis (per site, ``SiteKeys.history_values``: item key ->
compact JSON) and returns the values they replace; ``diff`` turns old and new values
into ``Change``s, each of a kind (``price_drop``, ``back_in_stock``, ...), written as
change documents to ``changes-<site>`` (``core.store.changes``).

Exact and idempotent: one Lua script reads the previous values and stores the new ones
atomically, and keeps the job's first "old" per key (``SiteKeys.job_history_old``, with
the job keys' TTL), so an item delivered again within the job (at-least-once delivery)
diffs against the same old values and rewrites the same documents.

A field the page did not give (None) is not a value: it is left out of the stored values
and never recorded as a change (a parse gap is not a price).

``job_change_counts`` reads a job's changes back from Elasticsearch (counts per kind) and
``notable_text`` names them for people: "14 price drops, 3 back in stock, 5 removed".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from core import redis_client
from core.figures.stats import STATS_TTL_SECONDS
from core.keys import REDIS_ERRORS, SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient
from core.store.changes import changes_alias

# Lua, each script headed by its KEYS and ARGV: core/recrawl/lua/history_record.lua
_RECORD = load_script("core.recrawl", "history_record")

# schema.org availability names (a URL's last segment: https://schema.org/InStock).
IN_STOCK = frozenset({"InStock", "LimitedAvailability", "OnlineOnly", "InStoreOnly"})
OUT_OF_STOCK = frozenset({"OutOfStock", "SoldOut", "Discontinued"})
RATING_FIELDS = frozenset({"rating", "review_score", "star_rating", "subject_rating"})
REVIEW_COUNT_FIELDS = frozenset({"review_count", "subject_review_count"})

# How each kind reads in a summary (singular, plural), in the order summaries name them.
PHRASES: dict[str, tuple[str, str]] = {
    "price_drop": ("price drop", "price drops"),
    "price_rise": ("price rise", "price rises"),
    "back_in_stock": ("back in stock", "back in stock"),
    "out_of_stock": ("out of stock", "out of stock"),
    "sold": ("sold", "sold"),
    "relisted": ("relisted", "relisted"),
    "rating_up": ("rating up", "ratings up"),
    "rating_down": ("rating down", "ratings down"),
    "review_count_up": ("review count up", "review counts up"),
    "review_count_down": ("review count down", "review counts down"),
    "price_changed": ("price change", "price changes"),
    "currency_changed": ("currency change", "currency changes"),
    "availability_changed": ("availability change", "availability changes"),
}


@dataclass(frozen=True)
class Change:
    """One history field of an item that changed: its old and new value and the kind."""

    field: str
    old: Any
    new: Any
    kind: str


def values_of(fields: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The item's history values: ``names`` it has a value for (None is no value)."""
    return {name: fields[name] for name in names if fields.get(name) is not None}


def encode(values: Mapping[str, Any]) -> str:
    """Compact, key-sorted JSON: equal values always encode equally."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode(raw: bytes | str | None) -> dict[str, Any] | None:
    """Values stored by ``encode``; None for nothing known ('' or no entry)."""
    if raw is None:
        return None
    text = raw.decode() if isinstance(raw, bytes) else raw
    return json.loads(text) if text else None


def availability_name(value: Any) -> str:
    return str(value).rstrip("/").rsplit("/", 1)[-1]


def change_kind(field: str, old: Any, new: Any, *, currency_changed: bool = False) -> str:
    """What kind of change ``old`` -> ``new`` of ``field`` is (see ``PHRASES``)."""
    if field == "availability":
        before, after = availability_name(old), availability_name(new)
        if after in IN_STOCK and before not in IN_STOCK:
            return "back_in_stock"
        if after in OUT_OF_STOCK and before not in OUT_OF_STOCK:
            return "out_of_stock"
        return "availability_changed"
    if field == "is_sold":
        return "sold" if new is True else "relisted"
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
    if not numeric:
        return f"{field}_changed"
    up = new > old
    if field == "price":
        # A price in another currency neither dropped nor rose.
        if currency_changed:
            return "price_changed"
        return "price_rise" if up else "price_drop"
    if field in RATING_FIELDS:
        return "rating_up" if up else "rating_down"
    if field in REVIEW_COUNT_FIELDS:
        return "review_count_up" if up else "review_count_down"
    return f"{field}_{'up' if up else 'down'}"


def diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], names: Sequence[str]
) -> list[Change]:
    """The changes from ``old`` to ``new`` values of the fields ``names``, in that order.

    Nothing known before (``old`` None) is no change; a field only one side has a value
    for is none either (see the module docstring)."""
    if old is None:
        return []
    currencies = old.get("currency"), new.get("currency")
    currency_changed = None not in currencies and _differs(*currencies)
    changes = []
    for name in names:
        before, after = old.get(name), new.get(name)
        if before is None or after is None or not _differs(before, after):
            continue
        kind = change_kind(name, before, after, currency_changed=currency_changed)
        changes.append(Change(name, before, after, kind))
    return changes


def _differs(a: Any, b: Any) -> bool:
    # 12 and 12.0 are one price; True and 1 are not one value.
    return isinstance(a, bool) != isinstance(b, bool) or a != b


class HistoryState:
    """The history values of a site's items in Redis (asyncio: inside Scrapy's loop)."""

    transient_errors = REDIS_ERRORS

    def __init__(self, server: AsyncClient, site: str, *, job_ttl: int = STATS_TTL_SECONDS) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.job_ttl = job_ttl
        # As in core.dedup.detector: a cluster client cannot route EVALSHA through register_script's
        # load; EVAL is cached by Redis all the same.
        self._cluster = redis_client.is_cluster(server)
        self._script = server.register_script(_RECORD)

    async def record(
        self, job_id: str, key: str, values: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Store ``key``'s new history ``values``; its values before ``job_id`` (None: none
        were known), the same for every delivery of the key within the job."""
        keys = [self.keys.history_values, self.keys.job_history_old(job_id)]
        args: list[str | int] = [key, encode(values), self.job_ttl]
        if self._cluster:
            raw = await self.server.eval(_RECORD, len(keys), *keys, *args)
        else:
            raw = await self._script(keys=keys, args=args)
        return decode(raw)


# -- a job's changes, for the report and the Slack summary ---------------------------------


def job_change_counts(es: Elasticsearch, site: str, job_id: str) -> dict[str, int]:
    """How many changes of each kind ``job_id`` recorded (after a refresh), most first."""
    alias = changes_alias(site)
    try:
        es.indices.refresh(index=alias)
        response = es.search(
            index=alias,
            size=0,
            query={"term": {"job_id": job_id}},
            aggs={"kinds": {"terms": {"field": "kind", "size": 100}}},
        )
    except NotFoundError:
        return {}  # the site never recorded a change
    buckets = response["aggregations"]["kinds"]["buckets"]
    return {str(b["key"]): int(b["doc_count"]) for b in buckets}


def notable_text(counts: Mapping[str, int], *, removed: int | None = None) -> str:
    """``14 price drops, 3 back in stock, 5 removed``: the kinds in ``PHRASES`` order,
    then any others, then ``removed`` (omitted when None or 0); '' when nothing changed."""
    order = list(PHRASES) + sorted(set(counts) - set(PHRASES))
    parts = [_phrase(kind, counts[kind]) for kind in order if counts.get(kind)]
    if removed:
        parts.append(f"{removed} removed")
    return ", ".join(parts)


def _phrase(kind: str, n: int) -> str:
    default = kind.replace("_", " ")
    singular, plural = PHRASES.get(kind, (default, default))
    return f"{n} {singular if n == 1 else plural}"
