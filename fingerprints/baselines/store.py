"""Per-site baselines as reviewable files, and the fingerprint section of site profiles.

Reads and writes ``fingerprints/sites/<site>/``: ``fixtures/<page_type>/*.html``,
``baseline.json`` (pretty-printed, sorted, one token per line, with the fixtures' SHA-256
and the fingerprint version, so a review diff shows what changed) and the optional
``coverage.json``; reads the profile's ``[fingerprint]`` table (threshold, per page type
``sample_paths``, ``selectors``, ``threshold``).

Layout and profile keys: docs/fingerprints.md "Files per site".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.fetch.blocks import classify
from crawlers.profile_schema import Evidence, FingerprintTable, Shown, describe
from crawlers.profiles import PROFILES_DIR, SiteProfile
from fingerprints.structure.comparison import PageTypeBaseline, SelectorBaseline
from fingerprints.structure.fingerprint import DEFAULT_THRESHOLD, FINGERPRINT_VERSION, fingerprint

SITES_DIR = Path(__file__).resolve().parents[1] / "sites"
BASELINE_FILE = "baseline.json"
COVERAGE_FILE = "coverage.json"
FIXTURES_DIR = "fixtures"
FIXTURE_SUFFIXES = (".html", ".htm")


class BaselineError(ValueError):
    """A baseline or fixture set is missing, unreadable, stale or inconsistent."""


# -- configuration from the site profile ------------------------------------------------------


@dataclass(frozen=True)
class PageTypeConfig:
    sample_paths: tuple[str, ...] = ()
    selectors: Mapping[str, str] = field(default_factory=dict)
    threshold: float | None = None
    callback: str | None = None  # the spider method that parses this page type
    # Field -> where a page shows it / what says it lacks it (fingerprints.extraction.evidence).
    shows: Mapping[str, tuple[Shown, ...]] = field(default_factory=dict)
    absent: Mapping[str, tuple[Evidence, ...]] = field(default_factory=dict)
    empty: tuple[Evidence, ...] = ()  # evidence a page has no record at all


@dataclass(frozen=True)
class FingerprintConfig:
    """The ``[fingerprint]`` table of a site profile (empty when there is none)."""

    threshold: float | None = None
    page_types: Mapping[str, PageTypeConfig] = field(default_factory=dict)
    declared: bool = False  # False: no profile or no [fingerprint] table
    strict: bool = False  # any drift fails the gate (docs/fingerprints.md)
    # Every page type's callback when ``subset`` left some out (None: ``page_types``').
    site_callbacks: Mapping[str, str | None] | None = None
    # Where the profile declares its page types: ``[pages.<type>]`` for a profile-only
    # site (which refuses ``[fingerprint.page_types]``), so hints name a key that works.
    page_types_table: str = "fingerprint.page_types"
    # The fields the site is scraped for (their fall stops the run), the share of its
    # baseline rate a field must keep (None: fingerprints.extraction.fields.DEFAULT_FLOOR) and the
    # item fields its spider never fills (fingerprints/extraction/fields.py, docs/fingerprints.md).
    required: tuple[str, ...] = ()
    floor: float | None = None
    not_read: tuple[str, ...] = ()

    @classmethod
    def from_table(
        cls, table: FingerprintTable, *, page_types_table: str | None = None
    ) -> FingerprintConfig:
        """The gate's view of a validated ``[fingerprint]`` table (the profile's schema
        checked every key when it loaded: nothing is checked again here)."""
        page_types = {
            name: PageTypeConfig(
                tuple(pt.sample_paths),
                dict(pt.selectors),
                pt.threshold,
                pt.callback,
                dict(pt.shows),
                dict(pt.absent),
                tuple(pt.empty),
            )
            for name, pt in table.page_types.items()
        }
        return cls(
            threshold=table.threshold,
            page_types=page_types,
            declared=True,
            strict=table.strict,
            page_types_table=page_types_table or "fingerprint.page_types",
            required=tuple(table.required),
            floor=table.floor,
            not_read=tuple(table.not_read),
        )

    @classmethod
    def from_mapping(
        cls, raw: Mapping[str, Any], *, source: str = "<fingerprint>"
    ) -> FingerprintConfig:
        """A ``[fingerprint]`` table given as a mapping, validated by the profile's own
        schema; a bad one raises ``BaselineError`` with the profile's one-line message."""
        try:
            table = FingerprintTable.model_validate(dict(raw))
        except ValidationError as exc:
            raise BaselineError(f"{source}: {describe(exc, FingerprintTable)}") from None
        return cls.from_table(table)

    @classmethod
    def for_site(cls, site: str, profiles_dir: Path | None = None) -> FingerprintConfig:
        """The site's profile section; an empty config when the site has no profile."""
        directory = profiles_dir or PROFILES_DIR
        if not (directory / f"{site}.toml").exists():
            return cls()
        profile = SiteProfile.load(site, directory)
        table = profile.gate_table
        if table is None:
            return cls()
        config = cls.from_table(table, page_types_table="pages" if profile.pages else None)
        _check_field_names(site, profile.item_type, config)
        return config

    def sample(self) -> dict[str, tuple[str, ...]]:
        return {name: pt.sample_paths for name, pt in self.page_types.items() if pt.sample_paths}

    @property
    def callbacks(self) -> dict[str, str | None]:
        """Page type -> callback, for every page type of the profile (those ``subset``
        left out included): a request to one is another page type's page."""
        if self.site_callbacks is not None:
            return dict(self.site_callbacks)
        return {name: pt.callback for name, pt in self.page_types.items()}

    @property
    def declared_callbacks(self) -> frozenset[str]:
        return frozenset(name for name in self.callbacks.values() if name)

    def subset(self, page_types: Sequence[str]) -> FingerprintConfig:
        """Only these page types (a subset check must not ask for the others' samples);
        the others' callbacks stay known (``declared_callbacks``)."""
        kept = {name: pt for name, pt in self.page_types.items() if name in page_types}
        return replace(self, page_types=kept, site_callbacks=self.callbacks)


def _check_field_names(site: str, item_type: str, config: FingerprintConfig) -> None:
    """Every field the gate's tables name is a field of the site's item type (else a
    typo would leave a required field unjudged): one line naming the key and the fix."""
    from core.items_schema import UnknownItemType
    from crawlers.items import schema_by_type  # the registry, when needed

    try:
        fields = set(schema_by_type(item_type).field_names)
    except UnknownItemType:
        return  # the profile's own check names an unknown item type
    named = [("required", name) for name in config.required]
    named += [("not_read", name) for name in config.not_read]
    for page_type, pt in config.page_types.items():
        named += [(f"page_types.{page_type}.shows", name) for name in pt.shows]
        named += [(f"page_types.{page_type}.absent", name) for name in pt.absent]
        named += [
            (f"page_types.{page_type}.absent.{name}", rule.field)
            for name, rules in pt.absent.items()
            for rule in rules
            if rule.field
        ]
    for key, name in named:
        if name not in fields:
            raise BaselineError(
                f"{site} profile: [fingerprint] {key} names {name!r}, which is no field of "
                f"item type {item_type!r} (its fields: {', '.join(sorted(fields))})"
            )


# -- the site baseline --------------------------------------------------------------------------


@dataclass(frozen=True)
class SiteBaseline:
    site: str
    threshold: float
    page_types: Mapping[str, PageTypeBaseline]
    fixtures: Mapping[str, Mapping[str, str]]  # page type -> {relative path: sha256}
    version: int = FINGERPRINT_VERSION

    def threshold_for(self, page_type: str, config: FingerprintConfig | None = None) -> float:
        """The profile's current value when it declares one, else the baseline's record."""
        if config is not None and config.declared:
            page_config = config.page_types.get(page_type)
            if page_config is not None and page_config.threshold is not None:
                return page_config.threshold
            return config.threshold or self.threshold
        baseline = self.page_types.get(page_type)
        return (baseline.threshold if baseline else None) or self.threshold

    def to_dict(self) -> dict[str, Any]:
        page_types = {}
        for name, baseline in self.page_types.items():
            page_types[name] = {
                "fixtures": dict(sorted(self.fixtures.get(name, {}).items())),
                "pages": baseline.pages,
                "threshold": baseline.threshold,
                "selectors": {k: v.to_dict() for k, v in sorted(baseline.selectors.items())},
                "skeleton": dict(sorted(baseline.skeleton.items())),
                "schema": dict(sorted(baseline.schema.items())),
                "state": dict(sorted(baseline.state.items())),
            }
        return {
            "fingerprint_version": self.version,
            "site": self.site,
            "threshold": self.threshold,
            "page_types": page_types,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<baseline>") -> SiteBaseline:
        try:
            version = int(data["fingerprint_version"])
            page_types = {}
            fixtures = {}
            for name, entry in data["page_types"].items():
                page_types[name] = PageTypeBaseline(
                    page_type=name,
                    pages=int(entry["pages"]),
                    skeleton={str(k): float(v) for k, v in entry["skeleton"].items()},
                    schema={str(k): float(v) for k, v in entry["schema"].items()},
                    state={str(k): float(v) for k, v in entry["state"].items()},
                    selectors={
                        str(k): SelectorBaseline.from_dict(v)
                        for k, v in (entry.get("selectors") or {}).items()
                    },
                    threshold=entry.get("threshold"),
                )
                fixtures[name] = dict(entry.get("fixtures") or {})
            return cls(
                site=str(data["site"]),
                threshold=float(data["threshold"]),
                page_types=page_types,
                fixtures=fixtures,
                version=version,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(f"{source}: malformed baseline ({exc!r})") from exc

    def subset(self, page_types: Sequence[str]) -> SiteBaseline:
        """Only these page types: what a check of part of a site is judged against."""
        unknown = sorted(set(page_types) - set(self.page_types))
        if unknown:
            raise BaselineError(
                f"site {self.site!r}: the baseline has no page type(s) {', '.join(unknown)} "
                f"(it has {', '.join(sorted(self.page_types)) or 'none'})"
            )
        return replace(
            self,
            page_types={k: v for k, v in self.page_types.items() if k in page_types},
            fixtures={k: v for k, v in self.fixtures.items() if k in page_types},
        )

    def stale_reasons(self, config: FingerprintConfig | None) -> list[str]:
        """Why this baseline no longer fits the code or the profile (empty: it fits)."""
        reasons = []
        if self.version != FINGERPRINT_VERSION:
            reasons.append(
                f"computed with fingerprint version {self.version}, the code is at "
                f"{FINGERPRINT_VERSION}"
            )
        for name, page_config in (config.page_types if config else {}).items():
            baseline = self.page_types.get(name)
            if baseline is None:
                reasons.append(f"the profile declares page type {name!r}, the baseline has none")
            elif dict(page_config.selectors) != baseline.selector_queries:
                reasons.append(f"the profile's selectors for {name!r} differ from the baseline's")
        return reasons


def restrict(
    baseline: SiteBaseline, config: FingerprintConfig, page_types: Sequence[str] | None
) -> tuple[SiteBaseline, FingerprintConfig]:
    """The baseline and profile section of these page types only (None: all of them).

    A check of a subset judges only the types given: the others are neither required
    in the sample nor compared. Unknown page types raise ``BaselineError``.
    """
    if not page_types:
        return baseline, config
    return baseline.subset(page_types), config.subset(page_types)


def site_dir(site: str, sites_dir: Path = SITES_DIR) -> Path:
    return sites_dir / site


def list_sites(sites_dir: Path = SITES_DIR) -> list[str]:
    """Every site directory (with fixtures or a baseline): what ``check`` covers."""
    if not sites_dir.is_dir():
        return []
    return sorted(
        path.name
        for path in sites_dir.iterdir()
        if path.is_dir() and ((path / BASELINE_FILE).exists() or (path / FIXTURES_DIR).is_dir())
    )


def fixture_pages(site: str, sites_dir: Path = SITES_DIR) -> dict[str, list[Path]]:
    """Fixture files by page type (sorted, so the baseline does not depend on the FS)."""
    root = site_dir(site, sites_dir) / FIXTURES_DIR
    if not root.is_dir():
        return {}
    pages: dict[str, list[Path]] = {}
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(p for p in directory.iterdir() if p.suffix.lower() in FIXTURE_SUFFIXES)
        if files:
            pages[directory.name] = files
    return pages


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_baseline(site: str, sites_dir: Path = SITES_DIR) -> SiteBaseline:
    path = site_dir(site, sites_dir) / BASELINE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BaselineError(
            f"no baseline for site {site!r}: expected {path} "
            f"(python -m fingerprints baseline {site})"
        ) from exc
    except ValueError as exc:
        raise BaselineError(f"{path}: not JSON ({exc})") from exc
    baseline = SiteBaseline.from_dict(data, source=str(path))
    if baseline.site != site:
        raise BaselineError(f"{path}: declares site {baseline.site!r}, expected {site!r}")
    return baseline


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def save_baseline(baseline: SiteBaseline, sites_dir: Path = SITES_DIR) -> Path:
    path = site_dir(baseline.site, sites_dir) / BASELINE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(dumps(baseline.to_dict()), encoding="utf-8")
    tmp.replace(path)  # atomic: a reader never sees half a baseline
    return path


def compute_baseline(
    site: str,
    *,
    sites_dir: Path = SITES_DIR,
    config: FingerprintConfig | None = None,
    threshold: float | None = None,
    profiles_dir: Path | None = None,
) -> SiteBaseline:
    """The baseline of a site's fixture pages (not saved). Refuses block pages."""
    config = config if config is not None else FingerprintConfig.for_site(site, profiles_dir)
    pages = fixture_pages(site, sites_dir)
    if not pages:
        # The one recipe (docs/sites.md): the live site's sample pages, or the scaffold.
        raise BaselineError(
            f"site {site!r} has no fixture pages under "
            f"{site_dir(site, sites_dir) / FIXTURES_DIR}/<page_type>/*.html: fetch them with "
            f"`python -m fingerprints baseline {site} --from-url <base_url>` "
            f"(or onboard the site with `python -m crawlers.scaffold {site} <url>`)"
        )
    missing = sorted(set(config.page_types) - set(pages))
    if missing:
        raise BaselineError(
            f"site {site!r}: no fixtures for page types {missing}: give each its "
            f"sample_paths in the profile, then fetch them with `python -m fingerprints "
            f"baseline {site} --from-url <base_url>`"
        )
    root = site_dir(site, sites_dir)
    page_types: dict[str, PageTypeBaseline] = {}
    fixtures: dict[str, dict[str, str]] = {}
    for page_type, files in pages.items():
        page_config = config.page_types.get(page_type, PageTypeConfig())
        prints = []
        for path in files:
            body = path.read_bytes()
            verdict = classify(200, {"Content-Type": "text/html"}, body)
            if not verdict.ok:
                raise BaselineError(f"{path} is not a real page ({verdict}); remove it")
            prints.append(fingerprint(body, page_config.selectors))
        page_types[page_type] = PageTypeBaseline.build(
            page_type, prints, page_config.selectors, threshold=page_config.threshold
        )
        fixtures[page_type] = {p.relative_to(root).as_posix(): sha256(p) for p in files}
    site_threshold = threshold or config.threshold or DEFAULT_THRESHOLD
    return SiteBaseline(site, site_threshold, page_types, fixtures)
