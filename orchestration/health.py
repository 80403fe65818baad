"""The daily health check's logic: per-site job history from the jobs index, search, and
the alerts Slack did not take.

A site is unhealthy when its last successful scrape is older than its schedule allows,
its block rate is high or rising, or its last job failed; the platform is unhealthy
when Elasticsearch or the search API is, or when alerts were not delivered since the
last check (``orchestration.alerts`` records them; ``acknowledge`` clears those a check
reported, once its report is out).
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from core.config import get_settings
from core.es_access import access_problem
from core.jobs.index import JOBS_ALIAS
from core.keys import REDIS_ERRORS
from core.redis_client import Client
from core.store import get_items
from crawlers.profiles import site_schedules
from orchestration.alerts import failed_deliveries, forget_failed_deliveries, run_logger

HIGH_BLOCK_RATE = 0.2
RISING_FACTOR = 2.0  # latest block rate vs the median of the earlier ones
HISTORY = 5


@dataclass
class SiteHealth:
    site: str
    max_age: dt.timedelta | None  # None: manual-only site, no freshness expectation
    last_success: dt.datetime | None = None
    last_status: str | None = None
    items: int = 0
    block_rates: list[float] = field(default_factory=list)  # newest first

    def problems(self, now: dt.datetime) -> list[str]:
        found = []
        if self.max_age is not None:
            if self.last_success is None:
                found.append(f"{self.site}: no successful scrape on record")
            elif now - self.last_success > self.max_age:
                age = (now - self.last_success).total_seconds() / 3600
                found.append(f"{self.site}: last successful scrape {age:.0f}h ago")
        if self.last_status not in (None, "completed"):
            found.append(f"{self.site}: last job ended {self.last_status}")
        if self.block_rates:
            latest, earlier = self.block_rates[0], sorted(self.block_rates[1:])
            if latest > HIGH_BLOCK_RATE:
                found.append(f"{self.site}: block rate {latest:.1%}")
            elif earlier and latest > RISING_FACTOR * max(earlier[len(earlier) // 2], 0.01):
                found.append(f"{self.site}: block rate rising to {latest:.1%}")
        return found

    def row(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "last_success": self.last_success.isoformat() if self.last_success else None,
            "items": self.items,
            "block_rate": f"{self.block_rates[0]:.1%}" if self.block_rates else "n/a",
        }


@dataclass
class HealthReport:
    sites: list[SiteHealth]
    problems: list[str]
    # Alert deliveries that failed since the last check (orchestration.alerts), oldest first.
    alerts_failed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def template_context(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "problems": self.problems,
            "sites": [site.row() for site in self.sites],
            "alerts_failed": self.alerts_failed,
        }

    def markdown(self) -> str:
        lines = ["| site | last success | items | block rate |", "|---|---|---|---|"]
        for site in self.sites:
            row = site.row()
            lines.append(
                f"| {row['site']} | {row['last_success'] or 'never'} | {row['items']} "
                f"| {row['block_rate']} |"
            )
        lines += ["", *(f"- {problem}" for problem in self.problems or ["all healthy"])]
        if self.alerts_failed:
            lines += [
                "",
                "Alerts not delivered since the last check:",
                "",
                "| at | alert | site | job | error |",
                "|---|---|---|---|---|",
            ]
            lines += [
                f"| {entry.get('at')} | {entry.get('template')} | {entry.get('site') or '-'} "
                f"| {entry.get('job_id') or '-'} | {entry.get('error')} |"
                for entry in self.alerts_failed
            ]
        return "\n".join(lines)


def max_age_for(cron: str | None) -> dt.timedelta | None:
    """How old a site's last success may be, from its schedule (a grace of 2 h)."""
    if cron is None:
        return None
    weekly = cron.split()[4] != "*"
    return dt.timedelta(days=7 if weekly else 1, hours=2)


def site_history(es: Elasticsearch, site: str, *, max_age: dt.timedelta | None) -> SiteHealth:
    health = SiteHealth(site=site, max_age=max_age)
    try:
        hits = es.search(
            index=JOBS_ALIAS,
            query={"term": {"site": site}},
            sort=[{"finished_at": {"order": "desc", "unmapped_type": "date"}}],
            size=HISTORY,
        )["hits"]["hits"]
    except NotFoundError:
        return health
    for hit in hits:
        doc = hit["_source"]
        health.last_status = health.last_status or doc.get("status")
        if doc.get("block_rate") is not None:
            health.block_rates.append(float(doc["block_rate"]))
        if doc.get("status") == "completed" and health.last_success is None:
            health.last_success = dt.datetime.fromisoformat(doc["finished_at"])
            health.items = int(doc.get("items_scraped") or 0)
    return health


def search_api_problems(url: str | None) -> list[str]:
    if not url:
        return []
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=10) as answer:  # noqa: S310
            body = json.loads(answer.read())
    except Exception as exc:
        return [f"search API unreachable ({type(exc).__name__})"]
    if body.get("status") not in ("ok", "green", "healthy"):
        return [f"search API unhealthy: {body.get('status')}"]
    return []


def delivery_problems(failed: Sequence[Mapping[str, Any]]) -> list[str]:
    """One problem line for the alerts not delivered since the last check (if any)."""
    if not failed:
        return []
    kinds = Counter(str(entry.get("template")) for entry in failed)
    last = failed[-1]
    return [
        f"{len(failed)} Slack alert(s) not delivered since the last check "
        f"({', '.join(f'{name} x{n}' for name, n in sorted(kinds.items()))}); last: "
        f"{last.get('template')} at {last.get('at')} ({last.get('error')})"
    ]


def acknowledge(server: Client, report: HealthReport) -> None:
    """Clear the failed deliveries ``report`` showed, once it is out (a check that dies
    before shows them again); best effort."""
    try:
        forget_failed_deliveries(server, len(report.alerts_failed))
    except REDIS_ERRORS as exc:
        run_logger().warning(
            "failed alert deliveries not cleared (%s): the next check shows them again",
            type(exc).__name__,
        )


def check(
    es: Elasticsearch,
    *,
    server: Client | None = None,
    schedules: Mapping[str, str | None] | None = None,
    search_api_url: str | None = None,
    now: dt.datetime | None = None,
) -> HealthReport:
    """The report; ``server``: the Redis holding the failed alert deliveries (None: not
    checked)."""
    if schedules is None:
        schedules = site_schedules()  # the same profiles the deployments are built from
    now = now or dt.datetime.now(dt.UTC)
    problems: list[str] = []
    # Refused credentials are named as such (a ping reads a 401 as "unreachable").
    es_problem = access_problem(es)
    if es_problem is not None:
        problems.append(es_problem)
    sites: list[SiteHealth] = []
    if not problems:
        for site, cron in schedules.items():
            history = site_history(es, site, max_age=max_age_for(cron))
            sites.append(history)
            problems += history.problems(now)
    problems += search_api_problems(search_api_url or get_settings().search_api_url)
    failed: list[dict[str, Any]] = []
    if server is not None:
        try:
            failed = failed_deliveries(server)
        except REDIS_ERRORS as exc:
            problems.append(
                f"alert deliveries not checked: Redis unreachable ({type(exc).__name__})"
            )
    problems += delivery_problems(failed)
    return HealthReport(sites=sites, problems=problems, alerts_failed=failed)


def item_names(es: Elasticsearch, site: str, keys: Sequence[str] | Iterable[str]) -> list[str]:
    """Display names of items by key (for the "new products" part of the summary)."""
    found = get_items(es, keys, site=site)
    return [str(doc.get("name") or doc.get("title") or key) for key, doc in found.items()]
