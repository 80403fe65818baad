"""The scaffold checks itself before it writes: the proposed profile run over its own
sample with the generic spider's rules engine (crawlers.spiders.rules): each field's
coverage on the item pages (or cards), the required fields, the links each page type's
rules follow, whether the rules reach the sampled item pages from the start page, and
whether every sampled page's URL routes to its own page type. Then the report."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from crawlers.items import schema_by_type
from crawlers.profiles import SiteProfile
from crawlers.scaffold.profile import Proposal, start_page
from crawlers.spiders.rules import Reading, follow_links, page_type_for, read_items

__all__ = ["REQUIRED_SHARE", "Verification", "report", "verify"]

REQUIRED_SHARE = 0.9  # a required field must be read on this share of the sampled items
LOW_FILL = 0.8


@dataclass
class Verification:
    coverage: dict[str, tuple[int, int]]  # field -> (items with a value, items read)
    items: int
    missing: list[str]  # required fields read on too few items: "name (3/38)"
    follows: dict[str, Counter[str]]  # page type -> target type -> links found
    reached: tuple[int, int]  # sampled item pages the rules reach from the start, of all
    check: list[str] = field(default_factory=list)
    shown: dict[str, set[str]] = field(default_factory=dict)  # item page path -> fields read


def verify(profile: SiteProfile, proposal: Proposal) -> Verification:
    study = proposal.study
    page_type = study.page_type
    assert page_type is not None
    table = profile.pages[page_type.name]
    reading = Reading.of(profile.market)
    counts: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    items = 0
    shown: dict[str, set[str]] = {}
    for page in page_type.pages:
        for extraction in read_items(page.response, table, profile.item_type, reading):
            counts.update(extraction.found)
            shown.setdefault(page.path, set()).update(extraction.found)
            problems.update(p.split(":", 1)[0] for p in extraction.problems)
            items += 1
    coverage = {name: (counts[name], items) for name in table.fields}
    required = [n for n in schema_by_type(profile.item_type).required if n != "url"]
    missing = [
        f"{name} ({counts[name]}/{items})"
        for name in required
        if counts[name] < REQUIRED_SHARE * max(1, items)
    ]
    check = [
        f"field {name}: read on {found}/{total} sampled items"
        for name, (found, total) in coverage.items()
        if found < LOW_FILL * total
    ]
    check += [
        f"field {name}: a value found but not convertible on {n} item(s)"
        for name, n in problems.items()
    ]
    check += _routing(profile, proposal)
    follows = _follows(profile, proposal)
    check += [
        f"pages.{name}.follow: found no links on its sampled pages"
        for name, found in follows.items()
        if not found
    ]
    reached = _reached(profile, proposal)
    if reached[0] < reached[1]:
        check.append(
            f"the follow rules reach {reached[0]} of the {reached[1]} sampled item pages from "
            "the start page: add a rule (or a sitemap) for the others"
        )
    return Verification(coverage, items, missing, follows, reached, check, shown)


def _routing(profile: SiteProfile, proposal: Proposal) -> list[str]:
    """Sampled pages whose URL the profile would give another page type."""
    wrong: Counter[tuple[str, str | None]] = Counter()
    for name, page_type in proposal.types.items():
        for page in page_type.pages:
            routed = page_type_for(page.url, profile.pages, profile.start_page)
            if routed != name:
                wrong[name, routed] += 1
    return [
        f"{n} sampled {name} page(s) match the url_patterns of {routed or 'no page type'} "
        "(links to them are still followed as their rules say)"
        for (name, routed), n in wrong.items()
    ]


def _follows(profile: SiteProfile, proposal: Proposal) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for name, page_type in proposal.types.items():
        if not profile.pages[name].follow:
            continue
        found: Counter[str] = Counter()
        for page in page_type.pages:
            routed, _ = follow_links(page.response, name, profile.pages)
            found.update(target for _, target in routed)
        out[name] = found
    return out


def _reached(profile: SiteProfile, proposal: Proposal) -> tuple[int, int]:
    """Sampled item pages reached by following the rules from the start page, through
    sampled pages only."""
    page_type = proposal.study.page_type
    assert page_type is not None
    by_url = {page.url: page for t in proposal.types.values() for page in t.pages}
    first = start_page(proposal)
    start = next((p for p in by_url.values() if p.source == "start"), None)
    if start is None or first is None:
        return 0, len(page_type.pages)
    seen = {start.url}
    queue = deque([(start, first)])
    reached = set()
    while queue:
        page, name = queue.popleft()
        if name == page_type.name:
            reached.add(page.url)
        routed, _ = follow_links(page.response, name, profile.pages)
        for url, target in routed:
            if url in by_url and url not in seen:
                seen.add(url)
                queue.append((by_url[url], target))
    return len(reached & {p.url for p in page_type.pages}), len(page_type.pages)


def report(proposal: Proposal, verification: Verification | None, written: list[str]) -> str:
    study = proposal.study
    lines = [f"{proposal.site}: item type {proposal.item_type} ({study.why})"]
    lines.append("page types found:")
    for name, page_type in proposal.types.items():
        patterns = ", ".join(page_type.regexes)
        lines.append(
            f"  {name:<16} {len(page_type.pages):>3} page(s)  {page_type.role:<8} {patterns}"
        )
    if study.site_map.unclassified:
        lines.append(f"  (not used: {len(study.site_map.unclassified)} other page(s))")
    if verification is not None and study.page_type is not None:
        lines.append(
            f"field coverage on the sample ({study.page_type.name}: {verification.items} "
            f"item(s) on {len(study.page_type.pages)} page(s)):"
        )
        for name, (found, total) in verification.coverage.items():
            how = study.fields[name].how if name in study.fields else "?"
            lines.append(f"  {name:<18} {found:>3}/{total:<3} {how}")
        for name, proposal_ in study.fields.items():
            if not proposal_.sure:
                choice = proposal_.choice
                lines.append(f"  {name:<18} hint    read {choice.agree}/{choice.found} (commented)")
        known = set(verification.coverage) | set(study.fields)
        kinds = [n for n in schema_by_type(proposal.item_type).field_names if n not in known]
        kinds = [n for n in kinds if n not in ("url", "job_id", "incomplete")]
        lines.append("could not find: " + (", ".join(kinds) or "(nothing)"))
        for name, targets in verification.follows.items():
            links = ", ".join(f"{n} to {target}" for target, n in targets.items()) or "none"
            lines.append(f"links followed from {name} samples: {links}")
        done, total = verification.reached
        lines.append(f"the follow rules reach {done} of {total} sampled item pages from the start")
    check = proposal.check + (verification.check if verification else [])
    lines.append("check by hand:" if check else "check by hand: nothing flagged")
    lines += [f"  - {note}" for note in check]
    lines += [f"wrote {path}" for path in written]
    return "\n".join(lines)
