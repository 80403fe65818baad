"""Values as printed (crawlers/spiders/printed.py): dates in words in the page's
languages, numbers with any grouping and CLDR's compact suffixes of those languages."""

from __future__ import annotations

import pytest

from crawlers.spiders.printed import printed_date, printed_number


@pytest.mark.parametrize(
    ("printed", "languages", "number"),
    [
        ("1.234,56", (), 1234.56),
        ("1,234.56", (), 1234.56),
        ("59K", (), 59000),
        ("3.4k reviews", ("en",), 3400),
        ("1,2 M", ("fr",), 1_200_000),
        ("1,2 Mio.", ("de",), 1_200_000),
        ("2,5 mil", ("es",), 2500),
        ("1.5B", ("en",), 1_500_000_000),
        ("5 Monate", ("de",), 5),  # a word starting like a suffix is no suffix
        ("12 m²", ("en",), 12),
        ("no number", ("en",), None),
    ],
)
def test_numbers_as_printed(printed: str, languages: tuple[str, ...], number: float) -> None:
    assert printed_number(printed, languages) == number


@pytest.mark.parametrize(
    ("printed", "languages", "iso"),
    [
        ("Published on Apr 24, 2022", ("en",), "2022-04-24"),
        ("Veröffentlicht am 3. März 2021", ("de",), "2021-03-03"),
        ("03/04/2021", ("en-GB",), "2021-04-03"),  # day first in Britain
        ("03/04/2021", ("en-US",), "2021-03-04"),
        ("April 5, 2023 at 18:30", ("en",), "2023-04-05T18:30:00"),
        ("2021-03-04", (), "2021-03-04"),
        ("coming soon", ("en",), None),
    ],
)
def test_dates_as_printed(printed: str, languages: tuple[str, ...], iso: str | None) -> None:
    assert printed_date(printed, languages) == iso
