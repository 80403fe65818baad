"""The demo store's catalog: a deterministic function of (seed, n_products, revision).

``build_catalog(seed, n)`` gives revision 0. ``catalog.revised(r)`` derives revision ``r``
from ``catalog``: it changes exactly ``round(change_fraction * len(products))`` existing
products (price and/or description; about ``STOCK_CHANGE_SHARE`` of them also go out of
stock or come back, from a random stream of their own) and adds exactly
``round(add_fraction * len(products))`` new ones, and records which skus changed and
which were added *relative to ``catalog``*.
``build_catalog(seed, n, revision=r)`` chains ``revised(1) ... revised(r)`` from revision 0.

Descriptions are built from per-product ``ProductTraits`` (product type, material,
features, use case, colour, template variant); the traits are exposed so tests can write
paraphrased queries for a product without parsing its prose.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import Any

from standins.demo_site.vocabulary import (
    CATEGORIES,
    COLOURS,
    FIRST_NAMES,
    LAST_INITIALS,
    MODEL_SUFFIXES,
    MODEL_WORDS,
    REVIEW_BODIES,
    REVIEW_TITLES,
    ProductType,
)

CURRENCY = "EUR"
AVAILABILITIES = ("InStock", "OutOfStock", "PreOrder")
# Of a revision's changed products, the share whose availability also moves (in stock <->
# out of stock; a pre-order comes in stock).
STOCK_CHANGE_SHARE = 0.3
MAX_REVIEWS = 8
# Dates are derived from fixed epochs, never the clock, so every run renders the same bytes.
_BASE_DATE = dt.date(2024, 1, 1)
_REVISION_DATE = dt.date(2024, 7, 1)
_REVIEW_START = dt.date(2023, 1, 1)


@dataclass(frozen=True, slots=True)
class Category:
    slug: str
    name: str


@dataclass(frozen=True, slots=True)
class Review:
    author: str
    rating: int
    title: str
    body: str
    date: str  # ISO date, YYYY-MM-DD

    def to_dict(self) -> dict[str, Any]:
        return {
            "author": self.author,
            "rating": self.rating,
            "title": self.title,
            "body": self.body,
            "date": self.date,
        }


@dataclass(frozen=True, slots=True)
class Product:
    sku: str
    name: str
    brand: str
    category_slug: str
    category: str  # display name
    price: float  # EUR, two decimals
    currency: str
    availability: str  # InStock | OutOfStock | PreOrder (schema.org names)
    description: str
    rating: float  # 1.0-5.0, one decimal; the reviews' mean when there are reviews
    review_count: int
    reviews: tuple[Review, ...]
    image: str  # path on the site
    url: str  # path on the site: /product/<sku>

    def to_dict(self, base_url: str = "") -> dict[str, Any]:
        """The product as a crawler should extract it (``url``/``image`` joined to base)."""
        base = base_url.rstrip("/")
        return {
            "sku": self.sku,
            "url": base + self.url,
            "name": self.name,
            "brand": self.brand,
            "category": self.category,
            "category_slug": self.category_slug,
            "price": self.price,
            "currency": self.currency,
            "availability": self.availability,
            "rating": self.rating,
            "review_count": self.review_count,
            "description": self.description,
            "image": base + self.image,
            "reviews": [review.to_dict() for review in self.reviews],
        }


@dataclass(frozen=True, slots=True)
class ProductTraits:
    """What a description is generated from (the source of truth for search tests)."""

    product_type: str
    material: str
    features: tuple[str, ...]  # 1-3 entries
    use_case: str
    colour: str
    variant: int  # picks the sentence templates


@dataclass(frozen=True)
class Catalog:
    seed: int
    n_products: int
    revision: int
    categories: tuple[Category, ...]
    products: tuple[Product, ...]  # ordered by sku
    traits: dict[str, ProductTraits] = field(repr=False)
    lastmod: dict[str, str] = field(repr=False)  # sku -> ISO date of the last change
    changed_skus: frozenset[str] = frozenset()
    added_skus: frozenset[str] = frozenset()

    @cached_property
    def by_sku(self) -> dict[str, Product]:
        return {product.sku: product for product in self.products}

    @cached_property
    def by_category(self) -> dict[str, tuple[Product, ...]]:
        grouped: dict[str, list[Product]] = {category.slug: [] for category in self.categories}
        for product in self.products:
            grouped[product.category_slug].append(product)
        return {slug: tuple(products) for slug, products in grouped.items()}

    @cached_property
    def category_by_slug(self) -> dict[str, Category]:
        return {category.slug: category for category in self.categories}

    def revised(
        self, revision: int, change_fraction: float = 0.05, add_fraction: float = 0.02
    ) -> Catalog:
        """Revision ``revision`` derived from this catalog (see the module docstring)."""
        if not 0.0 <= change_fraction <= 1.0 or not add_fraction >= 0.0:
            raise ValueError("fractions must be within [0, 1] (add_fraction >= 0)")
        rng = random.Random(f"demo-revision:{self.seed}:{self.n_products}:{revision}")
        # Stock moves come from a stream of their own: the products, prices and
        # descriptions ``rng`` picks stay what they were before availability changed.
        stock_rng = random.Random(f"demo-availability:{self.seed}:{self.n_products}:{revision}")
        n_changed = round(change_fraction * len(self.products))
        n_added = round(add_fraction * len(self.products))
        changed = sorted(rng.sample([p.sku for p in self.products], n_changed))
        date = (_REVISION_DATE + dt.timedelta(days=7 * max(revision - 1, 0))).isoformat()

        by_sku = dict(self.by_sku)
        traits = dict(self.traits)
        lastmod = dict(self.lastmod)
        types = {(v.slug, t.name): t for v in CATEGORIES for t in v.types}
        for sku in changed:
            product = by_sku[sku]
            kind = rng.choice(("price", "description", "both"))
            if kind in ("price", "both"):
                product = replace(product, price=_changed_price(rng, product.price))
            if kind in ("description", "both"):
                ptype = types[(product.category_slug, traits[sku].product_type)]
                new_traits = _changed_traits(rng, traits[sku], ptype)
                traits[sku] = new_traits
                product = replace(product, description=_describe(product, new_traits))
            if stock_rng.random() < STOCK_CHANGE_SHARE:
                product = replace(product, availability=_restocked(product.availability))
            by_sku[sku] = product
            lastmod[sku] = date

        generator = _Generator(rng, self.products, traits)
        next_index = max(_sku_index(p.sku) for p in self.products) + 1 if self.products else 1
        added: list[str] = []
        for index in range(next_index, next_index + n_added):
            product, product_traits = generator.product(index)
            by_sku[product.sku] = product
            traits[product.sku] = product_traits
            lastmod[product.sku] = date
            added.append(product.sku)

        return Catalog(
            seed=self.seed,
            n_products=self.n_products,
            revision=revision,
            categories=self.categories,
            products=tuple(sorted(by_sku.values(), key=lambda p: _sku_index(p.sku))),
            traits=traits,
            lastmod=lastmod,
            changed_skus=frozenset(changed),
            added_skus=frozenset(added),
        )


@cache  # a catalog is frozen and costs ~0.5 s to build: one per set of inputs, per process
def build_catalog(seed: int = 7, n_products: int = 1200, revision: int = 0) -> Catalog:
    """The catalog for ``seed``/``n_products`` at ``revision`` (0 = the base catalog)."""
    if n_products < 1:
        raise ValueError("n_products must be positive")
    rng = random.Random(f"demo-catalog:{seed}:{n_products}")
    generator = _Generator(rng, (), {})
    products: list[Product] = []
    traits: dict[str, ProductTraits] = {}
    lastmod: dict[str, str] = {}
    for index in range(1, n_products + 1):
        product, product_traits = generator.product(index)
        products.append(product)
        traits[product.sku] = product_traits
        lastmod[product.sku] = (_BASE_DATE + dt.timedelta(days=rng.randrange(180))).isoformat()
    catalog = Catalog(
        seed=seed,
        n_products=n_products,
        revision=0,
        categories=tuple(Category(v.slug, v.name) for v in CATEGORIES),
        products=tuple(products),
        traits=traits,
        lastmod=lastmod,
    )
    for step in range(1, revision + 1):
        catalog = catalog.revised(step)
    return catalog


def sku_for(index: int) -> str:
    return f"DM-{index:05d}"


def _sku_index(sku: str) -> int:
    return int(sku.rsplit("-", 1)[1])


class _Generator:
    """Draws products from one RNG, keeping names unique and descriptions far apart."""

    CANDIDATES = 16

    def __init__(
        self,
        rng: random.Random,
        existing: tuple[Product, ...],
        traits: dict[str, ProductTraits],
    ) -> None:
        self.rng = rng
        self.names = {p.name for p in existing}
        # (category, type) -> trait signatures of the products drawn so far.
        self.siblings: dict[tuple[str, str], list[frozenset[str]]] = {}
        self.pair_use: dict[tuple[str, str, str], int] = {}
        for p in existing:
            if (t := traits.get(p.sku)) is not None:
                self.siblings.setdefault((p.category_slug, t.product_type), []).append(
                    _signature(t)
                )
                pair = (p.category_slug, t.product_type, t.material)
                self.pair_use[pair] = self.pair_use.get(pair, 0) + 1

    def product(self, index: int) -> tuple[Product, ProductTraits]:
        rng = self.rng
        vocab = CATEGORIES[(index - 1) % len(CATEGORIES)]
        # Types cycle so every category covers each type evenly.
        ptype = vocab.types[((index - 1) // len(CATEGORIES)) % len(vocab.types)]
        product_type = ptype.name
        # The least used material for this type, so (type, material) pairs spread out.
        materials = list(ptype.materials)
        rng.shuffle(materials)
        material = min(materials, key=lambda m: self.pair_use.get((vocab.slug, product_type, m), 0))
        pair = (vocab.slug, product_type, material)
        self.pair_use[pair] = self.pair_use.get(pair, 0) + 1

        # Of several random drafts keep the one least like its siblings of the same type
        # (max-min Jaccard on traits), so a paraphrase of one description singles it out.
        siblings = self.siblings.setdefault((vocab.slug, product_type), [])
        best: tuple[float, ProductTraits] | None = None
        for _ in range(self.CANDIDATES):
            draft = ProductTraits(
                product_type=product_type,
                material=material,
                features=tuple(rng.sample(ptype.features, rng.choice((1, 2, 2, 3, 3)))),
                use_case=rng.choice(ptype.uses),
                colour=rng.choice(COLOURS),
                variant=rng.randrange(54),
            )
            signature = _signature(draft)
            closeness = max((_jaccard(signature, other) for other in siblings), default=0.0)
            if best is None or closeness < best[0]:
                best = (closeness, draft)
        assert best is not None
        traits = best[1]
        siblings.append(_signature(traits))

        brand = rng.choice(vocab.brands)
        for _ in range(1000):
            model = rng.choice(MODEL_WORDS) + rng.choice(MODEL_SUFFIXES)
            name = f"{brand} {model} {_title(_name_form(product_type))}"
            if name not in self.names:
                break
        else:
            # Model words are exhausted for this brand and type: the sku keeps it unique.
            name = f"{name} {sku_for(index)}"
        self.names.add(name)

        sku = sku_for(index)
        quality = rng.uniform(2.2, 5.0)
        reviews = _reviews(rng, traits, quality)
        rating = (
            round(sum(r.rating for r in reviews) / len(reviews), 1)
            if reviews
            else round(quality, 1)  # stars given without a written review
        )
        product = Product(
            sku=sku,
            name=name,
            brand=brand,
            category_slug=vocab.slug,
            category=vocab.name,
            price=_price(rng, vocab.price_range),
            currency=CURRENCY,
            availability=rng.choices(AVAILABILITIES, weights=(75, 15, 10))[0],
            description="",
            rating=min(5.0, max(1.0, rating)),
            review_count=len(reviews),
            reviews=reviews,
            image=f"/images/{sku}.svg",
            url=f"/product/{sku}",
        )
        return replace(product, description=_describe(product, traits)), traits


def _signature(traits: ProductTraits) -> frozenset[str]:
    v = traits.variant
    return frozenset(
        (
            f"m:{traits.material}",
            f"u:{traits.use_case}",
            f"c:{traits.colour}",
            f"o:{v % 3}",  # opener template
            f"s:{(v // 6) % 3}",  # use-case sentence template
            *(f"f:{feature}" for feature in traits.features),
        )
    )


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b)


def _price(rng: random.Random, price_range: tuple[float, float]) -> float:
    low, high = price_range
    raw = math.exp(rng.uniform(math.log(low), math.log(high)))
    ending = rng.choice((0.01, 0.01, 0.51, 0.05, 0.0))
    return round(max(1.0, round(raw)) - ending, 2)


def _changed_price(rng: random.Random, price: float) -> float:
    while True:
        factor = rng.choice((rng.uniform(0.80, 0.95), rng.uniform(1.05, 1.20)))
        new = round(max(1.0, round(price * factor)) - 0.01, 2)
        if new != price:
            return new


def _restocked(availability: str) -> str:
    return "OutOfStock" if availability == "InStock" else "InStock"


def _changed_traits(rng: random.Random, traits: ProductTraits, ptype: ProductType) -> ProductTraits:
    """A visibly different description: swap a feature or the use case (or both)."""
    features = list(traits.features)
    use_case = traits.use_case
    choice = rng.choice(("feature", "use", "both"))
    if choice in ("feature", "both"):
        unused = [f for f in ptype.features if f not in features]
        features[rng.randrange(len(features))] = rng.choice(unused)
    if choice in ("use", "both"):
        use_case = rng.choice([u for u in ptype.uses if u != use_case])
    return replace(traits, features=tuple(features), use_case=use_case)


def _reviews(rng: random.Random, traits: ProductTraits, quality: float) -> tuple[Review, ...]:
    count = rng.choice(range(MAX_REVIEWS + 1))
    reviews = []
    for _ in range(count):
        stars = min(5, max(1, round(rng.gauss(quality, 0.9))))
        feature = rng.choice(traits.features)
        body = rng.choice(REVIEW_BODIES[stars]).format(
            ptype=_name_form(traits.product_type),
            use=traits.use_case,
            feature=feature,
            Feature=feature[0].upper() + feature[1:],
        )
        date = _REVIEW_START + dt.timedelta(days=rng.randrange(730))
        reviews.append(
            Review(
                author=f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_INITIALS)}.",
                rating=stars,
                title=rng.choice(REVIEW_TITLES[stars]),
                body=body,
                date=date.isoformat(),
            )
        )
    reviews.sort(key=lambda r: r.date, reverse=True)  # newest first, as stores show them
    return tuple(reviews)


_OPENERS = (
    "The {name} is {a_type} made from {material}, with {f1}.",
    "Crafted from {material}, this {ptype} from {brand} comes with {f1}.",
    "Meet the {name}: {a_type} in {material} that features {f1}.",
)
_DETAILS = ("It also offers {rest}.", "Thoughtful extras include {rest}.")
_USES = (
    "Designed for {use}, it comes in {colour}.",
    "A great pick for {use}, this version is finished in {colour}.",
    "Ideal for {use}; choose it in {colour}.",
)
_CLOSERS = (
    "",
    "{brand} backs it with a {years}-year warranty.",
    "Each one is checked by hand before it leaves the {brand} workshop.",
)


def _describe(product: Product, traits: ProductTraits) -> str:
    """Two to four sentences; a pure function of the product's name, brand and traits."""
    v = traits.variant
    values = {
        "name": product.name,
        "brand": product.brand,
        "ptype": traits.product_type,
        "a_type": _with_article(traits.product_type),
        "material": traits.material,
        "f1": traits.features[0],
        "rest": " and ".join(traits.features[1:]),
        "use": traits.use_case,
        "colour": traits.colour,
        "years": 2 + v % 4,
    }
    sentences = [_OPENERS[v % 3]]
    if len(traits.features) > 1:
        sentences.append(_DETAILS[(v // 3) % 2])
    sentences.append(_USES[(v // 6) % 3])
    if closer := _CLOSERS[(v // 18) % 3]:
        sentences.append(closer)
    return " ".join(sentence.format(**values) for sentence in sentences)


def _name_form(product_type: str) -> str:
    """'pair of running shoes' -> 'running shoes' (what goes into a product name)."""
    for prefix in ("pair of ", "set of "):
        if product_type.startswith(prefix):
            return product_type[len(prefix) :]
    return product_type


def _title(text: str) -> str:
    # str.title() would give "Chef'S"; only upper-case each word's first letter.
    return " ".join(word[:1].upper() + word[1:] for word in text.split())


def _with_article(noun: str) -> str:
    vowel = noun[:1].lower() in "aeio" or (noun[:1].lower() == "u" and not noun.startswith("USB"))
    return f"{'an' if vowel else 'a'} {noun}"
