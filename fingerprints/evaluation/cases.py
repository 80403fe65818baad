"""The gate's evaluation set: (page, expected verdict) pairs over the production sites,
judged exactly as the live gate judges a sample (``python -m bench.gate`` runs them).

The set is ``fingerprints/evaluation/cases.toml``: each ``[[case]]`` names a site, the page
type the page is sampled as, the page (a file under the site's directory, ``fixtures/...``
or ``blocked/...``, or under ``fingerprints/evaluation/pages/``), the URL it is served at,
optional edits that make it another page (``edits``: regular expression substitutions on
its source; ``restyle``: every value of these attributes renamed and the body wrapped, the
scripts untouched, as a redesign does), the HTTP status and headers it comes with, and the
verdict the gate must give. ``kind`` says what the case stands for: ``current``,
``drifted``, ``broken extraction``, ``absent not lost``, ``old layout`` or ``blocked``.

A case passes when the gate's verdict is the expected one. A *false pass* is a failing
verdict expected and a passing one given (``passed``/``drifted``); a *false stop* the
reverse.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.fetch.blocks import BlockRules
from crawlers.profiles import SiteProfile
from fingerprints.baselines.store import SITES_DIR, FingerprintConfig, load_baseline
from fingerprints.gate import Page, evaluate, judge_sample
from fingerprints.verdicts.results import GateResult

EVALUATION_DIR = Path(__file__).resolve().parent  # cases.toml and pages/ beside this module
CASES_FILE = EVALUATION_DIR / "cases.toml"
PASSING = frozenset({"passed", "drifted"})
KINDS = ("current", "drifted", "broken extraction", "absent not lost", "old layout", "blocked")
_SCRIPT = re.compile(r"(<script\b.*?</script>)", re.S | re.I)


class CaseError(ValueError):
    """The evaluation set names a page that is not there, or is malformed."""


@dataclass(frozen=True)
class Edit:
    pattern: str
    to: str
    count: int = 0  # 0: every match


@dataclass(frozen=True)
class Case:
    name: str
    site: str
    page_type: str
    page: str
    url: str
    expect: str
    kind: str
    edits: tuple[Edit, ...] = ()
    restyle: tuple[str, ...] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)

    def path(self, sites_dir: Path = SITES_DIR) -> Path:
        if self.page.startswith("evaluation:"):
            return EVALUATION_DIR / self.page.removeprefix("evaluation:")
        return sites_dir / self.site / self.page

    def body(self, sites_dir: Path = SITES_DIR) -> bytes:
        path = self.path(sites_dir)
        if not path.is_file():
            raise CaseError(f"case {self.name!r}: no page at {path}")
        html = path.read_text(encoding="utf-8")
        for edit in self.edits:
            edited = re.sub(edit.pattern, edit.to, html, count=edit.count, flags=re.S)
            if edited == html:
                raise CaseError(f"case {self.name!r}: edit {edit.pattern!r} changes nothing")
            html = edited
        if self.restyle:
            html = restyle(html, self.restyle)
        return html.encode("utf-8")


@dataclass(frozen=True)
class Outcome:
    case: Case
    verdict: str
    reason: str

    @property
    def ok(self) -> bool:
        return self.verdict == self.case.expect

    @property
    def false_pass(self) -> bool:
        return self.case.expect not in PASSING and self.verdict in PASSING

    @property
    def false_stop(self) -> bool:
        return self.case.expect in PASSING and self.verdict not in PASSING


def restyle(html: str, attributes: Sequence[str] = ("class",)) -> str:
    """A redesign: every value of ``attributes`` renamed, the body wrapped in new elements;
    the scripts (JSON, JSON-LD, state) left exactly as they were."""
    parts = _SCRIPT.split(html)
    for index in range(0, len(parts), 2):  # odd parts are the scripts
        part = parts[index]
        for name in attributes:
            part = re.sub(
                rf'(\s{re.escape(name)}=")([^"]*)(")',
                lambda m: m.group(1) + " ".join(f"v9{t}" for t in m.group(2).split()) + '"',
                part,
            )
        part = re.sub(
            r"(<body\b[^>]*>)", r'\1<div class="v9shell"><section>', part, count=1, flags=re.I
        )
        parts[index] = re.sub(r"(</body>)", r"</section></div>\1", part, count=1, flags=re.I)
    return "".join(parts)


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    """The evaluation set; ``CaseError`` names the first malformed case."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CaseError(f"{path}: {exc}") from None
    cases = []
    for index, entry in enumerate(raw.get("case") or ()):
        try:
            cases.append(_case(entry))
        except (KeyError, TypeError, ValueError) as exc:
            raise CaseError(f"{path}: case {index + 1}: {exc}") from None
    names = [case.name for case in cases]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise CaseError(f"{path}: case names used twice: {', '.join(duplicated)}")
    return cases


REQUIRED_KEYS = ("name", "site", "page_type", "page", "url", "kind", "expect")


def _case(entry: Mapping[str, Any]) -> Case:
    missing = [key for key in REQUIRED_KEYS if key not in entry]
    if missing:
        raise ValueError(
            f"missing {', '.join(missing)} (each case needs {', '.join(REQUIRED_KEYS)})"
        )
    kind = str(entry["kind"])
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is none of {KINDS}")
    edits = tuple(
        Edit(str(e["re"]), str(e.get("to", "")), int(e.get("count", 0)))
        for e in entry.get("edits") or ()
    )
    return Case(
        name=str(entry["name"]),
        site=str(entry["site"]),
        page_type=str(entry["page_type"]),
        page=str(entry["page"]),
        url=str(entry["url"]),
        expect=str(entry["expect"]),
        kind=kind,
        edits=edits,
        restyle=tuple(entry.get("restyle") or ()),
        status=int(entry.get("status", 200)),
        headers={str(k): str(v) for k, v in (entry.get("headers") or {}).items()},
    )


def judge_case(case: Case, sites_dir: Path = SITES_DIR) -> Outcome:
    """The gate on one page, as ``verify <site> --page-type <type> --path <path>`` judges a
    live sample of it (the site's baseline, profile and block rules; no network)."""
    baseline = load_baseline(case.site, sites_dir).subset([case.page_type])
    config = FingerprintConfig.for_site(case.site).subset([case.page_type])
    rules = BlockRules.from_settings(SiteProfile.load(case.site).settings)
    headers = {"Content-Type": "text/html; charset=utf-8", **case.headers}
    pages = [Page(case.url, case.page_type, case.status, headers, case.body(sites_dir))]
    structural = evaluate(case.site, pages, baseline, config=config, rules=rules)
    result: GateResult = judge_sample(structural, pages, baseline, config, sites_dir=sites_dir)
    return Outcome(case, str(result.verdict), result.reason)
