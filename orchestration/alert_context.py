"""The structure alerts' template variables, from a gate report (``GateResult.to_dict()``).

Pure functions: the flows call them and send the result; the tests render the templates
with what they return for real gate reports. Wording stays in the templates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

# The flows whose structure alerts differ in title and advice.
SCRAPE = "scrape"
CHECK_SITE_VERSIONS = "check-site-versions"


def page_type_summary(detail: Mapping[str, Any]) -> str:
    """One page type's line: its similarity against the threshold when its pages were
    compared, else what became of its pages ("2 fetch failed: DNS ...")."""
    threshold = detail.get("threshold")
    similarity = detail.get("similarity")
    changed = detail.get("changed_features") or []
    if similarity is not None:
        text = f"similarity {similarity} (threshold {threshold})"
        return f"{text}; changed: {', '.join(changed)}" if changed else text
    pages = detail.get("pages") or []
    outcomes = Counter(str(page.get("outcome", "unknown")) for page in pages)
    if not outcomes:
        return "not compared: no sample page"
    reasons = [str(page.get("reason") or "") for page in pages if page.get("outcome") != "ok"]
    counts = ", ".join(f"{n} {outcome.replace('_', ' ')}" for outcome, n in outcomes.items())
    first = next((reason for reason in reasons if reason), "")
    return f"not compared: {counts}" + (f" ({first[:200]})" if first else "")


def failed_page_types(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    page_types = []
    for name, detail in (result.get("page_types") or {}).items():
        if detail.get("passed", False):
            continue
        missing = sorted(
            {
                selector
                for page in detail.get("pages", [])
                for selector in (page.get("comparison") or {}).get("missing_required", [])
            }
        )
        page_types.append({"name": name, "summary": page_type_summary(detail), "missing": missing})
    return page_types


def site_url(result: Mapping[str, Any], fallback: str | None = None) -> str | None:
    """The site's URL as the gate sampled it (scheme and host of a sample page), else
    ``fallback``: what ``python -m fingerprints baseline --from-url`` fetches from."""
    for detail in (result.get("page_types") or {}).values():
        for page in detail.get("pages") or []:
            parts = urlsplit(str(page.get("url") or ""))
            if parts.scheme and parts.netloc:
                return f"{parts.scheme}://{parts.netloc}"
    return fallback


def structure_change_context(
    site: str,
    result: Mapping[str, Any],
    *,
    flow: str = SCRAPE,
    waiting_until: str | None = None,
    run_url: str | None = None,
    repairs: str = "",
    base_url: str | None = None,
) -> dict[str, Any]:
    """``structure_change``: the gate stopped ``flow`` (``waiting_until``: the run is
    suspended for an operator's accept/reject until then). ``base_url``: the site's URL
    when no sample page names it (the fixes' ``--from-url``)."""
    status = str(result.get("verdict") or result.get("status") or "error")
    return {
        "site": site,
        "flow": flow,
        "status": status,
        "status_label": status.replace("_", " "),
        "reason": result.get("reason", ""),
        "page_types": failed_page_types(result),
        "run_url": run_url,
        "repairs": repairs,
        "waiting_until": waiting_until,
        # A proposed baseline can be accepted in the Prefect UI (orchestration/approval.py).
        "approvable": bool(result.get("proposed_baseline")),
        "site_url": site_url(result, base_url),
    }


def structure_drift_context(
    site: str, result: Mapping[str, Any], *, flow: str = SCRAPE, run_url: str | None = None
) -> dict[str, Any]:
    """``structure_drift``: the structure changed but extraction is complete."""
    extraction = result.get("extraction") or {}
    counts = ", ".join(
        f"{name}: {entry.get('items', 0)} valid item(s), {entry.get('requests', 0)} link(s)"
        for name, entry in (extraction.get("page_types") or {}).items()
    )
    return {
        "site": site,
        "what": f"scrape-{site}" if flow == SCRAPE else f"{site} fixtures",
        "reason": result.get("reason", ""),
        "page_types": failed_page_types(result),
        "extraction": counts or "no items needed",
        "proposed_path": result.get("proposed_baseline_path"),
        "run_url": run_url,
    }
