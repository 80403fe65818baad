"""Turn a job's document (``core.jobs_index.job_document``) into what people read:
the Prefect artifact (markdown + table) and the Slack summary's template context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def summary_context(
    document: Mapping[str, Any],
    *,
    chunks: int,
    new_items: Sequence[str] = (),
    run_url: str | None = None,
) -> dict[str, Any]:
    """The job_summary template's variables, all taken from the job document."""
    return {
        "site": document["site"],
        "status": document["status"],
        "job_id": document["job_id"],
        "items": document["items_scraped"],
        "new": document["items_new"],
        "changed": document["items_changed"],
        "unchanged": document["items_unchanged"],
        "incomplete": document.get("items_incomplete", 0),
        "chunks": chunks,
        "removed": document.get("items_removed", 0),
        "restored": document.get("items_restored", 0),
        "removals_skipped": removals_skipped(document),
        "block_rate": document["block_rate"] or 0.0,
        "blocks": document["blocks"],
        "responses": document["responses"],
        "errors": document["errors"],
        "duration": duration_text(document["duration_seconds"]),
        "new_items": list(new_items)[:10],
        "run_url": run_url,
    }


def removals_skipped(document: Mapping[str, Any]) -> str | None:
    """Why the job counted no misses toward removals (``core.removals``), if it did not."""
    reason = (document.get("extra") or {}).get("removals_skipped")
    return str(reason) if reason else None


def removed_text(document: Mapping[str, Any]) -> int | str:
    """The "removed" figure, with the reason when the job could not count misses."""
    removed = int(document.get("items_removed", 0))
    reason = removals_skipped(document)
    return f"{removed} (misses not counted: {reason})" if reason else removed


def table_rows(document: Mapping[str, Any], *, chunks: int) -> list[dict[str, Any]]:
    rate = document["block_rate"]
    rows = [
        ("status", document["status"]),
        ("items scraped", document["items_scraped"]),
        ("new", document["items_new"]),
        ("changed", document["items_changed"]),
        ("unchanged", document["items_unchanged"]),
        ("invalid (dropped)", document["items_invalid"]),
        ("stored", document["items_stored"]),
        ("incomplete (stored, parts missing)", document.get("items_incomplete", 0)),
        ("chunks indexed", chunks),
        ("removed", removed_text(document)),
        ("restored", document.get("items_restored", 0)),
        ("requests", document["requests"]),
        ("responses", document["responses"]),
        ("blocked", document["blocks"]),
        ("block rate", "n/a" if rate is None else f"{rate:.2%}"),
        ("errors", document["errors"]),
        ("duration", duration_text(document["duration_seconds"])),
    ]
    return [{"metric": name, "value": value} for name, value in rows]


def markdown(document: Mapping[str, Any], *, chunks: int) -> str:
    lines = [
        f"# scrape-{document['site']}: job `{document['job_id']}`",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [
        f"| {row['metric']} | {row['value']} |" for row in table_rows(document, chunks=chunks)
    ]
    lines += [
        "",
        f"Items index: `items-{document['site']}` · chunks index: `chunks-{document['site']}` · "
        f"jobs index: `jobs` (document `{document['site']}:{document['job_id']}`)",
    ]
    return "\n".join(lines)
