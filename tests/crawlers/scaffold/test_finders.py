"""The field finders on markup as sites write it: what each finds, and that its rules
read the same value again on the page (through the generic spider's rules engine)."""

from __future__ import annotations

from typing import Any

import pytest

from crawlers.scaffold.finders import (
    Hit,
    Site,
    find_availability,
    find_description,
    find_images,
    find_main_image,
    find_name,
    find_operation,
    find_price,
    find_summary,
    title_suffix,
)
from crawlers.scaffold.item_types import DECLARED, full_declaration, register_declared
from crawlers.scaffold.synth import Unit, read
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import cards, unit

EN = Reading(("en",), market(language="en"))


def value(
    u: Unit, name: str, hit: Hit | None, item_type: str = "product", reading: Reading = EN
) -> Any:
    """What the hit says the field is (one of its general rules reads the same)."""
    assert hit is not None
    if item_type in DECLARED:
        register_declared(item_type, full_declaration(item_type))
    found = read(u, item_type, name, hit.exact, reading)
    assert any(read(u, item_type, name, rule, reading) == found for rule in hit.rules)
    return found


def test_a_name_is_the_h1_outside_the_chrome() -> None:
    u = unit("<body><header><h1>Shop</h1></header><main><h1>Red Tent</h1></main></body>")
    assert value(u, "name", find_name(u, Site())) == "Red Tent"


def test_without_h1_a_name_is_the_large_text_the_title_starts_with() -> None:
    html = (
        "<html><head><title>A Voyage North by J. Doe - Old Books</title></head><body>"
        "<table><tr><td><font size='+3'>Old Books</font></td></tr><tr><td>"
        "<font size='+2'><b>A Voyage North</b></font><br>by J. Doe</td></tr></table></body></html>"
    )
    u = unit(html)
    site = Site(title_suffix(["A Voyage North by J. Doe - Old Books", "Rivers - Old Books"]))
    assert site.title_suffix == " - Old Books"
    assert value(u, "name", find_name(u, site)) == "A Voyage North"


def test_with_nothing_else_a_name_is_the_title_without_the_sites_suffix() -> None:
    u = unit("<html><head><title>Blue Hat | Hat Co</title></head><body><p>x</p></body></html>")
    assert value(u, "name", find_name(u, Site(" | Hat Co"))) == "Blue Hat"


def test_a_cards_name_is_its_heading_or_its_link() -> None:
    units = cards(
        "<ul><li class='c'><img src='/a.jpg'><a href='/p/1'>Lamp</a><span>$5</span></li>"
        "<li class='c'><h3>Chair</h3><span>$9</span></li></ul>",
        "li.c",
    )
    assert [value(u, "name", find_name(u, Site())) for u in units] == ["Lamp", "Chair"]


@pytest.mark.parametrize(
    ("markup", "price", "currency", "reading"),
    [
        ("<span class='amount'>$1,299.00</span>", 1299.0, "USD", EN),
        (
            "<p>Prezzo</p><span>1.234,56 €</span>",
            1234.56,
            "EUR",
            Reading(("it",), market(language="it")),
        ),
        (
            "<div><del>£20.00</del> <b>£15.50</b></div>",
            15.5,
            "GBP",
            Reading(("en-GB",), market(language="en-GB")),
        ),
        (  # the sign and the amount in elements of their own
            "<div class='p'><span>€</span><span>29,99</span></div>",
            29.99,
            "EUR",
            Reading(("it",), market(language="it")),
        ),
    ],
)
def test_a_price_is_the_amount_printed_after_the_name(
    markup: str, price: float, currency: str, reading: Reading
) -> None:
    u = unit(
        "<body><header><span>Cart $0.00</span></header><main><h1>Lamp</h1>"
        f"{markup}<section><div class='card'><a href='/p/2'>Other</a><span>$3.00</span></div>"
        "<div class='card'><a href='/p/3'>More</a><span>$4.00</span></div>"
        "<div class='card'><a href='/p/4'>Yet</a><span>$6.00</span></div></section></main></body>"
    )
    name = find_name(u, Site())
    hit = find_price(u, Site(), name.element if name else None)
    assert value(u, "price", hit, reading=reading) == price
    assert value(u, "currency", hit, reading=reading) == currency


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("In stock (19 available)", "InStock"),
        ("Sold out", "OutOfStock"),
        ("Esaurito", "OutOfStock"),
    ],
)
def test_availability_phrases_become_schema_names(text: str, stored: str) -> None:
    u = unit(f"<body><main><h1>x</h1><p class='s'>{text}</p></main></body>")
    site = Site(languages=("it",))
    reading = Reading(("it",), market(language="it"))
    assert value(u, "availability", find_availability(u, site), reading=reading) == stored


def test_a_description_is_the_longest_run_of_paragraphs() -> None:
    u = unit(
        "<body><footer><p>We ship worldwide from our small workshop.</p></footer><main>"
        "<h2>Description</h2><div class='text'><p>A sturdy lamp for long evenings.</p>"
        "<p>It folds flat and fits in a drawer.</p></div><aside><p>Sign up for the "
        "newsletter today and save.</p></aside></main></body>"
    )
    assert value(u, "description", find_description(u, Site())) == (
        "A sturdy lamp for long evenings.\n\nIt folds flat and fits in a drawer."
    )


def test_a_summary_is_the_short_text_under_the_title() -> None:
    u = unit(
        "<body><main><h1>Bridge reopens</h1><p class='x'>Drivers will have to wait a little "
        "longer for the new lanes.</p><p>By Ann</p></main></body>"
    )
    name = find_name(u, Site())
    hit = find_summary(u, Site(), name.element if name else None)
    assert value(u, "summary", hit, "article") == (
        "Drivers will have to wait a little longer for the new lanes."
    )


def test_images_are_the_gallery_nearest_the_name() -> None:
    u = unit(
        "<body><header><img src='/logo.png'></header><main><div class='g'>"
        "<img src='/i/1.jpg'><img src='/i/2.jpg'></div><h1>Lamp</h1>"
        "<img src='/icons/star.svg' width='12'></main></body>"
    )
    name = find_name(u, Site())
    element = name.element if name else None
    assert value(u, "images", find_images(u, Site(), element)) == [
        "http://shop.test/i/1.jpg",
        "http://shop.test/i/2.jpg",
    ]
    one = find_main_image(u, Site(), element)
    assert read(u, "product", "images", one.exact, EN) == ["http://shop.test/i/1.jpg"]


def test_sale_or_rent_from_the_title() -> None:
    u = unit("<body><main><h1>3 bedroom flat to rent</h1></main></body>")
    name = find_name(u, Site())
    hit = find_operation(u, Site(), name.element if name else None)
    assert value(u, "operation", hit, "property_listing") == "rent"
    spanish = unit("<body><main><h1>Piso en venta en Goya</h1></main></body>")
    name = find_name(spanish, Site())
    reading = Reading(("es",), market(language="es"))
    hit = find_operation(spanish, Site(languages=("es",)), name.element if name else None)
    assert value(spanish, "operation", hit, "property_listing", reading) == "sale"
