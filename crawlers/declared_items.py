"""Item types a profile declares (``[item_fields]``): a site whose items fit no type of
``crawlers/items.py`` names its fields in its profile, and gets an item type like any
other (validation, item key, content hash, index mapping, Kibana objects) without Python.

::

    item_type = "quote"
    [item_fields]
    quote_id = {type = "keyword", key = true}
    text = {type = "long_text", required = true}
    tags = {type = "keyword", list = true}
    published_at = {type = "date"}

Every declared type also has ``url`` (the page the item was read on; the key when no
field is ``key``) and the platform's ``job_id`` and ``incomplete``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from core.items_schema import (
    Count,
    CountryCode,
    Currency,
    IsoDate,
    ItemSchema,
    Keyword,
    LanguageCode,
    LongText,
    Money,
    Text,
    UnknownItemType,
    Url,
    item_schema,
    schema_by_type,
)
from crawlers.profile_schema import ItemField

__all__ = ["FIELD_TYPES", "DeclarationError", "declare_item_type"]

# A declared field's ``type`` -> its annotation (validation and Elasticsearch mapping).
FIELD_TYPES: Mapping[str, Any] = {
    "text": Text,
    "keyword": Keyword,
    "long_text": LongText,
    "url": Url,
    "date": IsoDate,
    "money": Money,
    "currency": Currency,
    "count": Count,
    "number": float,
    "bool": bool,
    "country": CountryCode,
    "language": LanguageCode,
}
_PLATFORM = {"url", "job_id", "incomplete"}
# Classes made here, so a type declared again by the same profile replaces its own.
_MODULE = __name__


class DeclarationError(ValueError):
    """A declaration that cannot make an item type (one line)."""


def declare_item_type(item_type: str, fields: Mapping[str, ItemField]) -> ItemSchema:
    """Register ``item_type`` with ``fields`` and return its schema. A type of
    ``crawlers/items.py`` is never replaced: the profile must name its own."""
    try:
        existing = schema_by_type(item_type)
    except UnknownItemType:
        existing = None
    if existing is not None and existing.cls.__module__ != _MODULE:
        raise DeclarationError(
            f"item_type {item_type!r} is declared in crawlers/items.py; a profile declaring "
            f"[item_fields] names a type of its own"
        )
    clash = sorted(set(fields) & _PLATFORM)
    if clash:
        raise DeclarationError(f"item_fields: {', '.join(clash)} are the platform's fields")
    declared = tuple((name, spec.model_dump_json()) for name, spec in fields.items())
    if existing is not None and getattr(existing.cls, "__declared__", None) == declared:
        return existing  # the same profile loaded again: the same class, so items validate
    keys = [name for name, spec in fields.items() if spec.key]
    if len(keys) > 1:
        raise DeclarationError(f"item_fields: one key field, not {', '.join(keys)}")
    spec: list[tuple[str, Any, Any]] = [("url", Url, dataclasses.field())]
    for name, field_spec in fields.items():
        annotation = FIELD_TYPES[field_spec.type]
        annotation = list[annotation] if field_spec.list else annotation  # type: ignore[valid-type]  # a type chosen at run time
        spec.append((name, annotation | None, dataclasses.field(default=None)))
    spec += [
        ("job_id", Keyword | None, dataclasses.field(default=None)),
        ("incomplete", list[Keyword] | None, dataclasses.field(default=None)),
    ]
    name = "".join(part.title() for part in item_type.split("_")) + "Item"
    namespace = {"__module__": _MODULE, "__declared__": declared}
    cls = dataclasses.make_dataclass(name, spec, namespace=namespace)
    cls.__qualname__ = name
    required = ["url", *(field for field, entry in fields.items() if entry.required)]
    registered = item_schema(item_type, id_field=keys[0] if keys else None, required=required)
    return registered(cls).__item_schema__  # type: ignore[attr-defined]  # set by the item_schema decorator
