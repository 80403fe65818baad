"""The saved real pages of the production sites, replayed locally: the scaffold's unedited
fields against the site spiders' output for the same pages (``python -m bench.onboarding
--real-pages``).

Each site's saved pages are served on loopback and read back over HTTP. The site's own
spider reads each page through its page type's callback (``fingerprints.extraction.callbacks``):
its items are the truth. The scaffold reads the same pages as a new site's pages of the
role a person sees (an item page, or a page listing many items as cards; one page or two
of a kind, so no template is compared across pages), decides nothing but the item type
the spider yields (a review becomes the scaffold's ``customer_review``: a profile cannot
build the platform's nested review subject), proposes its rules and reads the pages with
them. Accuracy: of the fields the spider filled that the scaffold's item type has, the
share it read the same (items paired in page order)."""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from itemadapter import ItemAdapter

from bench.onboarding_values import same
from crawlers.profile_schema import PageTable
from crawlers.scaffold.fields import FieldProposal, propose_fields, survey
from crawlers.scaffold.finders import Site
from crawlers.scaffold.item_types import DECLARED, full_declaration, register_declared
from crawlers.scaffold.market import languages_of
from crawlers.scaffold.page import Page
from crawlers.scaffold.people import text_slot
from crawlers.scaffold.records import find_records
from crawlers.scaffold.structured import schema_type
from crawlers.scaffold.study import permalink_rule
from crawlers.scaffold.synth import Choice, Unit
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading, read_items
from fingerprints.baselines.store import FingerprintConfig
from fingerprints.extraction.callbacks import run_callbacks, site_spider
from fingerprints.sampling.fetch import Page as SamplePage
from standins.loopback import Threaded

# site -> (file, the spider's page type, the role a person sees, the page's URL)
REAL: Mapping[str, Sequence[tuple[str, str, str, str]]] = {
    "trustpilot": [
        (f"trustpilot/{d}_2025.html", "company_reviews", "cards", f"https://www.trustpilot.com/review/{d}")
        for d in ("beautytheshop.com", "burgerking.no", "djmania.es")
    ],
    "g2": [
        ("g2/product_reviews_2025.html", "product_reviews", "cards",
         "https://www.g2.com/products/opus-clip/reviews"),
    ],
    "idealista": [
        ("idealista/detail_es_2026.html", "detail", "page",
         "https://www.idealista.com/en/inmueble/106387165/"),
        ("idealista/search_es_2025.html", "search", "cards",
         "https://www.idealista.com/venta-viviendas/lleida-lleida/"),
    ],
    "booking_com": [
        ("booking_com/hotel_2026.html", "hotel", "page",
         "https://www.booking.com/hotel/in/the-taj-mahal-palace-tower.html"),
    ],
    "hermes": [
        ("hermes/category_ca_2025.html", "category", "cards",
         "https://www.hermes.com/ca/en/category/women/bags-and-small-leather-goods/bags-and-clutches/"),
    ],
}  # fmt: skip
# The platform's item types a profile cannot yield, and the scaffold's type for them.
SCAFFOLD_TYPE = {"review": "customer_review"}
SKIPPED_FIELDS = {"url", "job_id", "incomplete"}


@dataclass
class RealRow:
    site: str
    pages: int = 0
    items: tuple[int, int] = (0, 0)  # scaffold's items, spider's
    right: int = 0
    total: int = 0
    wrong: dict[str, int] = field(default_factory=dict)
    note: str = ""

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 0.0


def replay(root: Path, files: Sequence[str]) -> dict[str, bytes]:
    """Each file served on loopback (the stand-ins' server base) and read back over HTTP."""
    app = web.Application()
    app.router.add_static("/", root)
    server = Threaded(app, "real-pages")
    port = server.start()
    try:
        out = {}
        for name in files:
            url = f"http://127.0.0.1:{port}/{urllib.parse.quote(name)}"
            with urllib.request.urlopen(url, timeout=30) as answer:
                out[name] = answer.read()
        return out
    finally:
        server.stop()


def spider_items(
    site: str, pages: Sequence[tuple[str, str, str, str]], bodies: Mapping[str, bytes]
) -> list[list[dict[str, Any]]]:
    config = FingerprintConfig.for_site(site)
    spider = site_spider(site)
    out = []
    for name, page_type, _, url in pages:
        page = SamplePage(url, page_type, 200, {"Content-Type": "text/html"}, bodies[name])
        callbacks = {page_type: config.callbacks[page_type]}
        (output,) = run_callbacks(spider, [page], callbacks, declared=config.declared_callbacks)
        # A list page's entries are its items, or the cards its requests carry.
        found = list(output.items) or list(output.cards)
        out.append([dict(ItemAdapter(item).asdict()) for item in found])
    return out


def scaffold_items(item_type: str, role: str, pages: Sequence[Page]) -> list[list[dict[str, Any]]]:
    """What the scaffold's rules, chosen on these pages, read on them."""
    if item_type in DECLARED:
        register_declared(item_type, full_declaration(item_type))
    languages = languages_of(pages)
    reading = Reading(languages, market(language=languages[0] if languages else None))
    site = Site(languages=languages or ("en",))
    if role == "page":
        units = [Unit(p, p.response.selector) for p in pages]
        css = None
    else:
        best = max(
            (r for p in pages for r in find_records(p) if r.item_score),
            key=lambda r: r.item_score,
            default=None,
        )
        if best is None:
            return [[] for _ in pages]
        units = [
            Unit(p, e)
            for p in pages
            for r in find_records(p)
            if r.signature == best.signature
            for e in r.elements
        ]
        css = best.signature.split(">")[-1]
        site.text_slot = text_slot(units)
    schema = schema_type(pages, item_type) if role == "page" else None
    fields = propose_fields(item_type, units, reading, site, schema, survey(units, site))
    if role == "cards" and (rule := permalink_rule(units)) and (id_field := _id_name(item_type)):
        fields.setdefault(id_field, FieldProposal(id_field, Choice([rule], len(units), len(units))))
    table = PageTable(
        item=schema,
        items=css,
        fields={name: f.rules() for name, f in fields.items() if f.sure and f.rules()},
    )
    return [
        [dict(e.fields) for e in read_items(p.response, table, item_type, reading)] for p in pages
    ]


def compare(
    truth: Sequence[Mapping[str, Any]], found: Sequence[Mapping[str, Any]], row: RealRow
) -> None:
    """Items paired in page order; the spider's filled fields the scaffold's type has."""
    names = set(found[0]) if found else set()
    for expected, item in zip(
        truth, list(found) + [{}] * max(0, len(truth) - len(found)), strict=False
    ):
        for name, value in expected.items():
            if name in SKIPPED_FIELDS or name not in names or value in (None, "", [], {}):
                continue
            row.total += 1
            if same(value, item.get(name), name):
                row.right += 1
            else:
                row.wrong[name] = row.wrong.get(name, 0) + 1


def run_real(root: Path) -> list[RealRow]:
    rows = []
    for site, pages in REAL.items():
        row = RealRow(site, len(pages))
        bodies = replay(root, [name for name, *_ in pages])
        try:
            truth = spider_items(site, pages, bodies)
        except Exception as exc:  # a spider that cannot run here: said, not hidden
            row.note = f"spider: {type(exc).__name__}: {exc}"[:120]
            rows.append(row)
            continue
        item_type = next((t for items in truth for t in [_type_of(items)] if t), None)
        if item_type is None:
            row.note = "the spider yielded no item"
            rows.append(row)
            continue
        item_type = SCAFFOLD_TYPE.get(item_type, item_type)
        for role in ("page", "cards"):
            chosen = [(n, p, r, u) for n, p, r, u in pages if r == role]
            if not chosen:
                continue
            read = [Page(u, html=bodies[n].decode("utf-8", "replace")) for n, _, _, u in chosen]
            found = scaffold_items(item_type, role, read)
            spider = [truth[pages.index(c)] for c in chosen]
            for expected, items in zip(spider, found, strict=True):
                row.items = (row.items[0] + len(items), row.items[1] + len(expected))
                compare(expected, items, row)
        rows.append(row)
    return rows


def _id_name(item_type: str) -> str | None:
    from crawlers.items import schema_by_type

    if item_type in DECLARED:
        return next((n for n, s in full_declaration(item_type).items() if n.endswith("_id")), None)
    return schema_by_type(item_type).id_field


def _type_of(items: Sequence[Mapping[str, Any]]) -> str | None:
    from crawlers.items import registered_types

    if not items:
        return None
    keys = set(items[0])
    for name, schema in registered_types().items():
        if name != "demo_product" and set(schema.field_names) == keys:
            return name
    return None


def table(rows: Sequence[RealRow]) -> str:
    head = f"{'real pages':<14} {'pages':>5} {'items':>11} {'accuracy':>8}  worst fields"
    lines = [head, "-" * len(head)]
    for r in rows:
        worst = ", ".join(f"{n} {c}" for n, c in sorted(r.wrong.items(), key=lambda kv: -kv[1])[:3])
        lines.append(
            f"{r.site:<14} {r.pages:>5} {r.items[0]:>5}/{r.items[1]:<5} {r.accuracy:>8.1%}  "
            f"{worst or r.note or '-'}"
        )
    return "\n".join(lines)
