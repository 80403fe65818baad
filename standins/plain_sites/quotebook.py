"""quotebook: quotes, ten a page, each a little microdata item (``itemscope``
``CreativeWork`` with a ``text`` property and ``keywords`` in a ``<meta>``) and nothing
else structured: no id, no detail page of its own. The home page is the first page of
quotes; ``/page/N/``, ``/tag/<tag>/page/N/`` page through ``li.next a`` ("Next →");
author pages (``/author/<Name>/``) describe the person, not a quote."""

from __future__ import annotations

import random
from dataclasses import dataclass

from standins.plain_sites.site import Built, Pager, Truth, document, esc
from standins.plain_sites.words import FIRST, LAST

TAGS = ("love", "life", "humor", "books", "truth", "friendship", "change", "simplicity")
WORDS = (
    "the", "world", "as", "we", "have", "created", "it", "is", "a", "process", "of", "our",
    "thinking", "cannot", "be", "changed", "without", "changing", "there", "are", "only",
    "two", "ways", "to", "live", "your", "life", "one", "nothing", "miracle", "everything",
)  # fmt: skip
PER_PAGE = 10


@dataclass(frozen=True)
class Quote:
    text: str
    author: str
    tags: tuple[str, ...]

    @property
    def author_path(self) -> str:
        return "/author/" + self.author.replace(" ", "-").replace(".", "") + "/"


def quotes(seed: int, count: int) -> list[Quote]:
    rng = random.Random(seed)
    authors = [f"{f} {last}" for f, last in zip(FIRST, rng.sample(LAST, len(FIRST)), strict=False)]
    out = []
    seen = set()
    while len(out) < count:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(9, 26)))
        text = words[0].upper() + words[1:] + rng.choice((".", ".", "!", "?"))
        if text in seen:
            continue
        seen.add(text)
        tags = tuple(rng.sample(TAGS, rng.randint(0, 3)))
        out.append(Quote(text, rng.choice(authors[:12]), tags))
    return out


def _quote(quote: Quote) -> str:
    links = "".join(f'<a class="tag" href="/tag/{t}/page/1/">{t}</a>' for t in quote.tags)
    return (
        '<div class="quote" itemscope itemtype="http://schema.org/CreativeWork">'
        f'<span class="text" itemprop="text">“{esc(quote.text)}”</span>'
        f'<span>by <small class="author" itemprop="author">{esc(quote.author)}</small> '
        f'<a href="{quote.author_path}">(about)</a></span><div class="tags">Tags: '
        f'<meta class="keywords" itemprop="keywords" content="{",".join(quote.tags)}"> '
        f"{links}</div></div>"
    )


def _page(body: str, title: str = "Quotes") -> str:
    header = (
        '<div class="container"><div class="row header-box"><div class="col-md-8"><h1>'
        '<a href="/" style="text-decoration: none">Quote Book</a></h1></div>'
        '<div class="col-md-4"><p><a href="/login">Login</a></p></div></div>'
    )
    side = "".join(
        f'<span class="tag-item"><a class="tag" href="/tag/{t}/">{t}</a></span>' for t in TAGS
    )
    return document(
        title,
        f'{header}<div class="row"><div class="col-md-8">{body}</div><div class="col-md-4 '
        f'tags-box"><h2>Top Ten tags</h2>{side}</div></div></div>'
        '<footer class="footer"><div class="container"><p>Quotes by people.</p></div></footer>',
        lang="en",
    )


def _list(items: list[Quote], page: int, base: str) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None or not items:
        return None
    nav = ""
    if page > 1:
        nav += f'<li class="previous"><a href="{base}page/{page - 1}/">← Previous</a></li>'
    if page < pager.pages:
        nav += (
            f'<li class="next"><a href="{base}page/{page + 1}/">Next '
            '<span aria-hidden="true">→</span></a></li>'
        )
    shown = "".join(_quote(q) for q in pager.window(items))
    return _page(f'{shown}<nav><ul class="pager">{nav}</ul></nav>')


def build(seed: int, count: int) -> Built:
    items = quotes(seed, count)
    authors = {q.author_path: q.author for q in items}

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _list(items, 1, "/")
        if len(parts) == 2 and parts[0] == "page" and parts[1].isdigit():
            return _list(items, int(parts[1]), "/")
        if parts[0] == "tag" and len(parts) in (2, 4) and parts[1] in TAGS:
            tagged = [q for q in items if parts[1] in q.tags]
            page = int(parts[3]) if len(parts) == 4 and parts[3].isdigit() else 1
            if len(parts) == 4 and (parts[2] != "page" or not parts[3].isdigit()):
                return None
            return _list(tagged, page, f"/tag/{parts[1]}/")
        if path in authors:
            name = authors[path]
            said = sum(q.author == name for q in items)
            body = (
                f'<div class="author-details"><h3 class="author-title">{esc(name)}</h3>'
                f'<p><strong>Quotes here:</strong> <span class="author-born-date">{said}</span>'
                '</p><div class="author-description">A person who said things worth '
                "writing down.</div></div>"
            )
            return _page(body, name)
        return None

    robots = "User-agent: *\nDisallow: /login\nDisallow: /__control\n"
    return Built(render, _truth(items), robots, "quotes, many a page, light microdata")


def _truth(items: list[Quote]) -> Truth:
    expected = {}
    for quote in items:
        fields: dict[str, object] = {"text": quote.text, "author": quote.author}
        if quote.tags:
            fields["tags"] = list(quote.tags)
        expected[quote.text] = fields
    return Truth("quote", "text", expected, ("items",))
