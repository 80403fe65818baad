"""What the onboarding benchmark counts as the same value: a stored field against what
the page showed (bench/onboarding.py, bench/onboarding_real.py)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any
from urllib.parse import urlsplit

__all__ = ["URL_FIELDS", "path_of", "same"]

URL_FIELDS = {"images", "image", "company_url", "url"}


def same(shown: Any, stored: Any, name: str) -> bool:
    """The stored value is the shown one: numbers to the cent, texts with their spaces
    normalised, URLs by their path, dates by their day, lists element by element."""
    if isinstance(shown, list):
        return (
            isinstance(stored, list)
            and len(shown) == len(stored)
            and all(same(a, b, name) for a, b in zip(shown, stored, strict=True))
        )
    if stored is None:
        return False
    if isinstance(shown, bool) or isinstance(stored, bool):
        return isinstance(shown, bool) and isinstance(stored, bool) and shown == stored
    if isinstance(shown, int | float):
        return isinstance(stored, int | float) and math.isclose(shown, stored, abs_tol=0.005)
    if name in URL_FIELDS:
        return path_of(str(shown)) == path_of(str(stored))
    if _is_date(str(shown)):
        return str(stored)[:10] == str(shown)
    return " ".join(str(shown).split()) == " ".join(str(stored).split())


def path_of(url: str) -> str:
    """A URL's path and query (a site's host and port aside)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _is_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True
