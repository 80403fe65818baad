"""An item document rendered as readable text: what gets chunked, embedded and BM25-indexed.

The title comes first, then the long prose fields (descriptions, review bodies), then
the short attributes on one line, then lists of records (reviews, subjects) one per line.
Prose first keeps the first chunk about what the item *is*, which is what most queries
ask. Markup in any string field (page content, descriptions copied with their ``<p>``
and ``&amp;``) is turned into text by ``html_text``, which drops scripts and styles and
keeps block layout as line breaks.

Left out: the store's bookkeeping fields, the job id, URLs, slugs and coordinates: they
are metadata on the chunk, not words anyone searches for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import html_text

from core.items_schema import RESERVED_FIELDS

SKIPPED_FIELDS = RESERVED_FIELDS | {"job_id"}
TITLE_FIELDS = ("name", "title")
# A string this long (or with a line break) is prose, rendered as its own paragraph.
PROSE_CHARS = 120

_MARKUP = re.compile(
    r"</?[a-zA-Z][\w:-]*(?:\s[^<>]*)?/?>|&(?:[a-zA-Z]{2,8}|#\d{2,6}|#x[\da-fA-F]{2,6});"
)
_URL = re.compile(r"^(?:https?:)?//\S+$")
_BLANK_LINES = re.compile(r"\n{3,}")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")


def clean_text(value: str) -> str:
    """Plain text of a field value; HTML (whole pages or fragments) through html_text."""
    if _MARKUP.search(value):
        value = html_text.extract_text(value, guess_layout=True)
    return _BLANK_LINES.sub("\n\n", value.replace("\r\n", "\n")).strip()


def item_title(doc: Mapping[str, Any]) -> str:
    """The item's display title: its name/title, else a nested subject's name, else its key."""
    for name in TITLE_FIELDS:
        value = doc.get(name)
        if isinstance(value, str) and value.strip():
            return clean_text(value)
    subject = doc.get("subject")
    if isinstance(subject, Mapping) and isinstance(subject.get("name"), str):
        return clean_text(subject["name"])
    return str(doc.get("item_key", ""))


def render_item(doc: Mapping[str, Any]) -> str:
    """The item's fields as text (see the module docstring); deterministic for equal docs."""
    title = item_title(doc)
    prose: list[str] = []
    attributes: list[str] = []
    records: list[str] = []
    price_currency = isinstance(doc.get("price"), int | float) and doc.get("currency")
    for field, value in doc.items():
        if field in SKIPPED_FIELDS or field in TITLE_FIELDS or _skipped(field, value):
            continue
        if price_currency and field == "currency":
            continue
        label = _label(field)
        if price_currency and field == "price":
            attributes.append(f"{label}: {_scalar(value)} {doc['currency']}")
        elif isinstance(value, str):
            text = clean_text(value)
            if not text:
                continue
            if len(text) >= PROSE_CHARS or "\n" in text:
                prose.append(text)
            else:
                attributes.append(f"{label}: {text}")
        elif isinstance(value, Mapping):
            rendered = _record(value)
            if rendered:
                records.append(f"{label}: {rendered}")
        elif isinstance(value, Sequence) and all(isinstance(v, Mapping) for v in value):
            lines = [line for line in (_record(v) for v in value) if line]
            if lines:
                records.append(f"{label}:\n" + "\n".join(f"- {line}" for line in lines))
        elif isinstance(value, Sequence):
            joined = _joined(value)
            if joined:
                attributes.append(f"{label}: {joined}")
        else:
            attributes.append(f"{label}: {_scalar(value)}")
    parts = [title, *prose]
    if attributes:
        parts.append(". ".join(attributes) + ".")
    parts += records
    return "\n\n".join(part for part in parts if part)


def _skipped(field: str, value: Any) -> bool:
    if value is None or value == "" or value == [] or value == {}:
        return True
    if field.endswith("_slug") or field in ("url", "image", "images"):
        return True
    if isinstance(value, str) and _URL.match(value.strip()):
        return True
    # Coordinates: a geo point says nothing in words.
    return isinstance(value, Mapping) and set(value) <= {"lat", "lon"}


def _is_date(value: Any) -> bool:
    return isinstance(value, str) and bool(_DATE.match(value))


def _label(field: str) -> str:
    return field.replace("_", " ").capitalize()


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _record(record: Mapping[str, Any]) -> str:
    """A nested record (a review, a subject) on one line: its title first, prose last."""
    heads: list[str] = []
    tails: list[str] = []
    for field, value in record.items():
        # Dates of nested records (review dates) are noise for search; the item keeps them.
        if _skipped(field, value) or isinstance(value, Mapping | list) or _is_date(value):
            continue
        text = clean_text(value) if isinstance(value, str) else _scalar(value)
        if field in TITLE_FIELDS or field == "name":
            heads.insert(0, text)
        elif isinstance(value, str) and len(text) >= 40:
            tails.append(text)
        else:
            heads.append(f"{_label(field).lower()} {text}")
    head = ", ".join(heads)
    return f"{head}: {' '.join(tails)}" if head and tails else head or " ".join(tails)


def _joined(values: Sequence[Any]) -> str:
    """Plain list values (features, amenities, breadcrumbs) as one comma-separated phrase."""
    texts = [
        clean_text(v) if isinstance(v, str) else _scalar(v)
        for v in values
        if v is not None and not (isinstance(v, str) and _URL.match(v.strip()))
    ]
    return ", ".join(text for text in texts if text)
