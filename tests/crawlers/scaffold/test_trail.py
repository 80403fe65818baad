"""Breadcrumb trails in their common shapes, the category they name, a kicker, and the
choices a product is sold in."""

from __future__ import annotations

import pytest

from crawlers.scaffold.finders import Site, find_name
from crawlers.scaffold.synth import read
from crawlers.scaffold.trail import find_breadcrumbs, find_category, find_variants
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import unit

EN = Reading(("en",), market(language="en"))
TRAILS = [
    # A list; the item's own entry has no link.
    "<ul class='breadcrumb'><li><a href='/'>Home</a></li><li><a href='/c/lamps'>Lamps</a>"
    "</li><li class='active'>Red Lamp</li></ul>",
    # Named by aria-label, separators inside the entries, the last entry a link too.
    "<nav aria-label='Breadcrumb'><ol><li><div><a href='/'>Home</a><span>/</span></div></li>"
    "<li><div><a href='/c/lamps'>Lamps</a><span>/</span></div></li><li><a href='/p/1' "
    "aria-current='page'>Red Lamp</a></li></ol></nav>",
    # No list: links and a last text, separators between them.
    "<div class='percorso'><a href='/'>Home</a> \u203a <a href='/c/lamps'>Lamps</a> \u203a "
    "<span>Red Lamp</span></div>",
]


@pytest.mark.parametrize("trail", TRAILS)
def test_a_trail_and_its_category(trail: str) -> None:
    u = unit(f"<body><main>{trail}<h1>Red Lamp</h1></main></body>")
    site = Site()
    hit = find_breadcrumbs(u, site)
    assert hit is not None
    assert read(u, "product", "breadcrumbs", hit.exact, EN) == ["Home", "Lamps", "Red Lamp"]
    assert any(
        read(u, "product", "breadcrumbs", rule, EN) == ["Home", "Lamps", "Red Lamp"]
        for rule in hit.rules
    )
    name = find_name(u, site)
    category = find_category(u, site, name.element if name else None)
    assert category is not None and read(u, "product", "category", category.exact, EN) == "Lamps"
    assert any(read(u, "product", "category", rule, EN) == "Lamps" for rule in category.rules)


def test_without_a_trail_the_category_is_a_listings_link_above_the_title() -> None:
    u = unit(
        "<body><main><article><div class='kicker'><a href='/section/sport'>Sport</a></div>"
        "<h1>Late winner</h1></article></main></body>"
    )
    site = Site(listings=(r"^/section/[^/?#]+$",))
    name = find_name(u, site)
    hit = find_category(u, site, name.element if name else None)
    assert hit is not None and read(u, "product", "category", hit.exact, EN) == "Sport"
    assert find_category(u, Site(), name.element if name else None) is None


def test_variants_leave_the_prompt_out() -> None:
    u = unit(
        "<body><main><h1>Drill</h1><form><select name='size'><option value=''>Choose...</option>"
        "<option value='a'>18 V</option><option value='b'>Solo</option></select></form>"
        "</main></body>"
    )
    hit = find_variants(u, Site())
    assert hit is not None and hit.rules[0] == {
        "css": 'select[name="size"] option:not([value=""])',
        "all": True,
    }
    assert read(u, "product", "variants", hit.rules[0], EN) == ["18 V", "Solo"]
