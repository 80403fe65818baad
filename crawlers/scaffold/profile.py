"""The proposed profile as TOML text, with a comment on every guess, and the list of what
to check by hand. Pure: a ``Classification`` and the proposals in, text and notes out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from crawlers.profiles import generic_callback
from crawlers.scaffold.classify import HOME, Classification, PageType
from crawlers.scaffold.fields import FieldProposal, propose_fields
from crawlers.scaffold.propose import FollowProposal, propose_follow, same_host_paths, sample_paths
from crawlers.scaffold.write import Entry, TomlTable, render
from crawlers.spiders.common import is_loopback
from crawlers.spiders.rules import url_target


@dataclass
class Proposal:
    """Everything the scaffold proposes for a site, and what it wants checked by hand."""

    site: str
    url: str
    classification: Classification
    fields: dict[str, FieldProposal]
    follows: dict[str, list[FollowProposal]]
    sitemaps: list[str]
    samples: dict[str, list[str]]  # page type -> sample paths (fixtures)
    check: list[str] = field(default_factory=list)
    # Pages without structured data (crawlers.scaffold.plain): the items page type's card
    # container, the item type's declared fields, the pages' languages.
    items_css: str | None = None
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    languages: tuple[str, ...] = ()

    @property
    def item_type(self) -> str:
        assert self.classification.item_type is not None
        return self.classification.item_type


def propose(
    site: str,
    url: str,
    classification: Classification,
    sitemaps: Sequence[str],
    item_fields: Sequence[str] = (),
    fields: dict[str, FieldProposal] | None = None,
) -> Proposal:
    """The profile proposed; ``fields`` when they were aligned on pages without
    structured data (crawlers.scaffold.plain), else read from the structured data."""
    detail = classification.detail or next(
        (t for t in classification.types.values() if t.role == "items"), None
    )
    assert detail is not None and classification.item_type is not None
    host = urlsplit(url).netloc
    if fields is None:
        fields = propose_fields(classification.item_type, detail, item_fields)
    proposal = Proposal(
        site=site,
        url=url,
        classification=classification,
        fields=fields,
        follows=propose_follow(classification),
        sitemaps=same_host_paths(sitemaps, host),
        samples={
            name: sample_paths(page_type.pages) for name, page_type in classification.types.items()
        },
    )
    proposal.check += _checks(proposal)
    return proposal


def _checks(proposal: Proposal) -> list[str]:
    notes = []
    types = proposal.classification.types
    for page_type in types.values():
        guessed = [p.regex for p in page_type.patterns if p.guessed]
        if guessed:
            notes.append(
                f"pages.{page_type.name}.url_patterns {guessed}: made from one URL, "
                "the variable part is a guess"
            )
    listings = [t for t in types.values() if t.role in ("listing", "items")]
    if not listings:
        notes.append(
            "no listing pages found: detail pages are reached only from the start "
            "page and the sitemaps"
        )
    elif not any(f.pagination for t in listings for f in proposal.follows.get(t.name, [])):
        sampled = sum(len(t.pages) for t in listings)
        notes.append(
            f"no pagination found on the {sampled} sampled listing pages: "
            "add a follow rule to their next pages if they have some"
        )
    for name, page_type in types.items():
        if page_type.role == "hub":
            notes.append(
                f"page type {name!r} ({len(page_type.pages)} pages linking to listings "
                "or items) was named after its URLs: rename it if you like"
            )
    for source, rules in proposal.follows.items():
        for rule in rules:
            if not rule.css:
                notes.append(
                    f"pages.{source}.follow to {rule.to!r}: no shared link class "
                    f"found, allow regexes {list(rule.allow)} used instead"
                )
    if not proposal.sitemaps:
        notes.append("no sitemap found (robots.txt, /sitemap.xml, /sitemap_index.xml)")
    return notes


# -- the TOML text -----------------------------------------------------------------------------


def profile_text(proposal: Proposal, command: str) -> str:
    parts = urlsplit(proposal.url)
    base_url = f"{parts.scheme}://{parts.netloc}"
    classification = proposal.classification
    start_path = url_target(proposal.url)
    header = [
        f"{proposal.site}: scaffolded by `{command}`.",
        "A profile-driven site (crawlers/spiders/generic.py): page types, follow rules and",
        "the field map below were proposed from a sample of the site's pages. Lines marked",
        "GUESS are the scaffold's guesses: check them, then `python -m fingerprints baseline",
        f"{proposal.site}` after changing any rule's selector (docs/sites.md).",
    ]
    start_page = HOME if HOME in classification.types else None
    top = [
        Entry("site", proposal.site),
        Entry("description", f"{proposal.site} (scaffolded from {base_url})"),
        Entry("item_type", proposal.item_type),
        Entry("base_url", base_url),
        Entry("start_paths", [start_path]),
    ]
    if start_page:
        top.append(Entry("start_page", start_page, "the page type of start URLs"))
    if proposal.sitemaps:
        top.append(Entry("sitemaps", proposal.sitemaps, "found by the scaffold"))
    top += [
        Entry("render", "never", "the sample was read without a browser"),
        Entry("needs_proxies", False, "GUESS: the sample needed none"),
    ]
    loopback = is_loopback(proposal.url)
    tables = [
        TomlTable(
            "politeness",
            [
                Entry("obey_robots", True),
                Entry("download_delay", 0.0 if loopback else 1.0, "GUESS"),
                Entry("concurrency_per_domain", 16 if loopback else 4, "GUESS"),
                Entry("autothrottle", not loopback),
            ],
            ["GUESS: modest defaults; raise them once the site is known to take more."],
        ),
    ]
    if proposal.items_css is None:
        tables.append(
            TomlTable(
                "recrawl",
                [Entry("item_callbacks", [generic_callback(proposal.item_type)])],
                [
                    "Item pages are fetched with the validators of their last answer "
                    "(docs/recrawl.md)."
                ],
            )
        )
    if proposal.languages:
        tables.append(
            TomlTable(
                "market",
                [Entry("languages", list(proposal.languages), "the pages' <html lang>")],
                ["Dates, number words and currency signs are read as these languages print them."],
            )
        )
    if proposal.declared:
        tables.append(
            TomlTable(
                "item_fields",
                [
                    Entry(name, spec, "GUESS: named after its CSS class, typed by its values")
                    for name, spec in proposal.declared.items()
                ],
                [
                    f"The fields of item type {proposal.item_type!r}, declared here (no type of "
                    "crawlers/items.py fits)."
                ],
            )
        )
    for page_type in classification.types.values():
        tables += _page_tables(proposal, page_type)
    return render(header, top, tables)


def _page_tables(proposal: Proposal, page_type: PageType) -> list[TomlTable]:
    name = page_type.name
    count = len(page_type.pages)
    guessed = any(p.guessed for p in page_type.patterns)
    entries = [
        Entry(
            "url_patterns",
            page_type.regexes,
            "GUESS: from one URL" if guessed else f"from {count} sampled URL(s)",
        )
    ]
    if page_type.role == "detail" and page_type.schema_type:
        entries.append(Entry("item", page_type.schema_type, "the item node's schema.org type"))
    if page_type.role == "items" and proposal.items_css:
        entries.append(
            Entry("items", proposal.items_css, "GUESS: the repeated card, one item each")
        )
    follows = proposal.follows.get(name, [])
    if follows:
        entries.append(Entry("follow", [rule.rule() for rule in follows]))
    entries.append(Entry("sample_paths", proposal.samples.get(name, []), "the fixtures"))
    role = {
        "detail": f"{count} sampled item pages (one {page_type.schema_type} node each)"
        if page_type.schema_type
        else f"{count} sampled item pages (one template, no structured data)",
        "items": f"{count} sampled pages whose repeated cards are the items",
        "listing": f"{count} sampled listing pages (each links to 3 or more item pages)",
        "home": "the start page",
        "hub": f"{count} sampled pages linking to listings or items",
    }[page_type.role]
    tables = [TomlTable(f"pages.{name}", entries, [f"{name}: {role}."])]
    if page_type.role in ("detail", "items") and proposal.fields:
        tables.append(_fields_table(name, proposal.fields, count))
    return tables


def _fields_table(name: str, fields: Mapping[str, FieldProposal], pages: int) -> TomlTable:
    entries = []
    for field_name, proposal in fields.items():
        note = f"{proposal.found}/{pages} pages"
        if proposal.table:
            note += "; GUESS: the table row labelled like the field"
        elif proposal.css:
            note += "; css: GUESS, showed the same values"
        entries.append(Entry(field_name, proposal.rules(), note))
    return TomlTable(
        f"pages.{name}.fields",
        entries,
        ["Item field = [structured data path, CSS fallback]: the first that gives a value wins."],
    )
