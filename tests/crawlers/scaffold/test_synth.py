"""Choosing the rule that generalises: the one reading, on the most units, what the
finders saw there, wrong nowhere; a fallback where it finds nothing."""

from __future__ import annotations

from crawlers.scaffold.synth import choose, same
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading
from tests.crawlers.scaffold.support import unit

EN = Reading(("en",), market(language="en"))


def page(name: str, sidebar: str = "Sale") -> str:
    return (
        f"<body><aside><h1>{sidebar}</h1></aside><main class='item'><h1>{name}</h1></main></body>"
    )


def test_the_rule_reading_every_units_value_wins_over_one_reading_a_wrong_one() -> None:
    units = [unit(page(name), f"http://x.test/p/{n}") for n, name in enumerate(["A", "B", "C"])]
    proposed = [[{"css": "h1"}, {"css": "main.item > h1"}]] * 3
    choice = choose("name", "product", units, ["A", "B", "C"], proposed, EN)
    assert choice.rules == [{"css": "main.item > h1"}]
    assert (choice.found, choice.agree, choice.wrong) == (3, 3, 0) and choice.sure


def test_a_fallback_covers_the_units_the_first_rule_misses() -> None:
    units = [
        unit("<body><h1 class='t'>A</h1></body>", "http://x.test/1"),
        unit("<body><h1 class='t'>B</h1></body>", "http://x.test/2"),
        unit("<body><h2 class='old'>C</h2></body>", "http://x.test/3"),
    ]
    proposed = [[{"css": "h1.t"}], [{"css": "h1.t"}], [{"css": "h2.old"}]]
    choice = choose("name", "product", units, ["A", "B", "C"], proposed, EN)
    assert choice.rules == [{"css": "h1.t"}, {"css": "h2.old"}] and choice.agree == 3


def test_a_field_read_on_too_few_units_is_not_sure() -> None:
    units = [unit(f"<body><p class='n{n}'>v{n}</p></body>", f"http://x.test/{n}") for n in range(5)]
    proposed = [[{"css": f"p.n{n}"}] for n in range(5)]
    choice = choose("name", "product", units, [f"v{n}" for n in range(5)], proposed, EN)
    # One rule and its fallback read two of the five: not sure.
    assert choice.agree == 2 and choice.found == 5 and not choice.sure


def test_values_compare_as_stored() -> None:
    assert same(12.5, 12.500000001) and same(["a", "b"], ["a", "b"])
    assert not same(["a"], ["a", "b"]) and not same(None, None) and not same(True, 1)
