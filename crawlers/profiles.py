"""Site profiles: what differs between sites, declared as data in ``profiles/<site>.toml``.

A profile says where a crawl starts, how politely it fetches, whether pages need a
browser or proxies, which item type it yields, how long its steps may take, and when
its ``scrape-<site>`` deployment runs (``schedule``: cron, UTC; absent = manual only) with
which ``description``. The spider turns it into Scrapy settings
(``SiteSpider.update_settings``); the flows read the same file for timeouts, schedule and
description. Adding a site never edits this module.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cronsim import CronSim, CronSimError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"

RenderMode = Literal["never", "always", "per_request"]


class ProfileError(ValueError):
    """A profile file is missing or has invalid values."""


@dataclass(frozen=True)
class Politeness:
    obey_robots: bool = True
    download_delay: float = 0.0
    concurrency_per_domain: int = 16
    autothrottle: bool = True
    autothrottle_target: float = 8.0


@dataclass(frozen=True)
class Timeouts:
    """Seconds. The producer may take up to 2 h for bootstrap-heavy sites."""

    producer: int = 30 * 60
    drain: int = 2 * 3600
    download: int = 30

    def __post_init__(self) -> None:
        if not 0 < self.producer <= 2 * 3600:
            raise ProfileError(f"timeouts.producer must be in (0, 7200] s, got {self.producer}")


@dataclass(frozen=True)
class SiteProfile:
    site: str
    item_type: str
    base_url: str
    start_paths: tuple[str, ...] = ("/",)
    sitemaps: tuple[str, ...] = ()
    render: RenderMode = "never"
    needs_proxies: bool = False
    needs_session: bool = False
    # The scrape-<site> deployment: a 5-field cron in UTC (None: manual runs only) and the
    # text Prefect shows for it.
    schedule: str | None = None
    description: str | None = None
    politeness: Politeness = field(default_factory=Politeness)
    timeouts: Timeouts = field(default_factory=Timeouts)
    settings: dict[str, Any] = field(default_factory=dict)
    # The structure gate's [fingerprint] table: threshold, per page type sample paths and
    # selectors. Kept raw here; validated by fingerprints.baseline.FingerprintConfig.
    fingerprint: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, site: str, directory: Path = PROFILES_DIR) -> SiteProfile:
        path = directory / f"{site}.toml"
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError as exc:
            raise ProfileError(f"no profile for site {site!r}: expected {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ProfileError(f"{path}: {exc}") from exc
        return cls.from_dict(site, raw, source=str(path))

    @classmethod
    def from_dict(cls, site: str, raw: dict[str, Any], *, source: str = "<dict>") -> SiteProfile:
        raw = dict(raw)
        declared = raw.pop("site", site)
        if declared != site:
            raise ProfileError(f"{source}: declares site {declared!r}, expected {site!r}")
        try:
            politeness = Politeness(**raw.pop("politeness", {}))
            timeouts = Timeouts(**raw.pop("timeouts", {}))
            profile = cls(
                site=site,
                politeness=politeness,
                timeouts=timeouts,
                start_paths=tuple(raw.pop("start_paths", ("/",))),
                sitemaps=tuple(raw.pop("sitemaps", ())),
                **raw,
            )
        except TypeError as exc:
            raise ProfileError(f"{source}: {exc}") from exc
        if profile.render not in ("never", "always", "per_request"):
            raise ProfileError(f"{source}: render must be never|always|per_request")
        if profile.schedule is not None:
            _check_cron(profile.schedule, source)
        if profile.description is not None and not isinstance(profile.description, str):
            raise ProfileError(f"{source}: description must be a string")
        return profile

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
        }
        settings.update(self.settings)
        return settings


def profile_sites(directory: Path = PROFILES_DIR) -> list[str]:
    """Every site with a profile, sorted."""
    return sorted(path.stem for path in directory.glob("*.toml"))


def load_profiles(directory: Path = PROFILES_DIR) -> list[SiteProfile]:
    """Every profile, sorted by site (one bad file fails the lot, naming that file)."""
    return [SiteProfile.load(site, directory) for site in profile_sites(directory)]


def site_schedules(directory: Path = PROFILES_DIR) -> dict[str, str | None]:
    """Site -> its scrape schedule (cron, UTC; None = manual only)."""
    return {profile.site: profile.schedule for profile in load_profiles(directory)}


def _check_cron(expression: object, source: str) -> None:
    """A standard 5-field cron (minute hour day month weekday), parsed by cronsim. Seconds
    fields and ``@daily``-style nicknames are refused: the health check reads a site's
    freshness window from the weekday field."""
    problem = None
    if not isinstance(expression, str):
        problem = "must be a string"
    elif len(expression.split()) != 5:
        problem = "needs 5 fields (minute hour day month weekday)"
    else:
        try:
            CronSim(expression, dt.datetime(2000, 1, 1))
        except CronSimError as exc:
            problem = str(exc).lower()
    if problem is not None:
        raise ProfileError(f"{source}: schedule {expression!r} is not a valid cron: {problem}")
