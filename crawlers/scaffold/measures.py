"""Finders for numbers printed with their unit and no label: "260 m²", "5 hab.", "2 baths",
"3 camere", as property cards and listings show them (several in one row, told apart by
their unit). Pure functions."""

from __future__ import annotations

import re
from typing import Any

from crawlers.scaffold.finders import Hit, Site
from crawlers.scaffold.look import elements, in_chrome, in_other_card, rules_for, text_of
from crawlers.scaffold.synth import Unit

__all__ = ["UNITS", "find_measure"]

# Field -> the units a number of it is printed with, in the six languages.
UNITS: dict[str, tuple[str, ...]] = {
    "area_m2": ("m²", "m2", "sq m", "sqm", "mq", "metros", "metri"),
    "rooms": ("hab.", "hab", "habitaciones", "dormitorios", "dorm.", "beds", "bed", "bedrooms",
              "bedroom", "quartos", "quarto", "camere", "camera", "locali", "chambres",
              "chambre", "pièces", "zimmer", "rooms", "bd"),
    "bathrooms": ("baños", "baño", "baths", "bath", "bathrooms", "bathroom", "wc",
                  "casas de banho", "banheiros", "bagni", "bagno", "salles de bain",
                  "salle de bain", "bäder", "bad", "ba"),
}  # fmt: skip


def find_measure(unit: Unit, site: Site, field: str) -> Hit | None:
    """A short text that is one number and one of the field's units, alone in its
    element; its rule names the element by the unit it prints."""
    words = UNITS[field]
    alternation = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    pattern = re.compile(rf"^\s*(\d[\d.,]*)\s*(?:{alternation})(?!\w)\.?\s*$", re.I)
    for element in elements(unit):
        text = text_of(element)
        match = pattern.match(text)
        if not match or in_chrome(element) or in_other_card(element, unit):
            continue
        printed = text[match.end(1) :].strip().rstrip(".").strip()
        shaping = {"re": r"(\d[\d.,]*)"}
        exact, general = rules_for(element, unit, shaping)
        return Hit(exact, [_by_unit(element, unit, printed) | shaping, *general], element)
    return None


def _by_unit(element: Any, unit: Unit, printed: str) -> dict[str, Any]:
    scope = "//" if unit.is_page else ".//"
    quote = "'" if "'" not in printed else '"'
    return {
        "xpath": f"{scope}{element.root.tag}[contains(normalize-space(), {quote}{printed}{quote})]"
    }
