"""Words the sites' generators draw from (names, places, sentences in a few languages)."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence

FIRST = (
    "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Frances",
    "John", "Radia", "Linus", "Sophie", "Tim", "Hedy", "Katherine", "Dennis", "Anita",
)  # fmt: skip
LAST = (
    "Lovelace", "Hopper", "Kay", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson",
    "Allen", "McCarthy", "Perlman", "Torvalds", "Wilson", "Berners", "Lamarr", "Johnson",
    "Ritchie", "Borg",
)  # fmt: skip
CITIES_UK = (
    "Leeds", "Bristol", "Manchester", "Glasgow", "Cardiff", "Norwich", "York", "Brighton",
    "Sheffield", "Oxford",
)  # fmt: skip
STREETS = ("Elm Road", "Mill Lane", "Station Street", "Church Walk", "Park Avenue", "High Street")
SENTENCES_EN = (
    "It was built to last and it shows in every detail.",
    "Customers keep coming back to it season after season.",
    "The frame is light enough to carry up the stairs without a struggle.",
    "A simple design that does one thing and does it well.",
    "Everything you need is in the box, nothing you do not.",
    "The finish resists scratches, rain and the occasional careless owner.",
    "Setting it up takes ten minutes and no special tools.",
    "Our workshop checks every unit by hand before it ships.",
    "It folds flat, so it fits in a cupboard or the boot of a small car.",
    "Spare parts are kept in stock for at least ten years.",
    "The council met on Tuesday evening to discuss the proposal.",
    "Residents said they had not been consulted about the changes.",
    "The figures published this week tell a different story.",
    "Officials declined to comment on the timing of the announcement.",
    "Similar schemes elsewhere have had mixed results.",
    "A final decision is expected before the end of the month.",
)  # fmt: skip
SENTENCES_IT = (
    "Un vino di grande struttura, dal colore rubino intenso.",
    "Al naso si apre con note di ciliegia matura e spezie dolci.",
    "In bocca è morbido, con tannini eleganti e un finale lungo.",
    "Ideale con carni rosse, selvaggina e formaggi stagionati.",
    "Affinato in botti di rovere per almeno diciotto mesi.",
    "Servire a una temperatura di sedici gradi.",
    "Prodotto in quantità limitata da vigneti di collina.",
)  # fmt: skip
SENTENCES_ES = (
    "Aprenderás los fundamentos paso a paso, con ejemplos reales.",
    "Cada lección incluye ejercicios prácticos y material descargable.",
    "No necesitas experiencia previa para empezar.",
    "Al terminar tendrás un proyecto completo para tu portafolio.",
    "El curso se actualiza cada año con las novedades del sector.",
    "Podrás consultar tus dudas con el profesor en el foro del curso.",
)  # fmt: skip


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def text(rng: random.Random, sentences: Sequence[str], low: int, high: int) -> list[str]:
    """Paragraphs of two or three sentences each."""
    return [
        " ".join(rng.sample(list(sentences), rng.randint(2, 3)))
        for _ in range(rng.randint(low, high))
    ]


def slug(value: str) -> str:
    plain = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")


def money_en(amount: float, sign: str = "$") -> str:
    return f"{sign}{amount:,.2f}"


def money_eu(amount: float) -> str:
    """``1.234,56 €``, as Italian, Spanish or German shops print it."""
    whole, cents = f"{amount:,.2f}".split(".")
    return f"{whole.replace(',', '.')},{cents} €"


def count_eu(value: int) -> str:
    return f"{value:,}".replace(",", ".")
