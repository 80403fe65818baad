"""Finders for where an item sits: its breadcrumb trail (an element named so, e.g.
``nav[aria-label=breadcrumb]``, ``ol.breadcrumb``, ``div.percorso``, a ``BreadcrumbList``;
its entries the list items, or the links and the last text), its category (the trail's
entry before the item, else a listing's link just above its name: a kicker) and the
choices it is sold in (a choice list's options). Pure functions."""

from __future__ import annotations

from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path
from crawlers.scaffold.finders import Hit, Site, separators
from crawlers.scaffold.look import hints, in_chrome, in_other_card, rules_for, text_of, xpath_of
from crawlers.scaffold.synth import Unit
from crawlers.scaffold.urls import matches

__all__ = ["crumb_container", "crumb_entries", "find_breadcrumbs", "find_category", "find_variants"]

_CRUMB_WORDS = {"breadcrumb", "breadcrumbs", "crumb", "crumbs", "migas", "miga", "briciole",
                "percorso", "ariane", "pfad", "brotkrumen", "trail", "breadcrumblist"}  # fmt: skip
_SEPARATORS = separators()


def crumb_container(unit: Unit) -> Any | None:
    """The breadcrumb trail: an element named so (``nav[aria-label=breadcrumb]``,
    ``ol.breadcrumb``, ``div.percorso``, a ``BreadcrumbList``)."""
    for element in unit.root.xpath(".//*[@class or @id or @aria-label or @itemtype]"):
        words = hints(element) | {element.attrib.get("itemtype", "").rsplit("/", 1)[-1].lower()}
        if words & _CRUMB_WORDS and len(element.xpath(".//a")) >= 1:
            inner = element.xpath(".//ol|.//ul")
            return inner[0] if inner and len(inner[0].xpath(".//a")) >= 1 else element
    return None


def crumb_entries(container: Any) -> list[Any]:
    """The trail's entries: list items, else links and the last text element."""
    items = container.xpath("./li | ./*/li")
    if items:
        links = container.xpath(".//a")
        if all(text_of(li).rstrip(_SEPARATORS + " ") != text_of(li) for li in items[:-1]) and links:
            last = items[-1].xpath(".//a|.//*[@aria-current]") or [items[-1]]
            return [*links[: len(items) - 1], last[0]]
        return items
    entries = container.xpath(".//a | ./span | ./strong | ./b | .//*[@aria-current]")
    return [e for e in entries if text_of(e).strip(_SEPARATORS + " ")]


def find_breadcrumbs(unit: Unit, site: Site) -> Hit | None:
    container = crumb_container(unit)
    if container is None:
        return None
    entries = crumb_entries(container)
    if len(entries) < 2:
        return None
    exact = {"xpath": " | ".join(exact_path(e, unit.root) for e in entries), "all": True}
    rules = []
    for css in css_candidates(container, unit.root)[:4]:
        rules += [
            {"css": f"{css} li", "all": True},
            {"css": f"{css} a, {css} [aria-current]", "all": True},
            {"css": f"{css} a, {css} li:last-child", "all": True},
            {"css": f"{css} a, {css} > span, {css} > strong", "all": True},
        ]
    return Hit(exact, rules)


def find_category(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """The trail's entry before the item's own (or its last, when the item is not in it);
    without a trail, the link to a listing just above the name (a kicker: "Politics")."""
    container = crumb_container(unit)
    if container is None:
        return _kicker(unit, site, name)
    entries = crumb_entries(container)
    if len(entries) < 2:
        return None
    named = name is not None and text_of(entries[-1]) == text_of(name)
    if named and len(entries) < 3:
        return None
    element = entries[-2] if named else entries[-1]
    exact, _ = rules_for(element, unit)
    rules = []
    for node in [container, *container.xpath("ancestor::*[position() <= 2]")]:
        for path in xpath_of(node):
            rules += [{"xpath": f"({path}//a)[last()]"}, {"xpath": f"({path}//a)[last()-1]"}]
    for css in css_candidates(container, unit.root)[:3]:
        rules.append({"css": f"{css} li:nth-last-child(2)"})
    return Hit(exact, rules)


def _kicker(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    if name is None or not site.listings or not unit.is_page:
        return None
    near = name.xpath("ancestor::*[position() <= 2]")
    for link in name.xpath("preceding::a[@href][position() <= 3]"):
        url = unit.page.response.urljoin(link.attrib["href"])
        close = any(link.root in set(a.root.iter()) for a in near)
        if close and matches(site.listings, url) and not in_chrome(link) and text_of(link):
            exact, general = rules_for(link, unit)
            return Hit(exact, general, link)
    return None


def find_variants(unit: Unit, site: Site) -> Hit | None:
    """The choices it is sold in: the options of a choice list in the item's own part of
    the page (a prompt such as "Choose..." with an empty value left out)."""
    for select in unit.root.xpath(".//select[option]"):
        if in_chrome_but_form(select) or in_other_card(select, unit):
            continue
        options = [
            o
            for o in select.xpath("./option | ./optgroup/option")
            if o.attrib.get("value", "x") != ""
        ]
        if not options:
            continue
        exact = {"xpath": " | ".join(exact_path(o, unit.root) for o in options), "all": True}
        rules = []
        name = select.attrib.get("name")
        if name and '"' not in name:
            rules.append({"css": f'select[name="{name}"] option:not([value=""])', "all": True})
        rules += [
            {"css": f'{css} option:not([value=""])', "all": True}
            for css in css_candidates(select, unit.root)[:3]
        ]
        return Hit(exact, rules, select)
    return None


def in_chrome_but_form(element: Any) -> bool:
    """In the chrome, a form aside: a product's choice list sits in its buy form."""
    return any(
        node.root.tag in ("header", "footer", "nav", "aside")
        for node in element.xpath("ancestor-or-self::*")
    )
