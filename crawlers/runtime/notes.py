"""Notes one crawl component leaves for a later one about an item (``item_notes``).

Outside ``crawlers.pipelines`` so that spider middlewares (``crawlers.recrawl.context``) and the
pipelines can both use it without importing each other (``crawlers.pipelines.common``
re-exports it).
"""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

_NOTES_ATTR = "_platform_item_notes"


class ItemNotes:
    """Data one pipeline leaves for a later one about an item (dedup -> store verdict).

    Keyed by the item object; the entry keeps the item alive, so its id cannot be
    reused while the note exists. Entries of items that leave the pipelines (stored,
    dropped or failed) are discarded by Scrapy's item signals. ``verdicts`` is set by
    the pipeline that leaves verdicts (dedup), so the store knows it has a source.
    """

    def __init__(self) -> None:
        self._notes: dict[int, tuple[Any, Any]] = {}
        self.verdicts = False

    def attach(self, item: Any, note: Any) -> None:
        self._notes[id(item)] = (item, note)

    def pop(self, item: Any) -> Any:
        entry = self._notes.pop(id(item), None)
        return entry[1] if entry is not None and entry[0] is item else None

    def peek(self, item: Any) -> Any:
        """The item's note, left in place (for a pipeline before the one that pops it)."""
        entry = self._notes.get(id(item))
        return entry[1] if entry is not None and entry[0] is item else None

    def discard(self, item: Any, **_: Any) -> None:
        entry = self._notes.get(id(item))
        if entry is not None and entry[0] is item:
            del self._notes[id(item)]

    def __len__(self) -> int:
        return len(self._notes)


def item_notes(crawler: Crawler, name: str = "pipelines") -> ItemNotes:
    """The crawler's notes called ``name`` (created, and hooked to the item signals, on
    first use): one set per kind of note, so one kind never replaces another."""
    attr = f"{_NOTES_ATTR}_{name}"
    notes: ItemNotes | None = getattr(crawler, attr, None)
    if notes is None:
        notes = ItemNotes()
        setattr(crawler, attr, notes)
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(notes.discard, signal=signal)
    return notes


def carry_notes(crawler: Crawler, old: Any, new: Any) -> None:
    """Every note of ``old`` now belongs to ``new``: a pipeline that returns another
    instance of the item (validation's normalised copy) keeps what was noted for it."""
    if old is new:
        return
    for attr, notes in vars(crawler).items():
        if attr.startswith(_NOTES_ATTR) and isinstance(notes, ItemNotes):
            note = notes.pop(old)
            if note is not None:
                notes.attach(new, note)
