"""The sites' content, generated from a seed: same seed, same site."""

from __future__ import annotations

import random
from dataclasses import dataclass

CATEGORIES = ("bohrmaschinen", "saegen", "schleifer", "werkzeugkoffer", "messgeraete")
BRANDS = ("Kraftwerk", "Bosch-Lehmann", "Nordstahl", "Eisenhut", "Vollmer")
NOUNS = {
    "bohrmaschinen": "Akku-Bohrschrauber",
    "saegen": "Stichsäge",
    "schleifer": "Exzenterschleifer",
    "werkzeugkoffer": "Werkzeugkoffer",
    "messgeraete": "Laser-Entfernungsmesser",
}
ADJECTIVES = ("Profi", "Kompakt", "Ultra", "Classic", "Turbo", "Mini", "Max", "Pro X")
COLOURS = ("Blau", "Grün", "Schwarz", "Rot", "Gelb")
MATERIALS = ("Aluminium", "Kunststoff", "Stahl", "Glasfaser")
SENTENCES = (
    "Das Gerät liegt dank ergonomischem Griff sicher in der Hand.",
    "Der bürstenlose Motor arbeitet leise und verschleißarm.",
    "Im Lieferumfang sind ein Koffer und zwei Akkus enthalten.",
    "Die LED-Leuchte erhellt den Arbeitsbereich auch in dunklen Ecken.",
    "Eine Sanftanlauf-Funktion schützt Material und Werkzeug.",
    "Das robuste Gehäuse übersteht auch den harten Baustellenalltag.",
    "Mit wenigen Handgriffen ist das Zubehör gewechselt.",
    "Die Drehzahl lässt sich stufenlos regeln.",
)
MONTHS_EN = (
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
)  # fmt: skip
AUTHORS = (
    "Ada Lovelace", "Grace Hopper", "Alan Kay", "Edsger Dijkstra", "Barbara Liskov",
    "Donald Knuth", "Margaret Hamilton", "Ken Thompson", "Frances Allen", "John McCarthy",
)  # fmt: skip
TAGS = ("simplicity", "change", "learning", "humor", "truth", "work", "time", "code")
WORDS = (
    "the", "best", "way", "to", "predict", "future", "is", "invent", "it", "simple",
    "things", "should", "be", "never", "more", "than", "necessary", "programs", "people",
    "read", "machines", "only", "write", "errors", "are", "lessons", "we", "learn",
)  # fmt: skip


@dataclass(frozen=True)
class Product:
    sku: str
    slug: str
    name: str
    category: str
    brand: str
    price: float
    colour: str
    material: str
    variants: tuple[str, ...]
    images: int
    rating: int  # filled stars of 5
    reviews: int
    description: tuple[str, ...]


@dataclass(frozen=True)
class Quote:
    quote_id: str
    text: str
    author: str
    tags: tuple[str, ...]
    year: int
    month: int
    day: int
    likes: int


def slugify(text: str) -> str:
    table = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", " ": "-"})
    return "".join(c for c in text.lower().translate(table) if c.isalnum() or c == "-")


def products(seed: int, count: int) -> list[Product]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        category = CATEGORIES[n % len(CATEGORIES)]
        name = f"{rng.choice(BRANDS)} {NOUNS[category]} {rng.choice(ADJECTIVES)} {n + 100}"
        variants = tuple(rng.sample(("18 V", "12 V", "36 V", "Solo", "Set"), rng.randint(1, 3)))
        out.append(
            Product(
                sku=f"WS-{10000 + n}",
                slug=slugify(name),
                name=name,
                category=category,
                brand=name.split(" ")[0],
                price=round(rng.uniform(9, 2400), 2),
                colour=rng.choice(COLOURS),
                material=rng.choice(MATERIALS),
                variants=variants,
                images=rng.randint(1, 4),
                rating=rng.randint(1, 5),
                reviews=rng.choice((rng.randint(0, 999), rng.randint(10, 2500) * 100)),
                description=tuple(rng.sample(SENTENCES, rng.randint(3, 6))),
            )
        )
    return out


def quotes(seed: int, count: int) -> list[Quote]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 22))]
        text = " ".join(words).capitalize() + "."
        out.append(
            Quote(
                quote_id=f"q{4000 + n}",
                text=text,
                author=rng.choice(AUTHORS),
                tags=tuple(rng.sample(TAGS, rng.randint(1, 3))),
                year=rng.randint(2015, 2024),
                month=rng.randint(1, 12),
                day=rng.randint(1, 28),
                likes=rng.choice((rng.randint(0, 999), rng.randint(1, 900) * 1000)),
            )
        )
    return out
