"""cursos: a Spanish online-course shop whose home page is a landing page (a hero, selling
points, testimonials: repeated quotes with their authors that are no items, and a "Ver
todos los cursos" button). The catalogue (``/cursos?pagina=N``, ``/categoria/<slug>``)
leads to course pages with a two-column ``<td>`` table (Precio, Profesor, Nivel, Duración,
Referencia), "4,7 de 5 · 1.234 opiniones" in one line and breadcrumbs in ``nav ul``."""

from __future__ import annotations

import random
from dataclasses import dataclass

from standins.plain_sites.site import (
    Built,
    Catalog,
    Pager,
    Truth,
    document,
    esc,
    number,
    paragraphs,
)
from standins.plain_sites.words import SENTENCES_ES, count_eu, money_eu, person, slug, text

CATEGORIES = {"diseno": "Diseño", "programacion": "Programación", "fotografia": "Fotografía",
              "marketing": "Marketing"}  # fmt: skip
TOPICS = {"diseno": ("Figma", "Tipografía", "Diseño de logotipos"),
          "programacion": ("Python", "JavaScript", "SQL"),
          "fotografia": ("Fotografía de retrato", "Lightroom", "Fotografía nocturna"),
          "marketing": ("SEO", "Redes sociales", "Email marketing")}  # fmt: skip
LEVELS = ("Principiante", "Intermedio", "Avanzado")
PER_PAGE = 10


@dataclass(frozen=True)
class Course:
    ref: str
    title: str
    category: str
    teacher: str
    level: str
    hours: int
    price: float
    rating: float
    opinions: int
    description: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"/cursos/{slug(self.title)}"


def courses(seed: int, count: int) -> list[Course]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        category = list(CATEGORIES)[n % len(CATEGORIES)]
        level = rng.choice(LEVELS)
        out.append(
            Course(
                ref=f"CU-{3100 + n}",
                title=f"{rng.choice(TOPICS[category])}: nivel {level.lower()} ({n + 1})",
                category=category,
                teacher=person(rng),
                level=level,
                hours=rng.randint(2, 40),
                price=float(rng.choice((19, 29, 49, 79, 129, 1299))) + rng.choice((0, 0.99)),
                rating=rng.randint(30, 50) / 10,
                opinions=rng.randint(5, 25000),
                description=tuple(text(rng, SENTENCES_ES, 2, 3)),
            )
        )
    return out


def _page(title: str, body: str) -> str:
    header = (
        '<header class="cabecera"><a class="logo" href="/">Aula Abierta</a><nav>'
        '<a href="/cursos">Cursos</a> <a href="/empresas">Para empresas</a> '
        '<a href="/entrar">Entrar</a></nav></header>'
    )
    footer = '<footer class="pie"><p>© Aula Abierta S.L. Todos los derechos reservados.</p>'
    footer += "</footer>"
    return document(f"{title} | Aula Abierta", f"{header}<main>{body}</main>{footer}", lang="es")


def _card(course: Course) -> str:
    return (
        f'<article class="curso"><a href="{course.path}"><img src="/img/{course.ref}.png" alt="">'
        f"<h2>{esc(course.title)}</h2></a><p>{esc(course.teacher)}</p>"
        f"<span>{money_eu(course.price)}</span></article>"
    )


def _catalog(title: str, base: str, items: list[Course], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    more = f'<a class="siguiente" href="{base}?pagina={page + 1}">Siguiente »</a>'
    links = "".join(f'<a href="/categoria/{k}">{v}</a> ' for k, v in CATEGORIES.items())
    body = (
        f'<h1>{esc(title)}</h1><p class="filtros">{links}</p>'
        f'<section class="rejilla">{"".join(_card(c) for c in pager.window(items))}</section>'
        f"{more if page < pager.pages else ''}"
    )
    return _page(title, body)


def _course(course: Course) -> str:
    crumbs = (
        '<nav class="migas"><ul><li><a href="/">Inicio</a></li>'
        f'<li><a href="/categoria/{course.category}">{CATEGORIES[course.category]}</a></li>'
        f"<li>{esc(course.title)}</li></ul></nav>"
    )
    rating = f"{course.rating:.1f}".replace(".", ",")
    facts = (
        ("Precio", money_eu(course.price)),
        ("Profesor", course.teacher),
        ("Nivel", course.level),
        ("Duración", f"{course.hours} horas"),
        ("Referencia", course.ref),
    )
    rows = "".join(f"<tr><td>{k}</td><td>{esc(v)}</td></tr>" for k, v in facts)
    body = (
        f'{crumbs}<div class="portada"><img src="/img/{course.ref}.png" alt=""><div>'
        f"<h1>{esc(course.title)}</h1>"
        f'<div class="valoracion">{rating} de 5 · {count_eu(course.opinions)} opiniones</div>'
        f'<table class="ficha">{rows}</table><a class="comprar" href="/carrito">Comprar ahora</a>'
        f"</div></div><h2>Descripción</h2>{paragraphs(course.description)}"
    )
    return _page(course.title, body)


def _landing() -> str:
    said = (
        ("Aprendí más en un mes que en un año por mi cuenta. Lo recomiendo.", "Lucía M."),
        ("Los profesores responden rápido y los ejercicios son muy útiles.", "Jorge R."),
        ("Gracias al curso conseguí mi primer trabajo como diseñadora.", "Marta S."),
    )
    quotes = "".join(
        f'<blockquote class="testimonio"><p>{esc(q)}</p><cite>{esc(who)}</cite></blockquote>'
        for q, who in said
    )
    body = (
        '<section class="hero"><h1>Aprende a tu ritmo</h1><p>Cursos en línea impartidos por '
        'profesionales, con certificado.</p><a class="boton" href="/cursos">Ver todos los cursos'
        '</a></section><section class="ventajas"><div><h3>Acceso de por vida</h3><p>Vuelve a '
        "las lecciones cuando quieras.</p></div><div><h3>Certificado</h3><p>Demuestra lo que "
        "has aprendido.</p></div><div><h3>Comunidad</h3><p>Miles de alumnos como tú.</p></div>"
        f'</section><section class="opiniones"><h2>Lo que dicen nuestros alumnos</h2>{quotes}'
        "</section>"
    )
    return _page("Cursos en línea", body)


def build(seed: int, count: int) -> Built:
    items = courses(seed, count)
    catalog = Catalog()
    for course in items:
        catalog.add(course.path, course, course.category)

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            return _landing()
        if path == "/cursos":
            return _catalog("Todos los cursos", path, items, number(query, "pagina"))
        if path.startswith("/categoria/") and (key := path[11:]) in CATEGORIES:
            shown = catalog.groups.get(key, [])
            return _catalog(CATEGORIES[key], path, shown, number(query, "pagina"))
        if (course := catalog.by_key.get(path)) is not None:
            return _course(course)
        return None

    return Built(render, _truth(items), description="a landing page home, Spanish")


def _truth(items: list[Course]) -> Truth:
    expected = {
        course.path: {
            "product_id": course.ref,
            "name": course.title,
            "price": course.price,
            "currency": "EUR",
            "rating": course.rating,
            "review_count": course.opinions,
            "category": CATEGORIES[course.category],
            "breadcrumbs": ["Inicio", CATEGORIES[course.category], course.title],
            "description": "\n\n".join(course.description),
            "images": [f"/img/{course.ref}.png"],
        }
        for course in items
    }
    return Truth("product", "url", expected, ("home", "listing", "detail"))
