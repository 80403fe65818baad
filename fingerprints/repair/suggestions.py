"""Repair suggestions: replacement rules for the fields a site's extraction lost.

When the gate finds that a site's callbacks no longer extract some fields from the new
sample pages, ``suggest_repairs`` asks an OpenAI-compatible chat model for replacement
rules, one request per page type: the pages go in reduced to their DOM skeleton
(``fingerprints.repair.skeleton``), the answer comes back as JSON. A rule is a CSS selector, an
XPath, or a path into the JSON of a script (JSON-LD, a state blob).

Nothing the model says is trusted: every suggested rule is run on every sample page of
its type (parsel) and each value is validated against the field's type in the site's
item schema (pydantic, the annotation ``core.items_schema`` declares). A rule is kept
only when it yields a valid value on every page; any other is discarded with the reason.
The kept ones are suggestions for a person to review, never applied automatically.

Without an endpoint (``chat_client`` answers None) nothing is asked: one log line and a
report that says why. The API key lives only inside the ``openai`` client: it is never
logged, and no message here contains it.
"""

from __future__ import annotations

import json
import logging
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args, get_origin
from urllib.parse import urlsplit

import openai
from parsel import Selector
from pydantic import BaseModel, TypeAdapter, ValidationError

from core.config import PlatformSettings, get_settings
from crawlers.items import schema_by_type
from crawlers.profiles import PROFILES_DIR, SiteProfile
from fingerprints.repair.report import Discarded, Repair, RepairReport, value_text
from fingerprints.repair.rules import RepairError, Rule, RuleKind
from fingerprints.repair.skeleton import skeleton

# The repair API in one place (orchestration.repairs and tests import it from here).
__all__ = [
    "Discarded",
    "Repair",
    "RepairError",
    "RepairReport",
    "Rule",
    "chat_client",
    "endpoint_name",
    "suggest_repairs",
]

logger = logging.getLogger(__name__)

# Characters of page skeletons in one request (all pages of a page type together).
DEFAULT_PROMPT_BUDGET = 24_000
# Sample pages shown to the model per page type (all of them are used for validation).
PAGES_SHOWN = 2

SYSTEM_PROMPT = """\
You repair a web scraper. A site changed its markup and the scraper's rules for some \
fields no longer find them. You get, for one page type, the fields that fail (with their \
JSON schema and the old rule when known) and the new pages reduced to a DOM skeleton: \
one element per line, indented by depth, as tag#id.class[attributes] "own text"; JSON \
scripts are listed as key paths with short values.

For each failing field, suggest one or two replacement rules that extract the field's \
value from every page of this type. A rule is one of:
- {"kind": "css", "selector": "..."}: a CSS selector; end it with ::text or ::attr(name) \
to pick a text node or an attribute (otherwise the element's whole text is used);
- {"kind": "xpath", "selector": "..."}: an XPath 1.0 expression;
- {"kind": "json", "selector": "<CSS selector of the script element>", "path": \
"<dotted path, [n] for list entries, e.g. product.offers[0].price>"}.
Prefer stable hooks (ids, itemprop, data-* attributes, JSON keys) to layout classes. The \
value must already have the field's type (a number for a number field): prefer a JSON \
path when the visible text needs converting.

Answer with JSON only: {"suggestions": [{"field": "...", "kind": "...", "selector": \
"...", "path": "...", "why": "..."}]}"""


# -- the endpoint -----------------------------------------------------------------------------


def chat_client(settings: PlatformSettings | None = None) -> openai.OpenAI | None:
    """The OpenAI-compatible client embeddings use (``OPENAI_BASE_URL`` /
    ``OPENAI_API_KEY``), or None when neither is set."""
    settings = settings or get_settings()
    if not settings.openai_base_url and settings.openai_api_key is None:
        return None
    key = settings.openai_api_key
    return openai.OpenAI(
        api_key=(key.get_secret_value() if key is not None else None) or "no-key",
        base_url=settings.openai_base_url,
        max_retries=2,
        timeout=120.0,
    )


def endpoint_name(client: openai.OpenAI) -> str:
    """The endpoint's host for messages (never credentials or the full URL)."""
    parts = urlsplit(str(client.base_url))
    return parts.hostname or "?"


def _request_error(exc: openai.OpenAIError) -> str:
    """A failed request, named without the SDK's message (it may echo a key's prefix)."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")


class _Suggestion(BaseModel):
    field: str
    kind: RuleKind
    selector: str
    path: str = ""
    why: str = ""


# -- the entry point ------------------------------------------------------------------------


def suggest_repairs(
    site: str,
    failed_fields: Mapping[str, Sequence[str]],
    pages: Mapping[str, Sequence[tuple[str, str]]],
    *,
    client: openai.OpenAI | None,
    model: str,
    current_rules: Mapping[str, Mapping[str, str]] | None = None,
    item_type: str | None = None,
    profiles_dir: Path = PROFILES_DIR,
    prompt_budget: int = DEFAULT_PROMPT_BUDGET,
) -> RepairReport:
    """Ask ``model`` for new rules for ``failed_fields`` (page type -> field names), from
    the sample ``pages`` (page type -> (URL, HTML)); keep those valid on every page.

    ``item_type`` defaults to the site profile's. Never raises for the endpoint: a failed
    request is an entry in ``errors``.
    """
    if client is None:
        reason = "no OpenAI-compatible endpoint configured (set OPENAI_BASE_URL or OPENAI_API_KEY)"
        logger.info("repair suggestions for %s skipped: %s", site, reason)
        return RepairReport(site, skipped=reason)
    wanted = {pt: list(names) for pt, names in failed_fields.items() if names and pages.get(pt)}
    unsampled = [pt for pt, names in failed_fields.items() if names and not pages.get(pt)]
    if not wanted:
        reason = "no sample pages for the page types whose fields failed"
        logger.info("repair suggestions for %s skipped: %s", site, reason)
        return RepairReport(site, model=model, skipped=reason)
    schema = schema_by_type(item_type or SiteProfile.load(site, profiles_dir).item_type)
    hints = typing.get_type_hints(schema.cls, include_extras=True)
    rules = current_rules or {}
    kept: list[Repair] = []
    discarded: list[Discarded] = []
    errors = [f"{pt}: no sample page to ask about or validate on" for pt in unsampled]
    for page_type, names in wanted.items():
        known = [name for name in names if name in hints]
        discarded += [
            Discarded(page_type, name, "-", f"not a field of item type {schema.item_type!r}")
            for name in names
            if name not in hints
        ]
        if not known:
            continue
        fields = {name: hints[name] for name in known}
        old = rules.get(page_type, {})
        samples = list(pages[page_type])
        prompt = _prompt(site, page_type, fields, old, samples, prompt_budget)
        logger.info(
            "asking %s at %s for repairs of %s %s field(s): %s",
            model,
            endpoint_name(client),
            site,
            page_type,
            ", ".join(known),
        )
        try:
            suggestions = _ask(client, model, prompt)
        except openai.OpenAIError as exc:
            error = f"{page_type}: request failed: {_request_error(exc)}"
            logger.warning("repair suggestions for %s %s", site, error)
            errors.append(error)
            continue
        except ValueError as exc:
            errors.append(f"{page_type}: unreadable answer: {exc}")
            continue
        parsed = [(url, Selector(text=html)) for url, html in samples]
        for suggestion in suggestions:
            if isinstance(suggestion, str):
                discarded.append(Discarded(page_type, "?", "-", suggestion))
                continue
            rule = Rule(suggestion.kind, suggestion.selector.strip(), suggestion.path.strip())
            if suggestion.field not in fields:
                discarded.append(
                    Discarded(page_type, suggestion.field, str(rule), "not a failing field")
                )
                continue
            outcome = _validate(rule, fields[suggestion.field], parsed)
            if isinstance(outcome, str):
                discarded.append(Discarded(page_type, suggestion.field, str(rule), outcome))
            else:
                kept.append(
                    Repair(
                        page_type,
                        suggestion.field,
                        old.get(suggestion.field),
                        rule,
                        outcome,
                        suggestion.why.strip(),
                    )
                )
    logger.info("repair suggestions for %s: %d kept, %d discarded", site, len(kept), len(discarded))
    return RepairReport(site, model, tuple(kept), tuple(discarded), None, tuple(errors))


def _prompt(
    site: str,
    page_type: str,
    fields: Mapping[str, Any],
    old_rules: Mapping[str, str],
    samples: Sequence[tuple[str, str]],
    budget: int,
) -> str:
    shown = samples[:PAGES_SHOWN]
    per_page = max(1000, budget // max(1, len(shown)))
    described = []
    for name, annotation in fields.items():
        entry: dict[str, Any] = {"field": name, "schema": TypeAdapter(annotation).json_schema()}
        if name in old_rules:
            entry["old_rule"] = old_rules[name]
        described.append(entry)
    parts = [
        f"Site: {site}. Page type: {page_type}.",
        "Failing fields:",
        json.dumps(described, ensure_ascii=False),
    ]
    for number, (url, html) in enumerate(shown, 1):
        parts += ["", f"Page {number} ({url}) skeleton:", skeleton(html, max_chars=per_page)]
    return "\n".join(parts)


def _ask(client: openai.OpenAI, model: str, prompt: str) -> list[_Suggestion | str]:
    """The model's suggestions; a malformed entry is the reason it cannot be used (one
    bad entry must not cost the others). ValueError: no usable answer at all."""
    completion = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ],
        response_format={"type": "json_object"},
        temperature=0,
    )
    content = completion.choices[0].message.content if completion.choices else None
    if not content:
        raise ValueError("empty answer")
    try:
        raw = json.loads(content)
    except ValueError:
        raise ValueError("not JSON") from None
    entries = raw.get("suggestions") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise ValueError("no 'suggestions' list")
    suggestions: list[_Suggestion | str] = []
    for entry in entries:
        try:
            suggestions.append(_Suggestion.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "entry"
            suggestions.append(f"malformed suggestion: {where}: {first['msg']}")
    return suggestions


def _is_list(annotation: Any) -> bool:
    """``list[X]`` (possibly ``Annotated`` / ``| None``): the rule's every value counts."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _is_list(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(arg) for arg in get_args(annotation) if arg is not type(None))
    return origin in (list, tuple)


def _validate(
    rule: Rule, annotation: Any, pages: Sequence[tuple[str, Selector]]
) -> tuple[tuple[str, Any], ...] | str:
    """The validated value on every page, or why the rule is discarded.

    Validation is pydantic's lax mode on purpose: a selector yields text, so ``"4.5"``
    passes for a number field (the spider converts it as it does today) while ``"59,99"``
    or ``"4.5 of 5"`` do not. The table shows the converted values.
    """
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    many = _is_list(annotation)
    found: list[tuple[str, Any]] = []
    for url, page in pages:
        try:
            values = rule.values(page)
        except RepairError as exc:
            return str(exc)
        if not values:
            return f"no value on {url}"
        value = values if many else values[0]
        try:
            validated = adapter.validate_python(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            return f"invalid value {value_text(value)!r} on {url}: {first['type']} ({first['msg']})"
        if validated is None:
            return f"no value on {url}"
        found.append((url, validated))
    return tuple(found)
