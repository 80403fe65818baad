"""Item schemas: one declaration per item type gives validation, the item key, the content
hash and the Elasticsearch mapping.

An item type is a plain dataclass (read through ``itemadapter``) decorated with
``@item_schema(...)``. Its annotations are the schema, declared once:

* types and constraints are validated by pydantic (strict: a spider that yields ``"12.50"``
  for a float field has a bug; it is reported, not coerced);
* ``Annotated`` markers (``Text``, ``Keyword``, ``Url``, ``IsoDate``, ``Money``, ...) carry
  the Elasticsearch field mapping, so the index mapping is derived from the same source;
* ``required`` names the fields an item is useless without (a dataclass default of
  ``None`` lets a spider build a partial item, so the pipeline can count what was missing
  instead of the item vanishing inside a callback).

Framework-agnostic: no Scrapy here. The item types of the platform live in
``crawlers/items.py``; importing it registers them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin
from urllib.parse import urlsplit

from itemadapter import ItemAdapter
from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import is_typeddict
from w3lib.url import canonicalize_url

# -- Elasticsearch field markers ---------------------------------------------------------


@dataclass(frozen=True, eq=False)  # identity hash: typing hashes Annotated metadata
class EsField:
    """The Elasticsearch mapping of a field, carried in its ``Annotated`` type."""

    mapping: Mapping[str, Any]


KEYWORD: Mapping[str, Any] = {"type": "keyword", "ignore_above": 1024}
# Names and titles: full-text search plus exact match/aggregations on ``.keyword``.
# Only the ``standard`` analyzer: the embedded node has no language analyzers.
TEXT: Mapping[str, Any] = {
    "type": "text",
    "analyzer": "standard",
    "fields": {"keyword": {"type": "keyword", "ignore_above": 256}},
}
LONG_TEXT: Mapping[str, Any] = {"type": "text", "analyzer": "standard"}
URL: Mapping[str, Any] = {"type": "keyword", "ignore_above": 4096}
DATE: Mapping[str, Any] = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}
DOUBLE: Mapping[str, Any] = {"type": "double"}
LONG: Mapping[str, Any] = {"type": "long"}
BOOLEAN: Mapping[str, Any] = {"type": "boolean"}
FLATTENED: Mapping[str, Any] = {"type": "flattened"}


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("not an absolute http(s) URL")
    return value


def _iso_date(value: str) -> str:
    # Dates or datetimes as the sites give them; Elasticsearch parses the same forms.
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("not an ISO 8601 date/datetime") from None
    return value


Keyword = Annotated[str, Field(min_length=1), EsField(KEYWORD)]
Text = Annotated[str, Field(min_length=1), EsField(TEXT)]
LongText = Annotated[str, EsField(LONG_TEXT)]
Url = Annotated[str, AfterValidator(_http_url), EsField(URL)]
IsoDate = Annotated[str, AfterValidator(_iso_date), EsField(DATE)]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$"), EsField(KEYWORD)]  # ISO 4217
CountryCode = Annotated[str, Field(pattern=r"^[A-Z]{2}$"), EsField(KEYWORD)]  # ISO 3166-1
LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]+)*$"), EsField(KEYWORD)]
Money = Annotated[float, Field(ge=0), EsField(DOUBLE)]
Count = Annotated[int, Field(ge=0), EsField(LONG)]


@dataclass
class GeoPoint:
    """A WGS84 coordinate, stored as an Elasticsearch ``geo_point``."""

    __es_mapping__: typing.ClassVar[Mapping[str, Any]] = {"type": "geo_point"}

    lat: Annotated[float, Field(ge=-90, le=90)]
    lon: Annotated[float, Field(ge=-180, le=180)]


# Fields every stored document carries besides the item's own (see core.store).
RESERVED_FIELDS = frozenset(
    {
        "item_key",
        "site",
        "item_type",
        "content_hash",
        "first_seen",
        "last_seen",
        "last_changed",
        "extracted_job_id",
    }
)
# Never part of the content hash: they differ between crawls of identical content.
ALWAYS_VOLATILE = frozenset({"job_id"})


# -- validation results --------------------------------------------------------------------


@dataclass(frozen=True)
class FieldError:
    """Why an item is invalid: a field path (``reviews.rating``) and a short reason code.

    Reasons: ``missing`` (required and empty) or pydantic's error type (``float_type``,
    ``greater_than_equal``, ``string_pattern_mismatch``, ``value_error``, ...).
    """

    field: str
    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Validation:
    item: Any  # the validated (normalised) item, or the input when invalid
    errors: tuple[FieldError, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


class UnknownItemType(LookupError):
    """An item whose class was never declared with ``@item_schema``."""


# -- the schema ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ItemSchema:
    item_type: str
    cls: type
    id_field: str | None
    url_field: str
    required: tuple[str, ...]
    volatile: frozenset[str] = field(default_factory=frozenset)
    # Fields whose old and new values a change records (``core.recrawl.history``): what a user
    # asks "what changed?" about (price, availability, rating, ...), not every edit.
    history: tuple[str, ...] = ()

    @cached_property
    def _adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.cls)

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.cls))

    # -- validation ------------------------------------------------------------------------
    def validate(self, item: Any) -> Validation:
        """All field errors of ``item`` (none: valid), and the normalised item.

        The normalised item is a new instance with pydantic's lossless conversions (an
        int in a float field becomes a float), so equal content always hashes equally.
        """
        data = plain_fields(item)
        errors: list[FieldError] = []
        missing = {name for name in self.required if _is_empty(data.get(name))}
        errors += [FieldError(name, "missing") for name in sorted(missing)]
        unkeyed = self.id_field is None or _is_empty(data.get(self.id_field))
        if unkeyed and _is_empty(data.get(self.url_field)) and self.url_field not in missing:
            errors.append(FieldError(self.url_field, "missing", "no id and no URL to key on"))
            missing.add(self.url_field)
        validated = item
        try:
            validated = self._adapter.validate_python(item, strict=True)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                path = ".".join(str(part) for part in error["loc"] if not isinstance(part, int))
                if path.split(".")[0] in missing and error["input"] is None:
                    continue  # already reported as missing
                errors.append(FieldError(path or "_item", error["type"], error["msg"]))
        return Validation(validated, tuple(errors))

    def field_error(self, name: str, value: Any) -> FieldError | None:
        """Why ``value`` does not fit field ``name`` as declared (None: it fits), judged as
        ``validate`` judges it, one field alone: a candidate value of one source is
        checked before the item is built (``crawlers.spiders.fallbacks``). An empty value
        is no error here (absent, not invalid); a required field's emptiness is the item's."""
        if _is_empty(value):
            return None
        try:
            self._field_adapters[name].validate_python(value, strict=True)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            path = ".".join(str(part) for part in error["loc"] if not isinstance(part, int))
            return FieldError(f"{name}.{path}" if path else name, error["type"], error["msg"])
        return None

    @cached_property
    def _field_adapters(self) -> dict[str, TypeAdapter[Any]]:
        hints = typing.get_type_hints(self.cls, include_extras=True)
        return {name: TypeAdapter(hints[name]) for name in self.field_names}

    # -- identity and content -----------------------------------------------------------
    def stable_id(self, data: Mapping[str, Any]) -> str:
        """The site's own id, else the canonical URL (fragment dropped, query sorted)."""
        if self.id_field is not None and not _is_empty(data.get(self.id_field)):
            return str(data[self.id_field]).strip()
        url = data.get(self.url_field)
        if _is_empty(url):
            raise ValueError(f"{self.item_type}: neither {self.id_field} nor a URL to key on")
        return "url:" + canonicalize_url(str(url).strip())

    def key(self, site: str, data: Mapping[str, Any]) -> str:
        """``<site>:<item type>:<stable id>``: ids are only unique within a type."""
        return f"{site}:{self.item_type}:{self.stable_id(data)}"

    def content(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The item's fields minus the volatile ones (what the content hash covers)."""
        skip = self.volatile | ALWAYS_VOLATILE
        return {name: value for name, value in data.items() if name not in skip}

    def content_hash(self, data: Mapping[str, Any]) -> str:
        return content_hash(self.content(data))

    # -- Elasticsearch -----------------------------------------------------------------------
    @cached_property
    def es_properties(self) -> dict[str, Any]:
        """The item's fields as Elasticsearch mapping properties."""
        hints = typing.get_type_hints(self.cls, include_extras=True)
        return {name: es_mapping_of(hints[name]) for name in self.field_names}


def plain_fields(item: Any) -> dict[str, Any]:
    """The item's fields as plain data: nested dataclasses become dicts.

    ``ItemAdapter.asdict()`` does the same but asks ``is_item`` of every nested value
    (each review's every string): 0.4 ms per demo product, which dominated the
    pipelines' CPU. Lists of dicts and strings are plain already, so only nested
    dataclass instances are converted (through itemadapter).
    """
    fields = dict(ItemAdapter(item))
    for name, value in fields.items():
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields[name] = ItemAdapter(value).asdict()
        elif isinstance(value, list) and any(
            dataclasses.is_dataclass(entry) and not isinstance(entry, type) for entry in value
        ):
            fields[name] = [
                ItemAdapter(entry).asdict() if dataclasses.is_dataclass(entry) else entry
                for entry in value
            ]
    return fields


def content_hash(content: Mapping[str, Any]) -> str:
    """A stable digest of JSON-able content: key order and whitespace do not matter."""
    canonical = json.dumps(
        content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


# -- registry ----------------------------------------------------------------------------------

_BY_TYPE: dict[str, ItemSchema] = {}
_BY_CLASS: dict[type, ItemSchema] = {}

T = TypeVar("T", bound=type)


def item_schema(
    item_type: str,
    *,
    id_field: str | None,
    required: Iterable[str] = (),
    url_field: str = "url",
    volatile: Iterable[str] = (),
    history: Iterable[str] = (),
) -> typing.Callable[[T], T]:
    """Declare a dataclass as an item type (see the module docstring)."""

    def register(cls: T) -> T:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__}: item types are dataclasses")
        names = {f.name for f in dataclasses.fields(cls)}
        declared = set(required) | set(volatile) | set(history) | {url_field}
        if id_field is not None:
            declared.add(id_field)
        if unknown := declared - names:
            raise TypeError(f"{cls.__name__}: schema names unknown fields {sorted(unknown)}")
        if clash := names & RESERVED_FIELDS:
            raise TypeError(f"{cls.__name__}: fields {sorted(clash)} are reserved for the store")
        existing = _BY_TYPE.get(item_type)
        if existing is not None and existing.cls.__qualname__ != cls.__qualname__:
            raise TypeError(f"item type {item_type!r} is already declared by {existing.cls}")
        _revalidate_dataclasses(cls)
        schema = ItemSchema(
            item_type=item_type,
            cls=cls,
            id_field=id_field,
            url_field=url_field,
            required=tuple(required),
            volatile=frozenset(volatile),
            history=tuple(history),
        )
        _BY_TYPE[item_type] = schema
        _BY_CLASS[cls] = schema
        cls.__item_schema__ = schema  # type: ignore[attr-defined]  # the registry's mark on the class
        return cls

    return register


def _revalidate_dataclasses(cls: type) -> None:
    """Make pydantic check the fields of existing instances (it trusts them by default)."""
    seen: set[type] = set()
    pending: list[Any] = [cls]
    while pending:
        tp = pending.pop()
        if isinstance(tp, type) and dataclasses.is_dataclass(tp) and tp not in seen:
            seen.add(tp)
            # pydantic reads a dataclass's config from this attribute, undeclared on type.
            tp.__pydantic_config__ = ConfigDict(revalidate_instances="always")  # type: ignore[attr-defined]  # pydantic's hook
            pending += typing.get_type_hints(tp, include_extras=True).values()
        elif isinstance(tp, type) and is_typeddict(tp) and tp not in seen:
            seen.add(tp)
            pending += typing.get_type_hints(tp, include_extras=True).values()
        else:
            pending += get_args(tp)


def schema_for(item: Any) -> ItemSchema:
    """The schema of an item instance (or item class)."""
    cls = item if isinstance(item, type) else type(item)
    schema = _BY_CLASS.get(cls)
    if schema is None:
        raise UnknownItemType(f"{cls.__name__} is not a declared item type (@item_schema)")
    return schema


def schema_by_type(item_type: str) -> ItemSchema:
    try:
        return _BY_TYPE[item_type]
    except KeyError:
        raise UnknownItemType(f"no item type {item_type!r} is declared") from None


def registered_types() -> dict[str, ItemSchema]:
    return dict(_BY_TYPE)


# -- mapping derivation ------------------------------------------------------------------------


def es_mapping_of(tp: Any) -> dict[str, Any]:
    """The Elasticsearch mapping of a type annotation.

    ``Annotated[..., EsField(m)]`` -> ``m``; ``X | None`` -> X's; ``list[X]`` -> X's
    (objects in a list become ``nested`` so each keeps its own fields together);
    dataclasses and TypedDicts -> objects; ``dict`` -> ``flattened``; ``str`` ->
    keyword; ``float`` -> double; ``int`` -> long; ``bool`` -> boolean; ``Literal`` of
    strings -> keyword.
    """
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        for marker in metadata:
            if isinstance(marker, EsField):
                return dict(marker.mapping)
        return es_mapping_of(base)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(options) != 1:
            raise TypeError(f"cannot map a union of several types to Elasticsearch: {tp}")
        return es_mapping_of(options[0])
    if origin in (list, tuple, set, frozenset):
        inner = es_mapping_of(get_args(tp)[0])
        if inner.get("type") == "object":
            inner["type"] = "nested"
        return inner
    if origin is dict or tp is dict:
        return dict(FLATTENED)
    if origin is Literal:
        if all(isinstance(value, str) for value in get_args(tp)):
            return dict(KEYWORD)
        raise TypeError(f"only string literals are mapped: {tp}")
    if isinstance(tp, type):
        custom = getattr(tp, "__es_mapping__", None)
        if custom is not None:
            return dict(custom)
        if dataclasses.is_dataclass(tp) or is_typeddict(tp):
            hints = typing.get_type_hints(tp, include_extras=True)
            return {
                "type": "object",
                "properties": {name: es_mapping_of(hint) for name, hint in hints.items()},
            }
        simple = {str: KEYWORD, float: DOUBLE, int: LONG, bool: BOOLEAN}
        if tp in simple:
            return dict(simple[tp])
    raise TypeError(f"no Elasticsearch mapping for {tp!r}")
