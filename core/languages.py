"""A site's language and the Elasticsearch analyzer its chunk text is indexed with.

A site's language is the primary subtag of its market (the profile's ``[fetch]
accept_language``, e.g. ``es-ES,es;q=0.9`` -> ``es``); the orchestration reads the profile
(``crawlers.runtime.site_language``) and hands the language to the LLM step (``indexing.index``).
The analyzers are Elasticsearch's built-in language analyzers (stop words, elision, light
stemming): ``de`` is a Spanish stop word, ``auriculares`` and ``auricular`` share a stem.
A language without one here, or none at all, keeps the ``standard`` analyzer.
"""

from __future__ import annotations

STANDARD = "standard"
ANALYZERS: dict[str, str] = {
    "en": "english",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "pt": "portuguese",
}


def language_of(accept_language: str | None) -> str | None:
    """The primary language of an ``Accept-Language`` value (its first entry), lower-case."""
    if not accept_language:
        return None
    first = accept_language.split(",", 1)[0].split(";", 1)[0].strip()
    primary = first.split("-", 1)[0].split("_", 1)[0].lower()
    return primary if primary.isalpha() else None


def text_analyzer(language: str | None) -> str:
    """The analyzer for text in ``language`` (an ISO 639-1 code); ``standard`` if unknown."""
    return ANALYZERS.get((language or "").lower(), STANDARD)
