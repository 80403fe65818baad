"""``bench.onboarding_real.replay``: the saved real pages come back over loopback HTTP
byte for byte (the stand-ins' server base serves them)."""

from __future__ import annotations

from pathlib import Path

from bench.onboarding_real import replay


def test_each_saved_page_is_read_back_byte_for_byte(tmp_path: Path) -> None:
    pages = {
        "trustpilot/a company.html": "<html><p>Très bien, 5 étoiles</p></html>".encode(),
        "g2/reviews.html": b"<html>\xff\xfe not utf-8 \x00</html>",
    }
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    (tmp_path / "unasked.html").write_bytes(b"never read")
    assert replay(tmp_path, list(pages)) == pages
