"""The proposed profile tried on the sampled pages with the generic spider's own rules
engine (crawlers.spiders.rules), and the report of what was found and what was not."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from crawlers.profiles import SiteProfile
from crawlers.scaffold.classify import Classification
from crawlers.scaffold.profile import Proposal
from crawlers.spiders.rules import Reading, field_kinds, follow_links, page_type_for, read_items

# Fields every item has that no page rule fills.
_PLATFORM_FIELDS = frozenset({"url", "job_id", "incomplete"})
LOW_FILL = 0.8


@dataclass
class Verification:
    fill: dict[str, tuple[int, int]]  # field -> (pages with a value, detail pages)
    missing: list[str]  # item fields no rule was proposed for
    follows: dict[str, Counter[str]]  # page type -> target type -> links found
    check: list[str] = field(default_factory=list)


def verify(profile: SiteProfile, proposal: Proposal) -> Verification:
    classification = proposal.classification
    item_type = profile.item_type
    detail = classification.detail or next(
        (t for t in classification.types.values() if t.role == "items"), None
    )
    assert detail is not None
    table = profile.pages[detail.name]
    counts: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    reading = Reading.of(profile.market)
    total = 0
    for page in detail.pages:
        # Held back: the rules are tried on every sampled page of the type, with the
        # engine the crawl uses (one item per page, or per card of a list).
        for extraction in read_items(page.response, table, item_type, reading):
            counts.update(extraction.found)
            problems.update(problem.split(":", 1)[0] for problem in extraction.problems)
            total += 1
    fill = {name: (counts[name], total) for name in table.fields}
    declared = [name for name in field_kinds(item_type) if name not in _PLATFORM_FIELDS]
    missing = [name for name in declared if name not in table.fields]
    check = []
    for name, (found, pages) in fill.items():
        if found < pages * LOW_FILL:
            check.append(f"field {name}: filled on {found}/{pages} sampled item pages")
    for name, n in problems.items():
        check.append(f"field {name}: a value found but not convertible on {n} page(s)")
    check += _routing(profile, classification)
    follows: dict[str, Counter[str]] = {}
    for name, page_type in classification.types.items():
        if not profile.pages[name].follow:
            continue
        found: Counter[str] = Counter()
        for page in page_type.pages:
            routed, _ = follow_links(page.response, name, profile.pages)
            found.update(target for _, target in routed)
        follows[name] = found
    for name, found in follows.items():
        if not found:
            check.append(f"pages.{name}.follow: found no links on its sampled pages")
    return Verification(fill, missing, follows, check)


def _routing(profile: SiteProfile, classification: Classification) -> list[str]:
    """Sampled pages the profile's url_patterns would give another page type."""
    wrong: Counter[tuple[str, str | None]] = Counter()
    for name, page_type in classification.types.items():
        for page in page_type.pages:
            routed = page_type_for(page.url, profile.pages, profile.start_page)
            if routed != name:
                wrong[name, routed] += 1
    return [
        f"{n} sampled {name} page(s) match the url_patterns of {routed or 'no page type'}"
        for (name, routed), n in wrong.items()
    ]


def report(proposal: Proposal, verification: Verification | None, written: list[str]) -> str:
    classification = proposal.classification
    lines = [f"{proposal.site}: item type {proposal.item_type}"]
    lines.append("page types found:")
    for name, page_type in classification.types.items():
        patterns = ", ".join(page_type.regexes)
        lines.append(
            f"  {name:<16} {len(page_type.pages):>3} page(s)  {page_type.role:<8} {patterns}"
        )
    if classification.unclassified:
        lines.append(f"  (not used: {len(classification.unclassified)} other page(s))")
    if verification is not None:
        lines.append("fields extracted (sampled items with a value):")
        for name, (found, total) in verification.fill.items():
            rules = proposal.fields.get(name)
            how = rules.how if rules else "?"
            lines.append(f"  {name:<18} {found:>3}/{total:<3} {how}")
        lines.append("could not find: " + (", ".join(verification.missing) or "(nothing)"))
        for name, found in verification.follows.items():
            links = ", ".join(f"{n} to {target}" for target, n in found.items()) or "none"
            lines.append(f"links followed from {name} samples: {links}")
    check = proposal.check + (verification.check if verification else [])
    lines.append("check by hand:" if check else "check by hand: nothing flagged")
    lines += [f"  - {note}" for note in check]
    lines += [f"wrote {path}" for path in written]
    return "\n".join(lines)
