"""The block-page classifier: real block pages, the demo site's blocks, no false alarms."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.fetch.blocks import BlockRules, Marker, Verdict, classify
from harness.demo_site import DemoSite

REAL_PAGES = Path(__file__).resolve().parents[3].parent / "shared" / "real-pages"
needs_real_pages = pytest.mark.skipif(
    not REAL_PAGES.is_dir(),
    reason=f"saved real pages not found at {REAL_PAGES} (they are not part of the repository)",
)


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    with DemoSite(run_dir=tmp_path_factory.mktemp("blocks-site"), products=200) as server:
        yield server


# -- the demo site's block pages, as served -------------------------------------------------


def test_demo_captcha_page_served_with_200_is_a_captcha(site: DemoSite) -> None:
    site.control(client="blocks", captcha={"rate": 1.0, "attempts": None})
    status, headers, body = fetch(site.url + "/category/kitchen", {"X-Demo-Client": "blocks"})
    assert status == 200
    verdict = classify(status, headers, body)
    assert verdict.kind == "captcha"
    assert "datadome" in verdict.reason
    assert verdict.is_block and not verdict.ok


def test_demo_forbidden_and_throttle_pages(site: DemoSite) -> None:
    site.control(client="blocks2", forbidden={"rate": 1.0, "attempts": None})
    verdict = classify(*fetch(site.url + "/", {"X-Demo-Client": "blocks2"}))
    assert (verdict.kind, verdict.status) == ("blocked", 403)
    site.control(client="blocks2", forbidden=None, throttle={"rate": 1.0, "attempts": None})
    verdict = classify(*fetch(site.url + "/", {"X-Demo-Client": "blocks2"}))
    assert verdict.kind == "throttled"
    assert "Retry-After" in verdict.reason


def test_demo_error_and_normal_pages(site: DemoSite) -> None:
    site.control(client="blocks3", error_burst={"count": 1})
    assert classify(*fetch(site.url + "/", {"X-Demo-Client": "blocks3"})).kind == "error"
    catalog = site.catalog()
    for path in ("/", "/category/kitchen", catalog.products[0].url):
        verdict = classify(*fetch(site.url + path))
        assert verdict == Verdict("ok", "HTTP 200", 200), path
    # A small JSON API answer is not "near-empty HTML".
    reviews = f"/api/products/{catalog.products[0].sku}/reviews"
    assert classify(*fetch(site.url + reviews)).ok


# -- generic rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "body", "kind", "reason"),
    [
        (429, {"Retry-After": "5"}, b"<html>slow down</html>", "throttled", "HTTP 429"),
        (403, {}, b"<html><body>" + b"x" * 400 + b"</body></html>", "blocked", "HTTP 403"),
        (401, {}, b"", "blocked", "HTTP 401"),
        (503, {}, b"<html>maintenance</html>", "error", "HTTP 503"),
        (404, {}, b"<html>not found</html>", "error", "HTTP 404"),
        (200, {}, b"   ", "blocked", "empty body"),
        (
            200,
            {"Content-Type": "text/html"},
            b"<html><body></body></html>",
            "blocked",
            "near-empty",
        ),
        (
            503,
            {},
            b"<html><head><title>Just a moment...</title></head><body>"
            b"<script>window._cf_chl_opt={cvId: '3'}</script></body></html>",
            "challenge",
            "cloudflare",
        ),
        (403, {"cf-mitigated": "challenge"}, b"<html></html>", "challenge", "cf-mitigated"),
        # DataDome's JavaScript interstitial (a browser passes it) vs its CAPTCHA page.
        (
            403,
            {},
            b"<html><body><script>var dd={'rt':'i','host':'geo.captcha-delivery.com'}</script>"
            b"<script src='https://ct.captcha-delivery.com/i.js'></script></body></html>",
            "challenge",
            "datadome interstitial",
        ),
        (
            403,
            {},
            b"<html><body><p>Please enable JS and disable any ad blocker</p>"
            b"<script src='https://ct.captcha-delivery.com/c.js'></script></body></html>",
            "captcha",
            "datadome captcha",
        ),
        (
            200,
            {},
            b"<html><head><title>Attention Required! | Cloudflare</title></head>"
            b"<body>Sorry, you have been blocked</body></html>",
            "blocked",
            "cloudflare block",
        ),
        (
            200,
            {},
            b"<html><body><div id='px-captcha'></div>Press &amp; Hold</body></html>",
            "captcha",
            "perimeterx",
        ),
        (
            200,
            {},
            b"<html><body><form><div class='h-captcha' data-sitekey='x'></div></form>"
            b"<p>Please verify you are human to continue.</p></body></html>",
            "captcha",
            "thin page",
        ),
        (200, {"content-type": "application/json"}, b'{"reviews":[]}', "ok", "HTTP 200"),
        # A small sitemap (index) is an answer, not a near-empty page.
        (
            200,
            {"content-type": "application/xml; charset=utf-8"},
            b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<sitemap><loc>https://s.example/a.xml</loc></sitemap></sitemapindex>",
            "ok",
            "HTTP 200",
        ),
        (
            200,
            {"content-type": "application/xhtml+xml"},
            b"<html><body></body></html>",
            "blocked",
            "near-empty",
        ),
        (204, {}, b"", "ok", "HTTP 204"),
    ],
)
def test_generic_rules(
    status: int, headers: dict[str, str], body: bytes, kind: str, reason: str
) -> None:
    verdict = classify(status, headers, body)
    assert verdict.kind == kind, verdict
    assert reason.lower() in verdict.reason.lower(), verdict


def test_captcha_words_on_a_rich_page_are_not_a_block() -> None:
    """A real page with a login form's reCAPTCHA and "captcha" in scripts is a page."""
    article = "<p>" + "Plenty of real product text here. " * 80 + "</p>"
    body = (
        "<html><head><title>Blue kettle | Shop</title>"
        "<script src='https://www.google.com/recaptcha/api.js'></script>"
        "<script>var captchaEnabled = true; // verify you are human on login</script></head>"
        f"<body><h1>Blue kettle</h1>{article}"
        "<form><div class='g-recaptcha' data-sitekey='k'></div></form></body></html>"
    )
    assert classify(200, {}, body).ok
    # The same widget on a thin page is a challenge.
    thin = "<html><body><form><div class='g-recaptcha'></div></form></body></html>"
    assert classify(200, {}, thin + " " * 300).kind == "captcha"


def test_site_markers_come_from_profile_settings() -> None:
    rules = BlockRules.from_settings(
        {
            "BLOCK_MARKERS": [
                r"el acceso ha sido bloqueado",
                {"name": "soft wall", "pattern": r"please log in to see", "where": "thin"},
            ],
            "BLOCK_MIN_HTML_BYTES": 10,
        }
    )
    page = "<html><body><p>" + "x" * 300 + " El acceso ha sido BLOQUEADO</p></body></html>"
    assert classify(200, {}, page).ok  # not a generic marker
    verdict = classify(200, {}, page, rules=rules)
    assert (verdict.kind, verdict.reason) == ("blocked", "site marker 1")
    soft = "<html><body>Please log in to see the prices</body></html>"
    assert classify(200, {}, soft, rules=rules).reason == "soft wall on a thin page"
    assert classify(200, {}, "<p>tiny page</p>", rules=rules).ok  # threshold overridden
    with pytest.raises(ValueError, match="kind"):
        Marker("bad", "x", kind="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pattern"):
        BlockRules.from_settings({"BLOCK_MARKERS": ["(unclosed"]})


# -- saved real pages ------------------------------------------------------------------------


@needs_real_pages
def test_real_datadome_block_page_is_a_captcha_with_any_status() -> None:
    """idealista's DataDome page says ``'rt':'c'`` and loads c.js: a CAPTCHA for a person."""
    body = (REAL_PAGES / "idealista" / "datadome_block_page.html").read_bytes()
    for status in (200, 403):
        verdict = classify(status, {"Content-Type": "text/html"}, body)
        assert (verdict.kind, verdict.reason) == ("captcha", "datadome captcha")


@needs_real_pages
def test_real_aws_waf_challenge_is_a_challenge_by_the_generic_rules() -> None:
    """booking.com's AWS WAF challenge: an empty page running AwsWafIntegration (a browser
    passes it by itself); real booking.com pages load the same challenge.js and set
    awsWafCookieDomainList too."""
    body = (REAL_PAGES / "booking_com" / "awswaf_block_page.html").read_bytes()
    for status in (202, 200):
        verdict = classify(status, {"Content-Type": "text/html"}, body)
        assert str(verdict) == "challenge: aws waf challenge on a thin page"
    for name in ("hotel_2026.html", "search_2025_03.html", "search_2025.html"):
        assert b"challenge.js" in (page := (REAL_PAGES / "booking_com" / name).read_bytes())
        assert classify(200, {"Content-Type": "text/html"}, page).ok, name


def test_aws_waf_action_header_names_the_kind_whatever_the_body() -> None:
    body = b"<html><body>" + b"<p>a page</p>" * 200 + b"</body></html>"
    for action, status in (("challenge", 202), ("captcha", 405)):
        verdict = classify(status, {"x-amzn-waf-action": action}, body)
        assert (str(verdict), verdict.status) == (
            f"{action}: aws waf {action} (x-amzn-waf-action header)",
            status,
        )
    assert classify(200, {"X-Amzn-Waf-Action": "allow"}, body).ok


def test_datadome_text_without_its_script_is_a_challenge_on_a_thin_page_only() -> None:
    """Without the script nothing says which of DataDome's pages it is: the browser finds out."""
    thin = b"<html><body><p id='cmsg'>Please enable JS and disable any ad blocker</p></body></html>"
    assert str(classify(403, {}, thin)) == "challenge: datadome interstitial text on a thin page"
    article = b"<p>" + b"Readers: please enable JS and disable any ad blocker. " * 60 + b"</p>"
    assert classify(200, {}, b"<html><body>" + article + b"</body></html>").ok


@needs_real_pages
def test_real_pages_are_ok() -> None:
    """g2 carries a DataDome tag and Cloudflare's challenge-platform script, idealista a
    contact-form CAPTCHA, trustpilot a reCAPTCHA textarea: all real pages."""
    pages = [p for p in sorted(REAL_PAGES.glob("*/*.html")) if "block" not in p.name]
    assert len(pages) >= 12
    for path in pages:
        body = path.read_bytes()
        verdict = classify(200, {"Content-Type": "text/html; charset=utf-8"}, body)
        assert verdict.ok, f"{path.relative_to(REAL_PAGES)}: {verdict}"
    # What classifying costs per response is measured by `python -m bench.blocks`.


# -- Cloudflare: its JavaScript challenge (with Turnstile inside) vs Turnstile alone ----------

G2_BLOCKED = Path(__file__).resolve().parents[3] / "fingerprints" / "sites" / "g2" / "blocked"


def test_cloudflare_challenge_with_its_turnstile_widget_is_a_challenge() -> None:
    """The 2023 interstitial embeds Turnstile and says "verify you are human": the
    challenge a browser passes, never a CAPTCHA that retires the session."""
    body = (G2_BLOCKED / "cloudflare-challenge-2023.html").read_bytes()
    assert b"cf-turnstile" in body and b"Verify you are human" in body
    for status in (403, 503, 200):
        assert classify(status, {"Content-Type": "text/html"}, body).kind == "challenge"


@pytest.mark.parametrize(
    ("keep", "reason"),
    [
        ("title", "cloudflare challenge in <title>"),
        ("orchestrate", "cloudflare challenge"),
        ("platform", "cloudflare challenge on a thin page"),
        ("header", "cloudflare challenge (cf-mitigated header)"),
    ],
)
def test_each_cloudflare_challenge_signal_alone_wins_over_turnstile(keep: str, reason: str) -> None:
    """Title "Just a moment...", the challenge platform's script, the cf-mitigated header:
    any one of them makes the Turnstile page a challenge."""
    widget = (
        "<div class='cf-turnstile' data-sitekey='k'></div>"
        "<p>Verify you are human by completing the action below.</p>"
    )
    title = "Just a moment..." if keep == "title" else "Checking your browser"
    script = {
        "orchestrate": "/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=1",
        "platform": "/cdn-cgi/challenge-platform/scripts/jsd/main.js",
    }.get(keep, "/static/app.js")
    body = (
        f"<html><head><title>{title}</title></head><body>{widget}"
        f"<script src='{script}'></script></body></html>"
    )
    headers = {"cf-mitigated": "challenge"} if keep == "header" else {}
    assert str(classify(403, headers, body)) == f"challenge: {reason}"


def test_turnstile_alone_is_a_captcha() -> None:
    body = (G2_BLOCKED / "turnstile-captcha.html").read_bytes()
    verdict = classify(200, {"Content-Type": "text/html"}, body)
    assert str(verdict) == "captcha: turnstile widget on a thin page"
    # The wording alone, without a challenge around it, is a CAPTCHA too.
    thin = b"<html><body><p>Please verify you are human.</p></body></html>" + b" " * 300
    assert classify(200, {}, thin).kind == "captcha"
    # A non-generic CAPTCHA marker (DataDome's c.js) wins over a challenge title.
    both = (
        b"<html><head><title>Just a moment...</title></head><body>"
        b"<script src='https://ct.captcha-delivery.com/c.js'></script></body></html>"
    )
    assert str(classify(403, {}, both)) == "captcha: datadome captcha"
