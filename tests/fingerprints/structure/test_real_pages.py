"""The fingerprint on saved real pages of the production sites (``../shared/real-pages``).

Each baseline here is computed from one real page, the harshest case (a production
baseline has several fixtures, so optional parts get a frequency below 1).

Findings these tests pin down:
- trustpilot: the three 2025 server-HTML company pages match each other (0.886-0.948).
  ``twenix.es.html`` is a 2024 browser "save as" copy: a different generation of the
  layout (pre design-system ``CDS_*`` classes, hydrated DOM), and it does *not* match
  the 2025 pages (0.61-0.65): that is a structure change, correctly reported as one.
- idealista: ``detail_es_2026`` (idealista.com) and ``detail_pt_2025`` (idealista.pt)
  share a template family (98% of the .pt page's shingles occur on the .com page), but
  the .com page has hundreds more (contact form, modals, language menus): 0.25.
  They are different page types (``detail_es``, ``detail_pt``), not one.
  Their search pages (``search_es_2025``, Spanish UI, and ``search_pt_2025``) are one page
  type (0.89 each way): same cards, filters and pagination; the .com page renders its
  header and menus on the server (no ``#shell-root``), the only structural difference.
- booking and facebook have two page types each; they do not match each other. booking's
  two search pages (2025-03, 2025-12) and two hotel pages (2016-18, 2026) are layout
  generations of one page type each: they do not match each other either.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html

from fingerprints.baselines.store import SiteBaseline
from fingerprints.gate import Page, evaluate
from fingerprints.structure.comparison import PageTypeBaseline, compare
from fingerprints.structure.fingerprint import DEFAULT_THRESHOLD, Fingerprint, fingerprint

REAL_PAGES = Path(__file__).resolve().parents[3].parent / "shared" / "real-pages"
# In-process, but seconds of CPU (every real page fingerprinted): the integration tier.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not REAL_PAGES.is_dir(),
        reason=f"saved real pages not found at {REAL_PAGES} (they are not part of the repository)",
    ),
]

# site -> page type -> files
PAGES: dict[str, dict[str, list[str]]] = {
    "trustpilot": {
        "company_reviews": [
            "trustpilot/beautytheshop.com_2025.html",
            "trustpilot/burgerking.no_2025.html",
            "trustpilot/djmania.es_2025.html",
        ],
        "company_reviews_2024_saved": ["trustpilot/twenix.es.html"],
    },
    "idealista": {
        "detail_es": ["idealista/detail_es_2026.html"],
        "detail_pt": ["idealista/detail_pt_2025.html"],
        "search": ["idealista/search_pt_2025.html", "idealista/search_es_2025.html"],
    },
    "booking_com": {
        "search": ["booking_com/search_2025.html"],
        # March 2025 search results rendered after "load more": an older card layout.
        "search_2025_03": ["booking_com/search_2025_03.html"],
        "hotel": ["booking_com/hotel_2026.html"],
        "hotel_old": ["booking_com/hotel_old.html"],
    },
    "facebook_marketplace": {
        "item": ["facebook_marketplace/item_regular.html"],
        "search": ["facebook_marketplace/search.html"],
    },
    "g2": {"product_reviews": ["g2/product_reviews_2025.html"]},
    "hermes": {"category": ["hermes/category_ca_2025.html"]},
}
ALL_FILES = [f for types in PAGES.values() for files in types.values() for f in files]
SITE_OF = {f: site for site, types in PAGES.items() for files in types.values() for f in files}
TYPE_OF = {f: t for types in PAGES.values() for t, files in types.items() for f in files}


@pytest.fixture(scope="module")
def prints() -> dict[str, Fingerprint]:
    return {name: fingerprint((REAL_PAGES / name).read_bytes()) for name in ALL_FILES}


def one_page_baseline(fp: Fingerprint) -> PageTypeBaseline:
    return PageTypeBaseline.build("page", [fp])


def test_every_listed_page_exists() -> None:
    missing = [name for name in ALL_FILES if not (REAL_PAGES / name).is_file()]
    assert missing == []


def test_pages_of_one_site_and_type_match_each_other(prints: Mapping[str, Fingerprint]) -> None:
    files = PAGES["trustpilot"]["company_reviews"]
    scores = {}
    for base, other in itertools.permutations(files, 2):
        scores[(base, other)] = compare(prints[other], one_page_baseline(prints[base])).similarity
    print("\ntrustpilot 2025 pairs:", sorted(round(s, 3) for s in scores.values()))
    assert min(scores.values()) >= DEFAULT_THRESHOLD, scores


def test_the_gate_passes_same_type_pages_and_reports_a_layout_generation_change(
    prints: Mapping[str, Fingerprint],
) -> None:
    files = PAGES["trustpilot"]["company_reviews"]
    baseline = SiteBaseline(
        "trustpilot",
        DEFAULT_THRESHOLD,
        {"company_reviews": PageTypeBaseline.build("company_reviews", [prints[files[0]]])},
        {},
    )
    pages = [Page(f, "company_reviews", 200, {}, (REAL_PAGES / f).read_bytes()) for f in files[1:]]
    assert evaluate("trustpilot", pages, baseline).passed

    saved_2024 = PAGES["trustpilot"]["company_reviews_2024_saved"][0]
    old = Page(saved_2024, "company_reviews", 200, {}, (REAL_PAGES / saved_2024).read_bytes())
    result = evaluate("trustpilot", [*pages, old], baseline)
    assert (result.passed, result.status) == (False, "structure_changed")
    assert "skeleton" in result.page_types["company_reviews"].changed_features
    assert result.page_types["company_reviews"].similarity < 0.75  # type: ignore[operator]


def test_idealista_detail_pages_of_two_countries_are_different_page_types(
    prints: Mapping[str, Fingerprint],
) -> None:
    es, pt = prints["idealista/detail_es_2026.html"], prints["idealista/detail_pt_2025.html"]
    assert compare(pt, one_page_baseline(es)).similarity < DEFAULT_THRESHOLD
    assert compare(es, one_page_baseline(pt)).similarity < DEFAULT_THRESHOLD
    # Same template family: nearly all of the .pt page's structure is on the .com page.
    assert len(pt.skeleton & es.skeleton) / len(pt.skeleton) > 0.9


def test_idealista_search_pages_of_two_countries_are_one_page_type(
    prints: Mapping[str, Fingerprint],
) -> None:
    es, pt = prints["idealista/search_es_2025.html"], prints["idealista/search_pt_2025.html"]
    assert compare(es, one_page_baseline(pt)).similarity >= DEFAULT_THRESHOLD
    assert compare(pt, one_page_baseline(es)).similarity >= DEFAULT_THRESHOLD
    assert len(pt.skeleton & es.skeleton) / len(pt.skeleton) > 0.9


def test_block_page_fails_as_blocked_not_as_structure_change(
    prints: Mapping[str, Fingerprint],
) -> None:
    detail = "idealista/detail_es_2026.html"
    baseline = SiteBaseline(
        "idealista",
        DEFAULT_THRESHOLD,
        {"detail_es": PageTypeBaseline.build("detail_es", [prints[detail]])},
        {},
    )
    real = Page(detail, "detail_es", 200, {}, (REAL_PAGES / detail).read_bytes())
    assert evaluate("idealista", [real], baseline).passed
    block_body = (REAL_PAGES / "idealista" / "datadome_block_page.html").read_bytes()
    for status in (403, 200):  # DataDome answers 403; some proxies turn that into 200
        block = Page("https://www.idealista.com/inmueble/1/", "detail_es", status, {}, block_body)
        result = evaluate("idealista", [real, block], baseline)
        assert (result.passed, result.status) == (False, "blocked"), result.summary()
        assert "captcha: datadome captcha" in result.reason
        assert result.changed_page_types == []
        assert "structure" not in result.reason


def test_pages_of_different_sites_do_not_match(prints: Mapping[str, Fingerprint]) -> None:
    worst = 0.0
    for base, other in itertools.permutations(ALL_FILES, 2):
        if SITE_OF[base] == SITE_OF[other]:
            continue
        similarity = compare(prints[other], one_page_baseline(prints[base])).similarity
        worst = max(worst, similarity)
        assert similarity < DEFAULT_THRESHOLD, (base, other, similarity)
    print(f"\nhighest cross-site similarity: {worst:.3f}")
    assert worst < 0.3


def test_different_page_types_of_one_site_do_not_match(prints: Mapping[str, Fingerprint]) -> None:
    for base, other in itertools.permutations(ALL_FILES, 2):
        if SITE_OF[base] != SITE_OF[other] or TYPE_OF[base] == TYPE_OF[other]:
            continue
        if {TYPE_OF[base], TYPE_OF[other]} == {"company_reviews", "company_reviews_2024_saved"}:
            continue  # one page type in two layout generations: covered above
        similarity = compare(prints[other], one_page_baseline(prints[base])).similarity
        assert similarity < DEFAULT_THRESHOLD, (base, other, similarity)


def test_hermes_markets_are_content_not_structure(prints: Mapping[str, Fingerprint]) -> None:
    """Another market's category page (locale paths, language, currency) is the same
    page type as the saved Canadian one: the gate must not report it as a change."""
    name = "hermes/category_ca_2025.html"
    baseline = one_page_baseline(prints[name])
    saved = (REAL_PAGES / name).read_text(encoding="utf-8")
    for locale, lang, sign in (("/fr/fr/", "fr-fr", "€"), ("/jp/ja/", "ja-jp", "¥")):
        moved = saved.replace("/ca/en/", locale).replace('lang="en-ca"', f'lang="{lang}"')
        moved = moved.replace("CA$", sign)
        assert compare(fingerprint(moved), baseline).similarity == 1.0, locale
    fixtures = Path(__file__).resolve().parents[3] / "fingerprints/sites/hermes/fixtures/category"
    scores = {
        page: round(compare(fingerprint((fixtures / page).read_bytes()), baseline).similarity, 3)
        for page in ("bags.html", "fr-sacs-et-pochettes.html", "us-bags.html")
    }
    assert scores == dict.fromkeys(scores, 0.978)  # our fixtures of three markets, alike


def content_only_change(body: bytes, seed: int) -> str:
    """Other text, other links/ids/images, fewer repeated items: content, not layout."""
    rnd = random.Random(seed)
    root = lxml_html.document_fromstring(body)
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if element.tag not in ("script", "style") and element.text and element.text.strip():
            element.text = "lorem ipsum " * rnd.randint(1, 4)
        if element.tail and element.tail.strip():
            element.tail = " dolor "
        for name in list(element.attrib):
            if name in ("href", "src", "alt", "title") or name.startswith("data-"):
                element.set(name, f"v{rnd.randint(0, 9999)}")
    for parent in list(root.iter()):
        children = [c for c in parent if isinstance(c.tag, str)]
        if len(children) >= 4 and len({(c.tag, c.get("class")) for c in children}) == 1:
            for child in children[2::2]:  # a shorter result list
                parent.remove(child)
    return etree.tostring(root, encoding="unicode", method="html")


@pytest.mark.parametrize("name", ALL_FILES)
def test_content_changes_keep_every_real_page_above_threshold(
    name: str, prints: Mapping[str, Fingerprint]
) -> None:
    changed = content_only_change((REAL_PAGES / name).read_bytes(), seed=len(name))
    similarity = compare(fingerprint(changed), one_page_baseline(prints[name])).similarity
    assert similarity >= DEFAULT_THRESHOLD, (name, similarity)


def test_booking_waf_challenge_fails_as_blocked_not_as_structure_change(
    prints: Mapping[str, Fingerprint],
) -> None:
    hotel = "booking_com/hotel_2026.html"
    baseline = SiteBaseline(
        "booking_com",
        DEFAULT_THRESHOLD,
        {"hotel": PageTypeBaseline.build("hotel", [prints[hotel]])},
        {},
    )
    real = Page(hotel, "hotel", 200, {}, (REAL_PAGES / hotel).read_bytes())
    assert evaluate("booking_com", [real], baseline).passed
    challenge = (REAL_PAGES / "booking_com" / "awswaf_block_page.html").read_bytes()
    for status in (202, 200):  # AWS WAF answers 202; a CDN or proxy may say 200
        block = Page("https://www.booking.com/hotel/in/x.html", "hotel", status, {}, challenge)
        result = evaluate("booking_com", [real, block], baseline)
        assert (result.passed, result.status) == (False, "blocked"), result.summary()
        assert "challenge: aws waf challenge" in result.reason
        assert result.changed_page_types == []
