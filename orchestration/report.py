"""Turn a job's document (``core.jobs.index.job_document``) into what people read:
the Prefect artifact (markdown + table) and the Slack summary's template context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from core.fetch.refusal import top_reasons
from core.recrawl.history import notable_text
from core.recrawl.removals import failed_requests
from orchestration.outcome import Outcome, judge, numbers

# The dashboard docker/kibana/generate.py creates ("Scraping platform").
KIBANA_DASHBOARD_ID = "platform-overview"


# The block kinds as the report names them (core.fetch.blocks kinds; "throttled" is a rate limit).
BLOCK_KIND_NAMES = {
    "blocked": "blocked",
    "challenge": "challenge",
    "captcha": "CAPTCHA",
    "throttled": "rate",
}


def blocks_by_kind_text(document: Mapping[str, Any]) -> str:
    """``blocked 8, challenge 12, CAPTCHA 1 (cloudflare block 8, ...)``: the job's blocks
    by kind, then the rules that matched most, which tell whose refusal it was (a
    header check's page, a TLS refusal's, ...); ``none`` without any."""
    parts = [
        f"{name} {document.get(f'blocks_{kind}') or 0}"
        for kind, name in BLOCK_KIND_NAMES.items()
        if document.get(f"blocks_{kind}")
    ]
    if not parts:
        return "none"
    counters = {
        name: int(value)
        for name, value in (document.get("counters") or {}).items()
        if name.startswith("blocks/reason/") and str(value).isdigit()
    }
    reasons = top_reasons(counters)
    return ", ".join(parts) + (f" ({reasons})" if reasons else "")


def access_text(document: Mapping[str, Any]) -> str:
    """Getting the pages, in one line: challenges passed in the browser, sessions created
    and retired, pages rendered per 1,000 pages."""
    per_1000 = document.get("renders_per_1000_pages")
    renders = "n/a" if per_1000 is None else f"{per_1000:g}"
    return (
        f"{document.get('challenges_passed') or 0} challenges passed, "
        f"{document.get('sessions_created') or 0} sessions created, "
        f"{document.get('sessions_retired') or 0} retired; "
        f"{document.get('pages_rendered') or 0} pages rendered ({renders} per 1,000 pages)"
    )


# Values a page carried that the crawl bounded (crawlers.limits.bounded, crawlers.limits.budget).
BOUNDED_COUNTERS = {
    "links/capped": "links not followed (per-page cap)",
    "items/truncated_fields": "items with fields cut",
    "json/too_deep": "JSON too deep",
    "decode/invalid_utf8": "invalid UTF-8",
}


def bounded_text(document: Mapping[str, Any]) -> str:
    """``links not followed (per-page cap) 99000, JSON too deep 1``; ``none``."""
    counters = document.get("counters") or {}
    parts = [
        f"{name} {counters[key]}"
        for key, name in BOUNDED_COUNTERS.items()
        if str(counters.get(key, "0")) not in ("0", "")
    ]
    return ", ".join(parts) or "none"


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def notable_changes(document: Mapping[str, Any], changes: Mapping[str, int] | None) -> str:
    """The job's notable changes (``core.recrawl.history.job_change_counts``) and its removed
    items (``items_removed``, from core.recrawl.removals): "14 price drops, 5 removed"."""
    removed = document.get("items_removed")
    return notable_text(changes or {}, removed=removed if isinstance(removed, int) else None)


def block_rate_text(document: Mapping[str, Any]) -> str:
    """``1.25% (31 of 2480 pages fetched)``: the job's block rate with what it is counted
    over (the ledger's pages, else the responses when a job has no page figure). The
    report's table and the Slack summary both show this line."""
    rate, blocks = document.get("block_rate"), int(document.get("blocks") or 0)
    pages = int(document.get("pages") or 0)
    over = f"{pages} pages fetched" if pages else f"{document.get('responses') or 0} responses"
    if rate is None:
        return "n/a (nothing fetched)"
    return f"{rate:.2%} ({blocks} of {over})"


def summary_context(
    document: Mapping[str, Any],
    *,
    chunks: int,
    outcome: Outcome | None = None,
    new_items: Sequence[str] = (),
    run_url: str | None = None,
    changes: Mapping[str, int] | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The job_summary template's variables, taken from the job document, the job's
    change counts, its field coverage (``CoverageReport.to_dict()``) and the run's
    ``outcome`` (``orchestration.outcome.judge``; judged on the document when not given)."""
    outcome = outcome or judge(document, coverage=coverage)
    refusal = document.get("refusal")
    return {
        "state": outcome.state,
        "reason": outcome.reason,
        "losses": list(outcome.losses),
        "warnings": list(outcome.warnings),
        "site": document["site"],
        "status": document["status"],
        "job_id": document["job_id"],
        "items": document["items_scraped"],
        "stored": document["items_stored"],
        "new": document["items_new"],
        "changed": document["items_changed"],
        "unchanged": document["items_unchanged"],
        "incomplete": document.get("items_incomplete", 0),
        "chunks": chunks,
        "removed": document.get("items_removed", 0),
        "restored": document.get("items_restored", 0),
        "removals_skipped": removals_skipped(document),
        "block_rate": block_rate_text(document),
        "blocks": document["blocks"],
        "blocks_by_kind": blocks_by_kind_text(document),
        "access": access_text(document),
        # Said once: a run that stored nothing because it was refused leads with it.
        "refusal": refusal if refusal != outcome.reason else None,
        "budgets": document.get("budgets"),
        "errors": document["errors"],
        "requests_failed": outcome.counts.get("requests_failed", 0),
        # Older job documents have no such figure.
        "error_responses": document.get("error_responses", 0),
        "duration": duration_text(document["duration_seconds"]),
        "new_items": list(new_items)[:10],
        "run_url": run_url,
        "notable": notable_changes(document, changes),
        "coverage": coverage_text(coverage),
        "coverage_dropped": bool(coverage and coverage.get("drops")),
    }


def drop_text(drop: Mapping[str, Any]) -> str:
    """``price: 40.0% of items, baseline 100.0% (tolerance 10.0%)``; ``vanished`` at 0."""
    actual, expected = float(drop["actual"]), float(drop["expected"])
    filled = f"{actual:.1%} of items" if actual > 0 else "no item (vanished)"
    tolerance = float(drop["tolerance"])
    return f"{drop['field']}: {filled}, baseline {expected:.1%} (tolerance {tolerance:.1%})"


def coverage_text(coverage: Mapping[str, Any] | None) -> str | None:
    """The report's one coverage line, from ``CoverageReport.to_dict()``: the verdict
    against the site's coverage baseline, or the measured rates of a site without one."""
    if coverage is None:
        return None
    items, rates = int(coverage["items"]), coverage.get("rates") or {}
    measured = ", ".join(f"{name} {rate:.0%}" for name, rate in rates.items())
    if coverage.get("drops"):
        drops = [drop_text(drop) for drop in coverage["drops"]]
        return f"{len(drops)} field(s) dropped ({items} items): " + "; ".join(drops)
    if coverage.get("problems"):
        return "not judged: " + "; ".join(coverage["problems"])
    if coverage.get("expected") is None:
        if not items:
            return "no baseline (coverage.json); the job stored no items"
        return f"no baseline (coverage.json); measured on {items} items: {measured}"
    text = f"ok: {len(coverage['expected'])} field(s) within tolerance ({items} items)"
    new = coverage.get("new_fields") or []
    return f"{text}; filled, not in the baseline: {', '.join(new)}" if new else text


def coverage_markdown(coverage: Mapping[str, Any]) -> list[str]:
    """The coverage section of the run report: the line, then every field's rate."""
    expected = coverage.get("expected") or {}
    dropped = {drop["field"] for drop in coverage.get("drops") or []}
    lines = ["## Field coverage", "", str(coverage_text(coverage)), ""]
    lines += ["| field | fill rate | baseline | |", "|---|---|---|---|"]
    for name in sorted({*coverage.get("rates", {}), *expected}):
        rate = (coverage.get("rates") or {}).get(name, 0.0)
        base = f"{expected[name]:.1%}" if name in expected else "-"
        flag = "**dropped**" if name in dropped else ""
        lines.append(f"| {name} | {rate:.1%} | {base} | {flag} |")
    return lines


def removals_skipped(document: Mapping[str, Any]) -> str | None:
    """Why the job counted no misses toward removals (``core.recrawl.removals``), if it did not."""
    reason = (document.get("extra") or {}).get("removals_skipped")
    return str(reason) if reason else None


def removed_text(document: Mapping[str, Any]) -> int | str:
    """The "removed" figure, with the reason when the job could not count misses."""
    removed = int(document.get("items_removed", 0))
    reason = removals_skipped(document)
    return f"{removed} (misses not counted: {reason})" if reason else removed


def table_rows(
    document: Mapping[str, Any],
    *,
    chunks: int,
    changes: Mapping[str, int] | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The report's figures, each labelled with what it counts (a label shown twice,
    in Slack or the live table, is the same figure)."""
    rows = [
        ("status", document["status"]),
        ("items scraped", document["items_scraped"]),
        ("new", document["items_new"]),
        ("changed", document["items_changed"]),
        ("unchanged", document["items_unchanged"]),
        ("invalid (dropped)", document["items_invalid"]),
        ("stored", document["items_stored"]),
        ("incomplete (stored, parts missing)", document.get("items_incomplete", 0)),
        ("notable changes", notable_changes(document, changes) or "none"),
        ("chunks indexed", chunks),
        ("removed", removed_text(document)),
        ("restored", document.get("items_restored", 0)),
        ("requests", document["requests"]),
        ("responses (every HTTP answer: retries, robots.txt)", document["responses"]),
        ("pages fetched", document.get("pages", document["responses"])),
        ("blocked", document["blocks"]),
        ("blocks by kind", blocks_by_kind_text(document)),
        ("block rate", block_rate_text(document)),
        ("pages refused (only blocks)", document.get("pages_refused", 0)),
        ("requests failed for good", failed_requests(numbers(document))),
        ("access", access_text(document)),
        ("budgets reached", document.get("budgets") or "none"),
        ("values bounded", bounded_text(document)),
        ("errors (ERROR log lines)", document["errors"]),
        ("pages unparsed", document.get("pages_unparsed", 0)),
        ("error responses (HTTP 4xx/5xx)", document.get("error_responses", 0)),
        ("duration", duration_text(document["duration_seconds"])),
    ]
    if coverage is not None:
        rows.append(("field coverage", coverage_text(coverage)))
    if document.get("refusal"):
        rows.insert(1, ("refused", document["refusal"]))
    return [{"metric": name, "value": value} for name, value in rows]


def kibana_dashboard_url(kibana_url: str, job_id: str, *, days: int = 30) -> str:
    """Kibana's dashboard filtered to the job (a KQL query on ``job_id``), in the URL
    state format of Kibana 8 (rison in ``_g``/``_a``)."""
    query = _rison_string(f'job_id:"{job_id}"')
    state_a = f"(query:(language:kuery,query:{query}))"
    state_g = f"(time:(from:now-{days}d,to:now))"
    return (
        f"{kibana_url.rstrip('/')}/app/dashboards#/view/{KIBANA_DASHBOARD_ID}"
        f"?_g={quote(state_g, safe='():,-')}&_a={quote(state_a, safe='():,-')}"
    )


def _rison_string(text: str) -> str:
    # Rison quotes with ' and escapes ' and ! with !.
    return "'" + text.replace("!", "!!").replace("'", "!'") + "'"


def links_markdown(site: str, job_id: str, kibana_url: str | None) -> list[str]:
    """Where the run's data lives: the indices, and Kibana when it is configured."""
    lines = [
        f"Items index: `items-{site}` · chunks index: `chunks-{site}` · "
        f"jobs index: `jobs` (document `{site}:{job_id}`) · changes index: `changes-{site}`",
    ]
    if kibana_url:
        lines += [
            "",
            f"[Kibana dashboard filtered to job `{job_id}`]"
            f"({kibana_dashboard_url(kibana_url, job_id)})",
        ]
    return lines


def failure_markdown(flow: str, step: str, error: str, log_lines: Sequence[str]) -> str:
    """The failed run's story: which step failed, its error and its last log lines."""
    lines = [
        f"# {flow}: failed in step `{step}`",
        "",
        "```",
        error,
        "```",
        "",
        f"Last log lines of `{step}`:",
        "",
        "```",
        *(log_lines or ["(none recorded)"]),
        "```",
    ]
    return "\n".join(lines)


def outcome_markdown(outcome: Outcome) -> list[str]:
    """The report's first lines: the run's state and what it lost or warns about."""
    if outcome.reason:
        return [f"**{outcome.state}:** {outcome.reason}", ""]
    lines = [f"**{outcome.state}**" + (":" if outcome.losses or outcome.warnings else ".")]
    lines += [f"- :x: {line}" for line in outcome.losses]
    lines += [f"- :warning: {line}" for line in outcome.warnings]
    return [*lines, ""]


def markdown(
    document: Mapping[str, Any],
    *,
    chunks: int,
    outcome: Outcome | None = None,
    changes: Mapping[str, int] | None = None,
    kibana_url: str | None = None,
    coverage: Mapping[str, Any] | None = None,
) -> str:
    outcome = outcome or judge(document, coverage=coverage)
    lines = [f"# scrape-{document['site']}: job `{document['job_id']}`", ""]
    lines += outcome_markdown(outcome)
    lines += [
        "| metric | value |",
        "|---|---|",
    ]
    lines += [
        f"| {row['metric']} | {row['value']} |"
        for row in table_rows(document, chunks=chunks, changes=changes, coverage=coverage)
    ]
    if coverage is not None:
        lines += ["", *coverage_markdown(coverage)]
    lines += ["", *links_markdown(document["site"], document["job_id"], kibana_url)]
    return "\n".join(lines)
