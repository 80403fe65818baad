"""newsroom: a local news site. Story cards on the home page and on section pages
(``/section/<name>?page=N``, an "Older stories" link), articles at dated paths
(``/2024/03/05/<slug>``) with a byline ("By <a rel=author>Jane Doe</a>"), a dateline
("Published: 5 March 2024", sometimes "Updated: ..."), a standfirst, a lead picture, the
story in paragraphs, topic links, and a "Most read" list beside it."""

from __future__ import annotations

import datetime as dt
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
from standins.plain_sites.words import SENTENCES_EN, person, slug, text

SECTIONS = {"politics": "Politics", "business": "Business", "sport": "Sport", "culture": "Culture"}
SUBJECTS = ("Council", "Bridge", "Harbour", "Library", "Market", "Festival", "Stadium", "Budget")
VERBS = ("approves", "delays", "rejects", "reopens", "expands", "reviews", "questions", "backs")
OBJECTS = ("new plan", "funding bid", "late changes", "river scheme", "ticket prices", "old rules")
TOPICS = ("Transport", "Housing", "Schools", "Climate", "Jobs", "Arts", "Health")
EPOCH = dt.date(2024, 6, 30)
PER_PAGE = 10


@dataclass(frozen=True)
class Story:
    sid: int
    headline: str
    section: str
    author: str
    published: dt.date
    updated: dt.date | None
    standfirst: str
    body: tuple[str, ...]
    topics: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"/{self.published:%Y/%m/%d}/{slug(self.headline)}-{self.sid}"

    @property
    def image(self) -> str:
        return f"/images/2024/{self.sid}-lead.jpg"


def stories(seed: int, count: int) -> list[Story]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        published = EPOCH - dt.timedelta(days=n)
        headline = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        out.append(
            Story(
                sid=700 + n,
                headline=f"{headline} after {rng.randint(2, 40)} months",
                section=list(SECTIONS)[n % len(SECTIONS)],
                author=person(rng),
                published=published,
                updated=published + dt.timedelta(days=1) if rng.random() < 0.3 else None,
                standfirst=rng.choice(SENTENCES_EN),
                body=tuple(text(rng, SENTENCES_EN, 4, 7)),
                topics=tuple(rng.sample(TOPICS, rng.randint(1, 3))),
            )
        )
    return out


def day(date: dt.date) -> str:
    return f"{date.day} {date:%B %Y}"


def _page(title: str, body: str) -> str:
    nav = "".join(f'<a href="/section/{k}">{v}</a>' for k, v in SECTIONS.items())
    header = (
        '<header class="masthead"><a class="logo" href="/">The Evening Ledger</a>'
        f'<nav class="sections">{nav}</nav></header>'
    )
    footer = '<footer class="colophon"><p>© The Evening Ledger</p></footer>'
    return document(f"{title} \u2013 The Evening Ledger", f"{header}{body}{footer}", lang="en-GB")


def _card(story: Story) -> str:
    return (
        f'<article class="story-card"><h2><a href="{story.path}">{esc(story.headline)}</a></h2>'
        f'<p class="dek">{esc(story.standfirst)}</p>'
        f'<p class="meta">By {esc(story.author)} · {day(story.published)}</p></article>'
    )


def _section(key: str, items: list[Story], page: int) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    more = (
        f'<a class="more" href="/section/{key}?page={page + 1}">Older stories</a>'
        if page < pager.pages
        else ""
    )
    cards = "".join(_card(story) for story in pager.window(items))
    body = f'<main><h1 class="section-title">{SECTIONS[key]}</h1>{cards}{more}</main>'
    return _page(SECTIONS[key], body)


def _story(story: Story, most_read: list[Story]) -> str:
    dateline = f"Published: {day(story.published)}"
    if story.updated:
        dateline += f"<br>Updated: {day(story.updated)}"
    topics = " ".join(f'<a href="/topic/{slug(t)}">{t}</a>' for t in story.topics)
    popular = "".join(f'<li><a href="{s.path}">{esc(s.headline)}</a></li>' for s in most_read)
    author = slug(story.author)
    body = (
        f'<main><div class="kicker"><a href="/section/{story.section}">'
        f"{SECTIONS[story.section]}</a></div><h1>{esc(story.headline)}</h1>"
        f'<p class="standfirst">{esc(story.standfirst)}</p>'
        f'<div class="byline">By <a rel="author" href="/author/{author}">{esc(story.author)}'
        f'</a></div><div class="dateline">{dateline}</div>'
        f'<figure><img src="{story.image}" alt=""><figcaption>Photograph: staff</figcaption>'
        f'</figure><div class="story-body">{paragraphs(story.body)}</div>'
        f'<div class="topics">Topics: {topics}</div></main>'
        f'<aside class="most-read"><h3>Most read</h3><ol>{popular}</ol></aside>'
    )
    return _page(story.headline, body)


def build(seed: int, count: int) -> Built:
    items = stories(seed, count)
    catalog = Catalog()
    for story in items:
        catalog.add(story.path, story, story.section)

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            cards = "".join(_card(story) for story in items[:12])
            return _page("News", f'<main><h1 class="section-title">Top stories</h1>{cards}</main>')
        if path.startswith("/section/") and path[9:] in SECTIONS:
            return _section(path[9:], catalog.groups.get(path[9:], []), number(query, "page"))
        if (story := catalog.by_key.get(path)) is not None:
            return _story(story, items[:5])
        return None

    return Built(render, _truth(items), description="news: bylines, datelines")


def _truth(items: list[Story]) -> Truth:
    expected = {}
    for story in items:
        fields = {
            "title": story.headline,
            "author": story.author,
            "published_at": story.published.isoformat(),
            "summary": story.standfirst,
            "body": "\n\n".join(story.body),
            "category": SECTIONS[story.section],
            "tags": list(story.topics),
            "image": story.image,
        }
        if story.updated:
            fields["updated_at"] = story.updated.isoformat()
        expected[story.path] = fields
    return Truth("article", "url", expected, ("home", "listing", "detail"))
