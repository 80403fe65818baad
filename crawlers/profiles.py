"""Site profiles: what differs between sites, declared as data in ``profiles/<site>.toml``.

A profile says where a crawl starts, how politely it fetches, whether pages need a
browser or proxies, which item type it yields, how long its steps may take, and when
its ``scrape-<site>`` deployment runs (``schedule``: cron, UTC; absent = manual only) with
which ``description``. The spider turns it into Scrapy settings
(``SiteSpider.update_settings``); the flows read the same file for timeouts, schedule and
description. Adding a site never edits this module.

``SiteProfile`` and its tables (crawlers.profile_schema) are the schema, listed key by key
in docs/sites.md. A bad profile fails its load with a one-line ``ProfileError`` naming the
file, the key and what was expected::

    crawlers/profiles/demo.toml: timeouts.producer: expected an integer, got "300"

``python -m crawlers.profiles check [--dir DIR]`` validates every profile: one line each,
exit status 2 when any is bad.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from core.config import site_profiles_dir
from crawlers.profile_schema import (
    Budget,
    Fetch,
    FingerprintTable,
    PageTypeTable,
    Politeness,
    Recrawl,
    Timeouts,
)
from crawlers.profile_schema.messages import describe, shown
from crawlers.profile_schema.pages import ItemField, MarketTable, PageTable
from crawlers.profile_schema.values import (
    Cron,
    EnvName,
    HttpUrl,
    PageTypeName,
    RenderMode,
    SiteName,
    Table,
    Text,
    UrlPaths,
    list_as_tuple,
)

__all__ = [
    "PROFILES_DIR",
    "Fetch",
    "PageSelectors",
    "Politeness",
    "ProfileError",
    "RenderMode",
    "SiteProfile",
    "Timeouts",
    "generic_callback",
    "load_profiles",
    "profile_sites",
    "site_schedules",
]

# crawlers/profiles/, or SITE_PROFILES_DIR (profiles kept outside the repository, tests).
PROFILES_DIR = site_profiles_dir(Path(__file__).resolve().parent / "profiles")


def generic_callback(page_type: str) -> str:
    """The generic spider's callback of a page type (``[pages.<name>]``): ``parse_<name>``."""
    return "parse_" + page_type.replace("-", "_")


class ProfileError(ValueError):
    """A profile file is missing or invalid; the message is one line naming file and key."""


class PageSelectors(Mapping[str, str]):
    """One page type's gate selectors, read by key: ``selectors["gallery"]`` is the
    profile's string, so the gate watches the very selector the spider reads. A key the
    profile lacks is a ``ProfileError`` naming the table to add it to."""

    def __init__(self, site: str, page_type: str, selectors: Mapping[str, str]) -> None:
        self.site, self.page_type = site, page_type
        self._selectors = dict(selectors)

    def __getitem__(self, key: str) -> str:
        try:
            return self._selectors[key]
        except KeyError:
            raise ProfileError(
                f"{self.site} profile: [fingerprint.page_types.{self.page_type}.selectors] "
                f"has no {key!r} (the {self.site} spider reads it)"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._selectors)

    def __len__(self) -> int:
        return len(self._selectors)

    def __repr__(self) -> str:
        return f"PageSelectors({self.site!r}, {self.page_type!r}, {self._selectors!r})"


class SiteProfile(Table):
    site: SiteName
    item_type: Text
    base_url: HttpUrl
    start_paths: UrlPaths = ("/",)
    sitemaps: UrlPaths = ()
    render: RenderMode = "never"
    needs_proxies: bool = False
    needs_session: bool = False
    # The environment variables holding this site's own secrets (a logged-in session's
    # cookies): under compose they reach this site's worker only (orchestration.wiring).
    secrets: Annotated[tuple[EnvName, ...], BeforeValidator(list_as_tuple)] = ()
    # The scrape-<site> deployment: a 5-field cron in UTC (None: manual runs only) and the
    # text Prefect shows for it.
    schedule: Cron | None = None
    description: str | None = None
    politeness: Politeness = Politeness()
    fetch: Fetch = Fetch()
    timeouts: Timeouts = Timeouts()
    budget: Budget = Budget()
    recrawl: Recrawl = Recrawl()
    # Scrapy settings of this site (spider priority: BLOCK_MARKERS, MAX_LISTING_PAGES, ...);
    # their values are the add-on's to check when a crawl starts.
    settings: dict[str, Any] = {}
    fingerprint_table: FingerprintTable | None = Field(default=None, alias="fingerprint")
    # Page types of a profile-driven site (crawlers.spiders.generic): a profile with
    # [pages] and no spider module of its name is crawled by the generic spider.
    pages: dict[PageTypeName, PageTable] = {}
    # The page types start URLs go to when no page type's url_patterns match them.
    start_page: PageTypeName | None = None
    # Where the pages are read: their country, languages and currency (dates, numbers and
    # currency signs as printed); unset, each page's <html lang>.
    market: MarketTable = MarketTable()
    # The fields of an item type of the site's own (crawlers.declared_items): declared
    # here, registered as ``item_type`` when the profile loads.
    item_fields: dict[Text, ItemField] = {}

    @model_validator(mode="after")
    def _session_named(self) -> SiteProfile:
        if self.needs_session and not self.secrets:
            raise _expected(
                "secrets", "the variable holding the session (needs_session = true)", []
            )
        return self

    @model_validator(mode="after")
    def _pages_consistent(self) -> SiteProfile:
        if not self.pages:
            if self.start_page is not None:
                raise _expected(
                    "start_page", "a [pages.<name>] table for it to name", self.start_page
                )
            return self
        table = self.fingerprint_table
        if table is not None and table.page_types:
            # One set: the rules' selectors are the gate's (SiteProfile.gate_table).
            raise _expected(
                "fingerprint.page_types",
                "no [fingerprint.page_types] beside [pages] (put samples and selectors "
                "in [pages.<name>])",
                sorted(table.page_types),
            )
        names = set(self.pages)
        known = shown(sorted(names))
        if self.start_page is not None and self.start_page not in names:
            raise _expected("start_page", f"one of the page types {known}", self.start_page)
        for name, page in self.pages.items():
            for n, rule in enumerate(page.follow):
                if rule.to is not None and rule.to not in names:
                    raise _expected(
                        f"pages.{name}.follow[{n}].to", f"one of the page types {known}", rule.to
                    )
        if self.start_page is None:
            # Else the crawl's first page would fail ("no page type matches it"), not its load.
            for n, path in enumerate(self.start_paths):
                if not any(
                    re.search(p, path) for page in self.pages.values() for p in page.url_patterns
                ):
                    raise _expected(
                        f"start_paths[{n}]",
                        "a path some page type's url_patterns match (or a start_page)",
                        path,
                    )
        return self

    @classmethod
    def load(cls, site: str, directory: Path = PROFILES_DIR) -> SiteProfile:
        path = directory / f"{site}.toml"
        source = shown_path(path)
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ProfileError(f"no profile for site {site!r}: expected {source}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ProfileError(f"{source}: not valid TOML: {exc}") from None
        return cls.from_dict(site, raw, source=source)

    @classmethod
    def from_dict(cls, site: str, raw: dict[str, Any], *, source: str = "<dict>") -> SiteProfile:
        data = dict(raw)
        declared = data.setdefault("site", site)
        if declared != site:
            raise ProfileError(
                f"{source}: site: expected {shown(site)} (the file's name), got {shown(declared)}"
            )
        try:
            profile = cls.model_validate(data)
        except ValidationError as exc:
            # One line, and no chained pydantic report after it in a traceback.
            raise ProfileError(f"{source}: {describe(exc, cls)}") from None
        if profile.item_fields:
            # Imported here: crawlers.declared_items imports the item schemas' registry.
            from crawlers.declared_items import DeclarationError, declare_item_type

            try:
                declare_item_type(profile.item_type, profile.item_fields)
            except DeclarationError as exc:
                raise ProfileError(f"{source}: {exc}") from None
        return profile

    @property
    def gate_table(self) -> FingerprintTable | None:
        """The structure gate's ``[fingerprint]`` table, typed (None without one). With
        ``[pages]``, its page types are the pages': their samples, threshold, the generic
        spider's callback, and as selectors the rules' own plus any extra ones."""
        if not self.pages:
            return self.fingerprint_table
        page_types = {name: _gate_page_type(name, page) for name, page in self.pages.items()}
        table = self.fingerprint_table or FingerprintTable()
        return table.model_copy(update={"page_types": page_types})

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The gate's table as written ({} without one), for review and display."""
        table = self.gate_table
        return {} if table is None else table.model_dump(exclude_unset=True)

    def selectors(self, page_type: str) -> PageSelectors:
        """The gate's selectors of ``page_type``, for the spider that reads the same nodes
        (one home per selector: the spider names a selector by its key)."""
        table = self.gate_table
        page = table.page_types.get(page_type) if table is not None else None
        if page is None:
            raise ProfileError(
                f"{self.site} profile: no [fingerprint.page_types.{page_type}] table "
                "(its spider reads that page type's selectors)"
            )
        return PageSelectors(self.site, page_type, page.selectors)

    @property
    def deployment_description(self) -> str:
        return self.description or f"Scrape {self.site}"

    def scrapy_settings(self) -> dict[str, Any]:
        """The profile as Scrapy settings (applied with 'spider' priority)."""
        polite = self.politeness
        settings: dict[str, Any] = {
            "ROBOTSTXT_OBEY": polite.obey_robots,
            "DOWNLOAD_DELAY": polite.download_delay,
            "CONCURRENT_REQUESTS_PER_DOMAIN": polite.concurrency_per_domain,
            "AUTOTHROTTLE_ENABLED": polite.autothrottle,
            "AUTOTHROTTLE_TARGET_CONCURRENCY": polite.autothrottle_target,
            "DOWNLOAD_TIMEOUT": self.timeouts.download,
            **self.fetch.scrapy_settings(),
            **self.budget.scrapy_settings(),
        }
        settings.update(self.settings)
        return settings


def _gate_page_type(name: str, page: PageTable) -> PageTypeTable:
    """A ``[pages.<name>]`` table as the gate's page type: every selector its rules rely
    on, named after what it finds (``follow_<to>_<n>``, ``<field>`` / ``<field>_<n>``)."""
    selectors: dict[str, str] = {}
    for n, rule in enumerate(page.follow, 1):
        if rule.selector:
            selectors[f"follow_{rule.to or 'links'}_{n}"] = rule.selector
    if page.items:
        selectors["items"] = page.items
    for field, rules in page.fields.items():
        found = [_within(page.items, rule.selector) for rule in rules if rule.selector]
        found = [query for query in found if query]
        for n, query in enumerate(found, 1):
            selectors[field if n == 1 else f"{field}_{n}"] = query
    if page.item:
        # data rules read this node: a page that loses it has changed, however alike.
        selectors[f"item_{page.item}"] = (
            f"//script[@type='application/ld+json'][contains(., '\"{page.item}\"')]"
            f" | //*[@itemscope][contains(@itemtype, 'schema.org/{page.item}')]"
        )
    selectors.update(page.selectors)
    # Only the keys a profile would write (threshold when set): the table dumps as written.
    optional = {} if page.threshold is None else {"threshold": page.threshold}
    return PageTypeTable(
        sample_paths=list(page.sample_paths),
        selectors=selectors,
        callback=generic_callback(name),
        **optional,
    )


def _within(container: str | None, query: str | None) -> str | None:
    """A field's selector as the gate counts it on the whole page: within the page's item
    container when it has one (CSS in CSS; a relative XPath under an XPath)."""
    if not container or not query:
        return query
    container_xpath = container.strip().startswith(("/", "(", "./"))
    query_xpath = query.strip().startswith(("/", "(", "./"))
    if not container_xpath and not query_xpath:
        return f"{container} {query}"
    if container_xpath and query.startswith("./"):
        return f"{container}{query[1:]}"
    return None  # mixed CSS and XPath: the container's own selector stands for it


def _expected(key: str, what: str, got: Any = None) -> PydanticCustomError:
    # Raised in a model validator: describe() shows it as "<key>: expected <what>, got ...".
    return PydanticCustomError(
        "expected", "expected {expected}", {"expected": what, "key": key, "got": got}
    )


def profile_sites(directory: Path = PROFILES_DIR) -> list[str]:
    """Every site with a profile, sorted."""
    return sorted(path.stem for path in directory.glob("*.toml"))


def unknown_site(site: str, directory: Path = PROFILES_DIR) -> str | None:
    """None for a site with a profile; else the one line naming the known sites (what
    ``scrapy crawl`` says of an unknown site)."""
    known = profile_sites(directory)
    if site in known:
        return None
    return (
        f"unknown site {site!r}: known sites are {', '.join(known)}; see {shown_path(directory)}/"
    )


def load_profiles(directory: Path = PROFILES_DIR) -> list[SiteProfile]:
    """Every profile, sorted by site (one bad file fails the lot, naming that file)."""
    return [SiteProfile.load(site, directory) for site in profile_sites(directory)]


def site_schedules(directory: Path = PROFILES_DIR) -> dict[str, str | None]:
    """Site -> its scrape schedule (cron, UTC; None = manual only)."""
    return {profile.site: profile.schedule for profile in load_profiles(directory)}


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when under it, as an operator would type it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    """``check``: validate every profile of a directory; 0 when all are valid, else 2."""
    parser = argparse.ArgumentParser(prog="python -m crawlers.profiles")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="validate every profile, one line each")
    check.add_argument("--dir", type=Path, default=PROFILES_DIR, help="default: %(default)s")
    args = parser.parse_args(argv)
    directory: Path = args.dir
    sites = profile_sites(directory)
    if not sites:
        print(f"no profiles (<site>.toml) in {shown_path(directory)}", file=sys.stderr)
        return 2
    bad = 0
    for site in sites:
        try:
            SiteProfile.load(site, directory)
        except ProfileError as exc:
            bad += 1
            print(exc)
        else:
            print(f"{shown_path(directory / f'{site}.toml')}: ok")
    return 2 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
