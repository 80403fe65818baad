"""Finders for ratings and review counts, in the idioms sites print them:
``itemprop=ratingValue``; a class word (``p.star-rating Three``, ``rating-4``); "4.5 out of
5", "4,5 de 5", "4,5 su 5", "4.5/5" in a text or an ``aria-label``/``title``/``alt``; a row
of five icons of which the filled ones differ by a class or an image (counted); a string
of star glyphs (★★★★☆); and "(1,234 reviews)", "12 recensioni", "1.234 opiniones" for
counts. Pure functions."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path
from crawlers.scaffold.finders import Hit, Site
from crawlers.scaffold.look import hints, in_chrome, in_other_card, rules_for, text_of
from crawlers.scaffold.synth import Unit

__all__ = ["find_rating", "find_review_count"]

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_WORD_RE = r"(?i)\b(one|two|three|four|five)\b"
_OF_FIVE = re.compile(
    r"(\d(?:[.,]\d{1,2})?)\s*(?:/|out of|of|de|su|sur|von|em|van|z)\s*(?:5|five|cinco|cinque)\b",
    re.I,
)
OF_FIVE_RE = (
    r"(?i)(\d(?:[.,]\d{1,2})?)\s*(?:/|out of|of|de|su|sur|von|em|van|z)\s*(?:5|five|cinco|cinque)\b"
)
_COUNT_WORDS = (
    "reviews", "review", "ratings", "rating", "opiniones", "opinión", "reseñas", "reseña",
    "valoraciones", "comentarios", "avaliações", "avaliação", "comentários", "recensioni",
    "recensione", "valutazioni", "avis", "bewertungen", "bewertung", "rezensionen", "votes",
    "votos", "voti", "stimmen", "notes",
)  # fmt: skip
# A count as printed: grouped (1,234 / 1.234), or compact (1,2K, 3 Mio., 2,5 mil).
_NUMBER = r"(\d[\d.,]*(?:\s?(?:[KkMm]\b|Mio\.?|Tsd\.?|mil\b|mila\b|Mrd\.?))?)"
COUNT_RE = r"(?i)" + _NUMBER + r"\s*\)?\s*(?:" + "|".join(_COUNT_WORDS) + r")\b"
_STAR_HINTS = {"star", "stars", "rating", "ratings", "rate", "score", "stelle", "estrellas",
               "sterne", "étoiles", "valutazione", "valoracion", "bewertung"}  # fmt: skip
_GLYPHS = "★☆"
_ATTRS = ("aria-label", "title", "alt", "data-rating", "content")


def find_rating(unit: Unit, site: Site) -> Hit | None:
    for finder in (_itemprop, _of_five, _class_word, _icon_row, _glyphs, _width, _bare_number):
        hit = finder(unit)
        if hit is not None:
            return hit
    return None


def _candidates(unit: Unit) -> list[Any]:
    """The unit's elements with text or a telling attribute, outside chrome and cards."""
    out = []
    for element in unit.root.xpath(
        ".//*[text()[normalize-space()] or @aria-label or @title or @alt or @data-rating or @class]"
    ):
        if not in_chrome(element) and not in_other_card(element, unit):
            out.append(element)
    return out


def _itemprop(unit: Unit) -> Hit | None:
    """``itemprop=ratingValue``, or a rating kept in a data attribute (``data-rating="4"``)."""
    for element in unit.root.xpath(".//*[@itemprop='ratingValue']"):
        attr = "content" if element.attrib.get("content") else None
        exact, general = rules_for(element, unit, {"attr": attr} if attr else None)
        return Hit(exact, general)
    for name in ("data-rating", "data-score", "data-stars", "data-star-rating"):
        for element in unit.root.xpath(f".//*[@{name}]"):
            if re.fullmatch(r"[0-5](?:[.,]\d+)?", element.attrib[name].strip()):
                if in_other_card(element, unit):
                    continue
                exact, general = rules_for(element, unit, {"attr": name})
                return Hit(exact, general)
    return None


def _of_five(unit: Unit) -> Hit | None:
    for element in _candidates(unit):
        for attr in (None, *_ATTRS):
            raw = text_of(element) if attr is None else element.attrib.get(attr, "")
            if not raw or len(raw) > 80 or not _OF_FIVE.search(raw):
                continue
            if attr is None and any(_OF_FIVE.search(text_of(c)) for c in element.xpath("./*")):
                break  # a child says it: that one is the element
            shaping = {"re": OF_FIVE_RE} | ({"attr": attr} if attr else {})
            exact, general = rules_for(element, unit, shaping)
            return Hit(exact, general)
    return None


def _class_word(unit: Unit) -> Hit | None:
    for element in _candidates(unit):
        classes = element.attrib.get("class", "")
        if not hints(element) & _STAR_HINTS:
            continue
        if re.search(_WORD_RE, classes):
            shaping = {
                "attr": "class",
                "re": _WORD_RE,
                "map": {w.title(): n for w, n in WORDS.items()},
            }
            exact = {"xpath": exact_path(element, unit.root)} | shaping
            general = [{"css": css} | shaping for css in _star_css(element, unit)]
            return Hit(exact, general)
        number = re.search(r"(?:star|rating|rate)s?[-_](\d)(?![\d])", classes, re.I)
        if number:
            shaping = {"attr": "class", "re": r"(?i)(?:star|rating|rate)s?[-_](\d)(?!\d)"}
            exact = {"xpath": exact_path(element, unit.root)} | shaping
            general = [{"css": css} | shaping for css in _star_css(element, unit)]
            return Hit(exact, general)
    return None


def _star_css(element: Any, unit: Unit) -> list[str]:
    """Selectors for a rating element named by a class word: its class without the
    varying word (``p.star-rating``), then its other candidates."""
    tag = element.root.tag
    kept = [
        c
        for c in element.attrib.get("class", "").split()
        if not re.fullmatch(r"(?i)one|two|three|four|five|.*\d.*", c)
        and re.fullmatch(r"[A-Za-z_][\w-]*", c)
    ]
    out = [tag + "".join(f".{c}" for c in kept)] if kept else []
    return out + [c for c in css_candidates(element, unit.root) if "." not in c or c in out][:4]


def _icon_row(unit: Unit) -> Hit | None:
    """Five (or ten) icons side by side, the filled ones told by a class or an image
    the empty ones lack; counted."""
    for row in unit.root.xpath(".//*[count(*) = 5 or count(*) = 10]"):
        icons = row.xpath("./*")
        tags = {icon.root.tag for icon in icons}
        if len(tags) != 1 or text_of(row).strip(_GLYPHS + " ") or in_chrome(row):
            continue
        if in_other_card(row, unit):
            continue
        tag = tags.pop()
        marks = [set(icon.attrib.get("class", "").split()) for icon in icons]
        shared = set.intersection(*marks)
        varying = Counter(c for m in marks for c in m - shared)
        filled = [m - shared for m in marks]
        prefix = next((n for n, m in enumerate(filled) if m != filled[0]), len(filled))
        if not varying or prefix in (0, len(filled)) or not filled[0]:
            continue
        mark = sorted(filled[0])[0]
        if any(mark in m for m in filled[prefix:]):
            continue
        css = [f"{c} > {tag}.{mark}" for c in css_candidates(row, unit.root)[:4]]
        marked = f"*[contains(concat(' ', @class, ' '), ' {mark} ')]"
        exact = {"xpath": f"{exact_path(row, unit.root)}/{marked}", "count": True}
        return Hit(exact, [{"css": c, "count": True} for c in css])
    return None


def _glyphs(unit: Unit) -> Hit | None:
    for element in _candidates(unit):
        words = text_of(element).replace(" ", "")
        if 5 <= len(words) <= 10 and set(words) <= set(_GLYPHS) and "★" in words:
            table = {"★" * n + "☆" * (5 - n): n for n in range(6)}
            exact, general = rules_for(element, unit, {"map": table})
            return Hit(exact, general)
    return None


# A filled bar's width in tenths of its length: half stars of five.
WIDTHS = {f"{n * 10}": n / 2 for n in range(11)} | {f"{n * 10}.0": n / 2 for n in range(11)}
WIDTH_RE = r"width:\s*(\d+(?:\.0)?)\s*%"


def _width(unit: Unit) -> Hit | None:
    """Stars drawn as a bar filled to a width (``style="width: 80%"``) in an element named
    for ratings: 80% is 4 of 5 (in tenths: half stars)."""
    for element in unit.root.xpath(".//*[contains(@style, 'width')]"):
        style = element.attrib.get("style", "")
        match = re.search(WIDTH_RE, style)
        named = hints(element) & _STAR_HINTS or any(
            hints(a) & _STAR_HINTS for a in element.xpath("ancestor::*[position() <= 2]")
        )
        if not match or not named or match.group(1) not in WIDTHS or in_other_card(element, unit):
            continue
        exact, general = rules_for(element, unit, {"attr": "style", "re": WIDTH_RE, "map": WIDTHS})
        return Hit(exact, general)
    return None


def _bare_number(unit: Unit) -> Hit | None:
    for element in _candidates(unit):
        words = text_of(element)
        if re.fullmatch(r"[0-5](?:[.,]\d)?", words) and hints(element) & _STAR_HINTS:
            exact, general = rules_for(element, unit)
            return Hit(exact, general)
    return None


def find_review_count(unit: Unit, site: Site) -> Hit | None:
    """How many reviews: ``itemprop=reviewCount``, or "(1,234 reviews)" in six languages."""
    for element in unit.root.xpath(".//*[@itemprop='reviewCount' or @itemprop='ratingCount']"):
        attr = "content" if element.attrib.get("content") else None
        exact, general = rules_for(element, unit, {"attr": attr} if attr else None)
        return Hit(exact, general)
    return find_count(unit, COUNT_RE)


LIKES_RE = (
    r"(?i)" + _NUMBER + r"\s*(?:likes?|me gusta|gosto|curtidas|mi piace|j'aime|"
    r"gefällt mir|upvotes?|votes?|hearts?)\b"
)
HELPFUL_RE = (
    r"(?i)(\d[\d.,]*)\s*(?:people |personas |persone |personnes |personen )?"
    r"(?:found this helpful|helpful|útil|utile|utiles|hilfreich)"
)


def find_count(unit: Unit, pattern_text: str) -> Hit | None:
    """A count printed with its words ("59K likes", "12 found this helpful")."""
    pattern = re.compile(pattern_text)
    for element in _candidates(unit):
        words = text_of(element)
        if len(words) > 60 or not pattern.search(words):
            continue
        if any(pattern.search(text_of(c)) for c in element.xpath("./*")):
            continue
        exact, general = rules_for(element, unit, {"re": pattern_text})
        return Hit(exact, general)
    return None
