"""What idealista prints, read in its UIs' languages (English, Spanish, Portuguese,
Italian): operation, property kind, street, area, rooms, bathrooms, floor and feature
keywords."""

from __future__ import annotations

import re

from crawlers.spiders.common import text, to_float, to_int

_RENT_WORDS = ("for rent", "alquiler", "arrendar", "affitto", "to let")
_SALE_WORDS = ("for sale", "venta", "à venda", "venda", "vendita")
# Feature lines -> keywords (English, Spanish, Portuguese, Italian UIs).
_FEATURE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lift", ("with lift", "con ascensor", "com elevador", "ascensore", "lift")),
    ("terrace", ("terrace", "terraza", "terraço", "terrazzo")),
    ("balcony", ("balcony", "balcón", "varanda", "balcone")),
    ("air_conditioning", ("air conditioning", "aire acondicionado", "ar condicionado")),
    ("swimming_pool", ("swimming pool", "piscina")),
    ("garden", ("garden", "jardín", "jardim", "giardino")),
    ("parking", ("parking", "garaje", "garagem", "garage", "box auto")),
    ("storage_room", ("storage room", "trastero", "arrecadação", "cantina")),
    ("fitted_wardrobes", ("fitted wardrobes", "armarios empotrados", "roupeiros")),
    ("heating", ("heating", "calefacción", "aquecimento", "riscaldamento")),
    ("furnished", ("furnished", "amueblado", "mobilado", "arredato")),
    ("new_development", ("new development", "obra nueva", "empreendimento")),
)
# A floor line, on cards ("Planta 3ª exterior con ascensor", "Bajo", " sin ascensor",
# "1º andar com elevador", "Rés do chão") and detail pages ("5th floor exterior with lift"):
# the level, then what idealista shows after it (its own data calls that part subText).
_FLOOR_LEVEL = re.compile(
    r"\b(?:planta|entreplanta|bajo|s[óo]tano|semis[óo]tano|semi-s[óo]tano|principal|"
    r"floor|ground|basement|mezzanine|andar|r[ée]s[- ]do[- ]ch[ãa]o|cave|sobreloja|"
    r"piano|seminterrato|baixos|entresol)\b",
    re.IGNORECASE,
)
_FLOOR_QUALIFIER = re.compile(
    r"\b(?:exterior|interior|(?:con|sin|com|sem|with|without|amb|sense|senza)\s+"
    r"(?:ascensor|ascensore|elevador|lift))\b",
    re.IGNORECASE,
)
_WITH_LIFT = re.compile(r"\b(?:con|com|with|amb)\s+(?:ascensore?|elevador|lift)\b", re.IGNORECASE)


def operation(value: str | None, title: str | None) -> str | None:
    if value in ("sale", "rent"):
        return value
    lowered = (title or "").lower()
    if any(word in lowered for word in _RENT_WORDS):
        return "rent"
    if any(word in lowered for word in _SALE_WORDS):
        return "sale"
    return None


def property_type(typology: str | None, title: str | None) -> str | None:
    # typology is coarse ("home" covers flats, duplexes, houses): the title's first word
    # names the kind ("Duplex for sale in ...", "Apartamento t3 à venda ...").
    kind = (title or "").split(" ")[0].lower() if title else None
    if typology and typology != "home":
        return typology
    return kind or typology


def street(title: str | None) -> str | None:
    for marker in (" in ", " en ", " na ", " no ", " in via "):
        if title and marker in title:
            return title.rsplit(marker, 1)[1].strip()
    return None


def area(values: list[str | None]) -> float | None:
    for value in values:
        if value and "m²" in value:
            return to_float(value)
    return None


def rooms(values: list[str | None]) -> int | None:
    for value in values:
        if not value:
            continue
        lowered = value.lower()
        if re.fullmatch(r"t\d+", lowered):  # Portugal: T3 = three bedrooms
            return int(lowered[1:])
        if any(w in lowered for w in ("bed", "hab", "quarto", "locali", "room")):
            return to_int(value)
    return None


def bathrooms(lines: list[str]) -> int | None:
    for line in lines:
        lowered = line.lower()
        if any(
            w in lowered for w in ("bathroom", "baño", "casa de banho", "casas de banho", "bagn")
        ):
            return to_int(line)
    return None


def floor_line(values: list[str | None]) -> tuple[str | None, list[str]]:
    """The first floor line's level as shown ("Planta 3ª", "Bajo", "1º andar"; None when
    the line names none, as " exterior con ascensor" does) and its feature keywords:
    "exterior" and "lift" (idealista's own search filters); "interior" and "sin ascensor"
    add none."""
    for value in values:
        if not value or not (_FLOOR_LEVEL.search(value) or _FLOOR_QUALIFIER.search(value)):
            continue
        qualifier = _FLOOR_QUALIFIER.search(value)
        level = text(value[: qualifier.start()] if qualifier else value)
        rest = value[qualifier.start() :] if qualifier else ""
        features = ["exterior"] if re.search(r"\bexterior\b", rest, re.IGNORECASE) else []
        if _WITH_LIFT.search(rest):
            features.append("lift")
        return level, features
    return None, []


def features(lines: list[str]) -> list[str]:
    found = []
    for line in lines:
        lowered = line.lower()
        if lowered.startswith(("without", "sin ", "sem ", "senza")):
            continue
        for keyword, words in _FEATURE_WORDS:
            if any(word in lowered for word in words) and keyword not in found:
                found.append(keyword)
    return found
