"""One home per selector: the gate's selectors live in the site profiles, and the spiders
read them from there (``SiteSpider.selectors``, ``page_selectors``), so the gate watches
what the spiders read rather than a copy of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crawlers.profiles import PROFILES_DIR, PageSelectors, ProfileError, SiteProfile, profile_sites
from crawlers.spiders.base import page_selectors

SPIDERS_DIR = Path(__file__).resolve().parents[3] / "crawlers" / "spiders"


def profile_selectors(directory: Path = PROFILES_DIR) -> list[tuple[str, str, str, str]]:
    """(site, page type, key, selector) of every profile's ``[fingerprint]`` selectors (a
    profile-only site's come from its ``[pages]`` rules, the generic spider's own)."""
    found = []
    for site in profile_sites(directory):
        table = SiteProfile.load(site, directory).fingerprint_table
        for page_type, page in (table.page_types if table else {}).items():
            found += [(site, page_type, key, query) for key, query in page.selectors.items()]
    return found


def copies(selectors: list[tuple[str, str, str, str]], sources: list[Path]) -> list[str]:
    """Each place a selector is written out in ``sources``: the selector, not continued
    by a name character (``.price`` is no copy of ``.price-value``'s selector)."""
    found = []
    for path in sources:
        source = path.read_text(encoding="utf-8")
        for site, page_type, key, query in selectors:
            pattern = re.escape(query) + r"(?![\w-])"
            for match in re.finditer(pattern, source):
                line = source.count("\n", 0, match.start()) + 1
                found.append(f"{path.name}:{line}: {site} {page_type}.{key} = {query!r}")
    return found


def test_no_profile_selector_is_copied_into_spider_code() -> None:
    selectors = profile_selectors()
    assert len(selectors) > 80  # every shipped profile's selectors are scanned
    sources = sorted(SPIDERS_DIR.rglob("*.py"))
    assert any(path.parent.name == "booking_com" for path in sources)  # site folders too
    found = copies(selectors, sources)
    assert not found, "read these from the profile (SiteSpider.selectors):\n" + "\n".join(found)


def test_the_scan_finds_a_planted_copy(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    query = '[data-testid="GalleryUnifiedDesktop-wrapper"] img'
    # The gallery's selector, extended: a copy. A longer class name is another selector.
    planted.write_text(f"GALLERY = '{query}::attr(src)'\nPRICE = '.product-price .price-values'\n")
    selectors = profile_selectors()
    assert copies(selectors, [planted]) == [f"planted.py:1: booking_com hotel.gallery = {query!r}"]


def test_a_spider_names_a_selector_by_its_key(tmp_path: Path) -> None:
    hotel = SiteProfile.load("booking_com").selectors("hotel")
    assert hotel["gallery"] == '[data-testid="GalleryUnifiedDesktop-wrapper"] img'
    assert page_selectors("booking_com", "hotel")["gallery"] == hotel["gallery"]
    mine = PageSelectors("booking_com", "hotel", {"gallery": "ul.photos img"})
    assert page_selectors("booking_com", "hotel", mine) is mine  # the spider's profile wins
    with pytest.raises(ProfileError) as missing:
        mine["facilities"]
    assert str(missing.value) == (
        "booking_com profile: [fingerprint.page_types.hotel.selectors] has no 'facilities'"
        " (the booking_com spider reads it)"
    )
    with pytest.raises(ProfileError, match=r"no \[fingerprint.page_types.hotels\] table"):
        SiteProfile.load("booking_com").selectors("hotels")
