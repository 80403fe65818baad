"""The proposed profile as TOML text, with a comment on every guess, and the list of what
to check by hand. Pure: a ``Study`` and the proposals in, text and notes out. A field the
scaffold is not sure of is written as a commented hint (``# rating = [...]``), never as a
rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from crawlers.items import schema_by_type
from crawlers.profiles import generic_callback
from crawlers.scaffold.fields import PLATFORM, FieldProposal
from crawlers.scaffold.follow import (
    FollowProposal,
    deny_missing,
    propose_follow,
    same_host_paths,
    sample_paths,
)
from crawlers.scaffold.site_map import DETAIL, HOME, ITEMS, PageType
from crawlers.scaffold.study import Study
from crawlers.scaffold.write import Entry, TomlTable, render, value
from crawlers.spiders.common import is_loopback
from crawlers.spiders.rules import url_target

__all__ = ["Proposal", "profile_text", "propose"]


@dataclass
class Proposal:
    """Everything the scaffold proposes for a site, and what it wants checked by hand."""

    site: str
    url: str
    study: Study
    follows: dict[str, list[FollowProposal]]
    sitemaps: list[str]
    samples: dict[str, list[str]]  # page type -> sample paths (fixtures)
    check: list[str] = field(default_factory=list)

    @property
    def item_type(self) -> str:
        assert self.study.item_type is not None
        return self.study.item_type

    @property
    def types(self) -> dict[str, PageType]:
        return self.study.site_map.types

    @property
    def sure_fields(self) -> dict[str, FieldProposal]:
        return {name: f for name, f in self.study.fields.items() if f.sure}

    @property
    def not_read(self) -> list[str]:
        """The item type's fields the profile has no rule for (not found, or a hint)."""
        names = schema_by_type(self.item_type).field_names
        return [n for n in names if n not in PLATFORM and n not in self.sure_fields]


def propose(
    site: str, url: str, study: Study, sitemaps: Sequence[str], missing: Sequence[str] = ()
) -> Proposal:
    """``missing``: sampled URLs that answered 404/410 (broken links of the site): a rule
    whose ``allow`` pattern takes them denies them, so the crawl does not fail on them."""
    host = urlsplit(url).netloc
    types = study.site_map.types
    proposal = Proposal(
        site=site,
        url=url,
        study=study,
        follows=deny_missing(propose_follow(study.site_map), missing),
        sitemaps=same_host_paths(list(sitemaps), host),
        samples={name: sample_paths(t.pages) for name, t in types.items()},
    )
    proposal.check += _checks(proposal)
    return proposal


def _checks(proposal: Proposal) -> list[str]:
    notes = []
    for page_type in proposal.types.values():
        guessed = [p.regex for p in page_type.patterns if p.guessed]
        if guessed:
            notes.append(
                f"pages.{page_type.name}.url_patterns {guessed}: made from one URL, "
                "the variable part is a guess"
            )
    roles = {t.role for t in proposal.types.values()}
    if DETAIL in roles and "listing" not in roles:
        notes.append(
            "no listing pages found: item pages are reached only from the start page "
            "and the sitemaps"
        )
    for name, proposal_ in proposal.study.fields.items():
        if not proposal_.sure:
            choice = proposal_.choice
            notes.append(
                f"field {name}: its rules read {choice.agree} of the {choice.found} values "
                "seen: left as a commented hint"
            )
    if not proposal.sitemaps:
        notes.append("no sitemap found (robots.txt, /sitemap.xml, /sitemap_index.xml)")
    return notes


def start_page(proposal: Proposal) -> str | None:
    """The page type of the start URL (``home``, or the list the home page is part of)."""
    start = url_target(proposal.url)
    for page_type in proposal.types.values():
        if any(page.path == start or page.source == "start" for page in page_type.pages):
            return page_type.name
    return HOME if HOME in proposal.types else None


# -- the TOML text -----------------------------------------------------------------------------


def profile_text(proposal: Proposal, command: str) -> str:
    parts = urlsplit(proposal.url)
    base_url = f"{parts.scheme}://{parts.netloc}"
    study = proposal.study
    header = [
        f"{proposal.site}: scaffolded by `{command}`.",
        "A profile-driven site (crawlers/spiders/generic.py): page types, follow rules and",
        "the field map below were proposed from a sample of the site's pages and checked on",
        f"it. Item type {proposal.item_type}: {study.why}. Lines marked GUESS are guesses; a",
        "commented field is one the scaffold was not sure of. After changing a rule's",
        f"selector: `python -m fingerprints baseline {proposal.site}` (docs/sites.md).",
    ]
    top = [
        Entry("site", proposal.site),
        Entry("description", f"{proposal.site} (scaffolded from {base_url})"),
        Entry("item_type", proposal.item_type),
        Entry("base_url", base_url),
        Entry("start_paths", [url_target(proposal.url)]),
    ]
    if first := start_page(proposal):
        top.append(Entry("start_page", first, "the page type of start URLs"))
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
        )
    ]
    item_page = study.page_type
    if item_page is not None and item_page.role == DETAIL:
        tables.append(
            TomlTable(
                "recrawl",
                [Entry("item_callbacks", [generic_callback(item_page.name)])],
                ["Item pages are fetched with the validators of their last answer."],
            )
        )
    market = []
    if study.languages:
        market.append(Entry("languages", list(study.languages), "the pages' language"))
    if study.country:
        market.append(Entry("country", study.country, "GUESS: from the language or domain"))
    if market:
        tables.append(
            TomlTable(
                "market", market, ["Dates, numbers and currency signs are read as printed here."]
            )
        )
    if study.declared:
        tables.append(
            TomlTable(
                "item_fields",
                [Entry(name, spec) for name, spec in study.declared.items()],
                [
                    f"The fields of item type {proposal.item_type!r} (no type of crawlers/items.py "
                    "fits): the platform's names for them."
                ],
            )
        )
    if proposal.not_read:
        tables.append(
            TomlTable(
                "fingerprint",
                [Entry("not_read", proposal.not_read, "no rule reads them")],
                [
                    "Item fields not read (not found on the sample, or a commented hint): the",
                    "coverage baseline has no rate for them. Enabling one: take it out of",
                    f"not_read, then `python -m fingerprints coverage {proposal.site} "
                    "--from-fixtures`.",
                ],
            )
        )
    for page_type in proposal.types.values():
        tables += _page_tables(proposal, page_type)
    return render(header, top, tables)


def _page_tables(proposal: Proposal, page_type: PageType) -> list[TomlTable]:
    study = proposal.study
    name = page_type.name
    count = len(page_type.pages)
    guessed = any(p.guessed for p in page_type.patterns)
    note = "GUESS: from one URL" if guessed else f"from {count} sampled URL(s)"
    entries = [Entry("url_patterns", page_type.regexes, note)]
    carries = page_type is study.page_type
    if carries and page_type.role == DETAIL and study.schema:
        entries.append(Entry("item", study.schema, "the item node's schema.org type"))
    if carries and page_type.role == ITEMS and study.items_css:
        entries.append(Entry("items", study.items_css, "the repeated card, one item each"))
    follows = proposal.follows.get(name, [])
    if follows:
        entries.append(Entry("follow", [rule.rule() for rule in follows]))
    entries.append(Entry("sample_paths", proposal.samples.get(name, []), "the fixtures"))
    role = {
        DETAIL: f"{count} sampled item pages",
        ITEMS: f"{count} sampled pages whose repeated cards are the items",
        "listing": f"{count} sampled listing pages (their cards lead to the items)",
        HOME: "the start page",
        "hub": f"{count} sampled pages leading to listings or items",
    }[page_type.role]
    tables = [TomlTable(f"pages.{name}", entries, [f"{name}: {role}."])]
    if carries and study.fields:
        tables.append(_fields_table(name, study.fields))
    return tables


def _fields_table(name: str, fields: dict[str, FieldProposal]) -> TomlTable:
    entries = []
    for field_name, proposal in fields.items():
        choice = proposal.choice
        note = f"read {choice.agree}/{choice.found} values seen"
        if proposal.sure:
            entries.append(Entry(field_name, proposal.rules(), note))
        elif proposal.rules():
            hint = f"# {field_name} = {value(proposal.rules())}  # GUESS: {note}"
            entries.append(Entry("", hint))
    return TomlTable(
        f"pages.{name}.fields",
        entries,
        [
            "Item field = [rule, fallback]: the first rule giving a value wins. A commented",
            "field was seen but its rules were not sure: check it before enabling it.",
        ],
    )
