"""Field-level fallbacks: each field of an item from the first source whose value fits.

A spider reads each place a page states fields in (JSON-LD, microdata, embedded state,
the profile's selectors, a listing card) into a *layer*; ``pick`` takes each field from
the first layer whose value fits the item schema (``ItemSchema.field_error``), so one bad
value in one source does not drop the item. Text with U+FFFD loses to a later clean one.
``report`` counts every refused candidate and names them in one WARNING per item; a
required field no source has valid keeps its first value for validation to drop.

Reads: the item schemas. Order, sources and counters: docs/pipelines.md "Field-level
fallbacks: one bad value is not the whole item".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from crawlers.items import schema_by_type

# An amount and its currency are one statement: read from one source where it has both.
PRICE = {"price": ("currency",)}
# A source's fields, or a function reading them: only called when an earlier source left
# a field without a fitting value (a complete JSON-LD spares parsing the markup).
Layer = Mapping[str, Any] | Callable[[], Mapping[str, Any]]

REPLACEMENT = "\ufffd"
_DETAIL_CHARS = 80


@dataclass(frozen=True)
class Rejected:
    """A source's value refused for a field: ``reason`` is the schema's error type
    (``greater_than_equal``, ``value_error``...) or ``replacement_character``."""

    field: str
    source: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class Picked:
    """An item's fields as picked: each with the source it came from; the candidates
    refused on the way; the optional fields left empty because no source had them valid."""

    item_type: str
    fields: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    rejected: tuple[Rejected, ...] = ()
    no_valid: tuple[str, ...] = ()


def pick(
    item_type: str,
    layers: Sequence[tuple[str, Layer]],
    *,
    names: Iterable[str] | None = None,
    order: Mapping[str, Sequence[str]] | None = None,
    together: Mapping[str, Sequence[str]] | None = None,
) -> Picked:
    """The fields ``names`` (default: every field a layer gives) from ``layers`` (source
    name, fields), each from the first source whose value fits; ``order``: a field's own
    source order where it differs from the layers' (a source known to be more precise
    for that field), naming only the sources to try; ``together``: fields read from the
    source their lead field was taken from (``{"price": ("currency",)}``: an amount and
    its currency are one statement), from any source when the lead has none."""
    schema = schema_by_type(item_type)
    sources = [name for name, _ in layers]
    read = _Layers(dict(layers))
    if names is None:  # every field a layer gives: each layer is read
        names = dict.fromkeys(name for source in sources for name in read(source))
    fields: dict[str, Any] = dict.fromkeys(names)
    chosen: dict[str, str] = {}
    rejected: list[Rejected] = []
    no_valid: list[str] = []
    led = {name: lead for lead, bound in (together or {}).items() for name in bound}
    for name in sorted(fields, key=lambda name: name in led):  # leads first
        tried = [s for s in (order or {}).get(name, sources) if s in sources]
        lead = chosen.get(led.get(name, ""))
        if lead is not None:  # the lead's source first: one statement, where it has both
            tried = [lead, *(s for s in tried if s != lead)]
        found = _first_fitting(schema, name, tried, read)
        rejected += found.refused
        if found.source is not None:
            fields[name] = found.value
            chosen[name] = found.source
        elif found.refused:
            if name in schema.required:
                fields[name] = found.first_invalid  # the pipeline drops it, naming why
            else:
                no_valid.append(name)
    return Picked(item_type, fields, chosen, tuple(rejected), tuple(no_valid))


@dataclass
class _Found:
    value: Any = None
    source: str | None = None
    refused: list[Rejected] = field(default_factory=list)
    first_invalid: Any = None


def _first_fitting(schema: Any, name: str, sources: list[str], read: _Layers) -> _Found:
    found = _Found()
    damaged: tuple[str, Any] | None = None
    invalid_seen = False
    for source in sources:
        value = read(source).get(name)
        if _empty(value):
            continue
        error = schema.field_error(name, value)
        if error is not None:
            detail = f"{error.field}: {error.detail}; got {_short(value)}"
            found.refused.append(Rejected(name, source, error.reason, detail))
            if not invalid_seen:
                found.first_invalid, invalid_seen = value, True
            continue
        if _damaged(value):
            damaged = damaged or (source, value)
            continue
        found.value, found.source = value, source
        if damaged is not None:
            detail = f"undecodable text: {_short(damaged[1])}"
            found.refused.append(Rejected(name, damaged[0], "replacement_character", detail))
        return found
    if damaged is not None:  # no clean value anywhere: the marked one, not nothing
        found.source, found.value = damaged
    return found


class _Layers:
    """The layers' fields, each source read once, when first asked."""

    def __init__(self, layers: dict[str, Layer]) -> None:
        self._layers = layers
        self._read: dict[str, Mapping[str, Any]] = {}

    def __call__(self, source: str) -> Mapping[str, Any]:
        if source not in self._read:
            layer = self._layers.get(source, {})
            self._read[source] = (layer() if callable(layer) else layer) or {}
        return self._read[source]


def _empty(value: Any) -> bool:
    return value is None or value in ("", [], {}) or (isinstance(value, str) and not value.strip())


def _damaged(value: Any) -> bool:
    if isinstance(value, str):
        return REPLACEMENT in value
    if isinstance(value, list):
        return any(isinstance(v, str) and REPLACEMENT in v for v in value)
    return False


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _DETAIL_CHARS else shown[: _DETAIL_CHARS - 3] + "..."


# -- counted and said ------------------------------------------------------------------------


class _Stats(Protocol):
    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


def report(
    picked: Picked,
    url: str,
    stats: _Stats | None,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """Count ``picked``'s refused candidates and emptied fields; one WARNING line for the
    item when there is any."""
    if not picked.rejected and not picked.no_valid:
        return
    kind = picked.item_type
    if stats is not None:
        for refused in picked.rejected:
            stats.inc_value(
                f"fields/fallback/{kind}/{refused.field}/{refused.source}/{refused.reason}"
            )
        for name in picked.no_valid:
            stats.inc_value(f"fields/no_valid/{kind}/{name}")
    said = []
    for name in dict.fromkeys(r.field for r in picked.rejected):
        refusals = ", ".join(
            f"{r.source}: {r.reason} ({r.detail})" for r in picked.rejected if r.field == name
        )
        source = picked.sources.get(name)
        if source is not None:
            outcome = f"taken from {source}"
        elif name in picked.no_valid:
            outcome = "left empty"
        else:
            outcome = "no valid source"
        said.append(f"{name} {outcome}, refused {refusals}")
    logger.warning("%s: %s field(s) refused a source's value: %s", url, kind, "; ".join(said))
