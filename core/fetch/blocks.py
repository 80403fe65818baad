"""Is this response the page we asked for, or a block/CAPTCHA/throttle/error page?

``classify(status, headers, body)`` takes plain values, so the structure gate and the
fetch middlewares share one set of rules; the verdict names the rule that matched. Every
marker has a scope (``anywhere``, ``title``, ``thin``: generic words count only on a page
with little visible text), since real pages mention CAPTCHAs and load bot-detection tags.
Markers are looked for as plain substrings first; regexes run only on a hit.

Reads: ``BLOCK_MARKERS``, ``BLOCK_THIN_TEXT_CHARS``, ``BLOCK_MIN_HTML_BYTES`` (the site
profile's settings, ``BlockRules.from_settings``). Rules: docs/fingerprints.md "Block
pages (``core/fetch/blocks.py``)".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any, Literal

from lxml import etree
from lxml import html as lxml_html

Kind = Literal["ok", "blocked", "challenge", "captcha", "throttled", "error"]
MarkerKind = Literal["blocked", "challenge", "captcha", "throttled"]
Scope = Literal["anywhere", "title", "thin"]
# Response headers by text or bytes names (Scrapy's CaseInsensitiveDict has either).
HeaderMap = Mapping[str, Any] | Mapping[str | bytes, Any]
# challenge: a JavaScript check a real browser passes by itself (DataDome's interstitial,
# Cloudflare's "Just a moment...", AWS WAF's challenge.js); captcha: a check that needs a
# person. The fetch layer passes the first in Chromium and never tries the second.
BLOCK_KINDS: frozenset[str] = frozenset({"blocked", "challenge", "captcha", "throttled"})
_MARKER_KINDS = ("blocked", "challenge", "captcha", "throttled")
# A challenge page often also says "denied": report the more specific kind; a page that
# loads a CAPTCHA service's own challenge (DataDome's c.js) needs the person, but a widget
# or wording challenge pages embed too (``Marker.generic``) yields to the challenge.
_PRECEDENCE = ("captcha", "challenge", "blocked", "throttled")
_SCOPES = ("anywhere", "title", "thin")
_SCOPE_TEXT = {"anywhere": "", "title": " in <title>", "thin": " on a thin page"}

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_TITLE_WINDOW = 256 * 1024  # titles live in the head
_INVISIBLE = ("script", "style", "noscript", "template")


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    reason: str
    status: int = 0

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def is_block(self) -> bool:
        """Blocked, challenged, CAPTCHA or throttled: the site refused us (as opposed to
        an error)."""
        return self.kind in BLOCK_KINDS

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}"


@dataclass(frozen=True)
class Marker:
    """A case-insensitive regular expression that identifies a block page.

    ``needles``: lower-case substrings of which at least one must occur for the regex
    to be tried (a cheap prefilter); empty means always try the regex.
    """

    name: str
    pattern: str
    kind: MarkerKind = "blocked"
    where: Scope = "anywhere"
    needles: tuple[str, ...] = ()
    # A widget or wording that challenge pages embed too (Cloudflare's Turnstile, "verify
    # you are human"): a CAPTCHA on its own, but a page a challenge marker also matches is
    # that challenge, which a browser passes.
    generic: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _MARKER_KINDS:
            raise ValueError(f"marker {self.name!r}: kind must be one of {_MARKER_KINDS}")
        if self.where not in _SCOPES:
            raise ValueError(f"marker {self.name!r}: where must be one of {_SCOPES}")
        try:
            _compiled(self.pattern)
        except re.error as exc:
            raise ValueError(f"marker {self.name!r}: bad pattern: {exc}") from exc
        object.__setattr__(self, "needles", tuple(n.lower() for n in self.needles))

    def search(self, text: str) -> bool:
        return _compiled(self.pattern).search(text) is not None


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_HUMAN = r"verify (?:that )?you are (?:a )?human|are you a robot|are you human|i am not a robot"

GENERIC_MARKERS: tuple[Marker, ...] = (
    # DataDome: its CAPTCHA page loads c.js (``'rt':'c'``), its JavaScript interstitial
    # i.js (``'rt':'i'``), both from its challenge host; protected real pages load
    # js.datadome.co/tags.js instead.
    Marker(
        "datadome captcha",
        r"captcha-delivery\.com/c\.js|geo\.captcha-delivery\.com/captcha",
        "captcha",
        needles=("captcha-delivery.com",),
    ),
    Marker(
        "datadome interstitial",
        r"captcha-delivery\.com/i\.js|geo\.captcha-delivery\.com/interstitial",
        "challenge",
        needles=("captcha-delivery.com",),
    ),
    # What DataDome's pages show before their script runs: the same on every site it
    # protects (seen on idealista), so the page is known when the script comes from
    # another host name. A browser finds out which of the two it is.
    Marker(
        "datadome interstitial text",
        r"please enable js and disable any ad blocker",
        "challenge",
        "thin",
        needles=("ad blocker",),
    ),
    # Cloudflare managed challenge. Real pages load /cdn-cgi/challenge-platform/scripts/jsd
    # (bot detection), which carries none of these.
    Marker(
        "cloudflare challenge",
        r"_cf_chl_opt|\bcf-chl-|\bcf_chl_",
        "challenge",
        needles=("cf_chl", "cf-chl"),
    ),
    Marker("cloudflare challenge", r"^\s*just a moment", "challenge", "title"),
    # The challenge page's own scripts (/cdn-cgi/challenge-platform/h/<x>/orchestrate/...);
    # real pages load only the platform's bot detection (.../scripts/jsd/main.js), so the
    # platform's path counts on a thin page only.
    Marker(
        "cloudflare challenge",
        r"/cdn-cgi/challenge-platform/h/\w+/orchestrate/",
        "challenge",
        needles=("orchestrate",),
    ),
    Marker(
        "cloudflare challenge",
        r"/cdn-cgi/challenge-platform/",
        "challenge",
        "thin",
        needles=("challenge-platform",),
    ),
    Marker("cloudflare block", r"attention required!? \| cloudflare", "blocked", "title"),
    Marker(
        "cloudflare block",
        r"sorry, you have been blocked",
        "blocked",
        "thin",
        needles=("been blocked",),
    ),
    # AWS WAF challenge and CAPTCHA interstitials: an empty page that runs the WAF's
    # JavaScript (``AwsWafIntegration.getToken()`` then a reload; the interstitials'
    # sealed context ``window.gokuProps``). The CAPTCHA variant loads captcha.js.
    # Protected real pages load the same challenge.js for a silent token and set
    # ``awsWafCookieDomainList`` too, so the script and the integration count only on a
    # thin page; gokuProps anywhere.
    Marker(
        "aws waf captcha",
        r"awswaf\.com/[^\"']*/captcha\.js|AwsWafCaptcha\.\w+\(",
        "captcha",
        "thin",
        needles=("awswaf.com", "awswafcaptcha"),
    ),
    Marker("aws waf challenge", r"window\.gokuProps\s*=", "challenge", needles=("gokuprops",)),
    Marker(
        "aws waf challenge",
        r"AwsWafIntegration\.\w+\(|awswaf\.com/[^\"']*/challenge\.js",
        "challenge",
        "thin",
        needles=("awswafintegration", "awswaf.com"),
    ),
    # PerimeterX / HUMAN.
    Marker(
        "perimeterx challenge",
        r"\bpx-captcha\b|captcha\.px-cdn\.net",
        "captcha",
        needles=("px-captcha", "px-cdn.net"),
    ),
    Marker("perimeterx block", r"access to this page has been denied", "blocked", "title"),
    Marker(
        "press and hold",
        r"press (?:&amp;|&|and) hold",
        "captcha",
        "thin",
        needles=("press",),
    ),
    # CAPTCHA widgets: real pages embed them in login/contact forms, so thin pages only.
    Marker(
        "captcha widget",
        r"class=[\"'][^\"']*\b(?:g-recaptcha|h-captcha)\b|hcaptcha\.com/1/api\.js",
        "captcha",
        "thin",
        needles=("recaptcha", "h-captcha", "hcaptcha.com"),
    ),
    # Cloudflare's Turnstile: alone, a CAPTCHA; inside its JavaScript challenge ("Just a
    # moment...", the challenge platform's scripts), part of the challenge (generic).
    Marker(
        "turnstile widget",
        r"class=[\"'][^\"']*\bcf-turnstile\b|challenges\.cloudflare\.com/turnstile",
        "captcha",
        "thin",
        needles=("turnstile",),
        generic=True,
    ),
    Marker("human check", _HUMAN, "captcha", "title", generic=True),
    Marker(
        "human check",
        _HUMAN + r"|unusual (?:traffic|activity) from your",
        "captcha",
        "thin",
        needles=("human", "robot", "unusual"),
        generic=True,
    ),
    # Imperva/Incapsula injects _Incapsula_Resource into real pages too: thin only.
    Marker(
        "incapsula block",
        r"_incapsula_resource|request unsuccessful\. incapsula",
        "blocked",
        "thin",
        needles=("incapsula",),
    ),
    Marker("distil/imperva block", r"pardon our interruption", "blocked", "title"),
    # Akamai and most WAFs: a page titled "Access Denied"/"Forbidden".
    Marker("access denied", r"^\s*(?:access denied|(?:403 )?forbidden)\s*$", "blocked", "title"),
    Marker(
        "access denied",
        r"blocked by (?:our|the) security|you don't have permission to access",
        "blocked",
        "thin",
        needles=("security", "permission"),
    ),
    Marker("rate limited", r"too many requests|rate limit(?:ed)? exceeded", "throttled", "title"),
)


@dataclass(frozen=True)
class BlockRules:
    """Markers plus the thresholds that make a page thin or near-empty."""

    markers: tuple[Marker, ...] = GENERIC_MARKERS
    # Visible text (scripts/styles excluded) below this many characters makes a page thin.
    thin_text_chars: int = 1500
    # Pages this large are never thin; spares parsing multi-MB real pages for nothing.
    thin_max_bytes: int = 256 * 1024
    # An HTML 200 shorter than this (stripped) is "near-empty": an empty shell, not a page.
    min_html_bytes: int = 256

    def with_markers(self, extra: Iterable[Marker]) -> BlockRules:
        return replace(self, markers=(*self.markers, *extra))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> BlockRules:
        """Rules from Scrapy-style settings (a profile's ``[settings]`` table).

        ``BLOCK_MARKERS``: a list of strings (a ``blocked`` regex matched anywhere) or
        tables ``{name, pattern, kind, where, needles}``; ``BLOCK_THIN_TEXT_CHARS`` and
        ``BLOCK_MIN_HTML_BYTES`` override the thresholds. Site markers are added to the
        generic ones, never replace them.
        """
        rules = cls()
        if not settings:
            return rules
        extra: list[Marker] = []
        for index, entry in enumerate(settings.get("BLOCK_MARKERS") or ()):
            name = f"site marker {index + 1}"
            if isinstance(entry, str):
                extra.append(Marker(name, entry))
            elif isinstance(entry, Mapping):
                values = {"name": name, **entry}
                values["needles"] = tuple(values.get("needles") or ())
                try:
                    extra.append(Marker(**values))
                except TypeError as exc:
                    raise ValueError(f"BLOCK_MARKERS[{index}]: {exc}") from exc
            else:
                raise ValueError(f"BLOCK_MARKERS[{index}] must be a string or a table")
        overrides: dict[str, Any] = {}
        if "BLOCK_THIN_TEXT_CHARS" in settings:
            overrides["thin_text_chars"] = int(settings["BLOCK_THIN_TEXT_CHARS"])
        if "BLOCK_MIN_HTML_BYTES" in settings:
            overrides["min_html_bytes"] = int(settings["BLOCK_MIN_HTML_BYTES"])
        return replace(rules.with_markers(extra), **overrides)


DEFAULT_RULES = BlockRules()


class _Page:
    """One body; its lower-cased bytes, text, title and thinness computed when asked."""

    def __init__(self, body: bytes | str, rules: BlockRules) -> None:
        self.raw = body.encode("utf-8", errors="replace") if isinstance(body, str) else body
        self.rules = rules

    @cached_property
    def lowered(self) -> bytes:
        return self.raw.lower()  # ASCII-only lowering: fast, and the needles are ASCII

    @cached_property
    def text(self) -> str:
        # Markers are ASCII, so undecodable bytes cannot hide them.
        return self.raw.decode("utf-8", errors="replace")

    @cached_property
    def title(self) -> str:
        match = _TITLE.search(self.raw, 0, _TITLE_WINDOW)
        if not match:
            return ""
        return " ".join(match.group(1).decode("utf-8", errors="replace").split())

    @cached_property
    def thin(self) -> bool:
        if len(self.raw) > self.rules.thin_max_bytes:
            return False
        return visible_text_length(self.raw) < self.rules.thin_text_chars

    def has_needle(self, marker: Marker) -> bool:
        if not marker.needles:
            return True
        lowered = self.lowered
        return any(needle.encode() in lowered for needle in marker.needles)

    def matches(self, marker: Marker) -> bool:
        if marker.where == "title":
            return bool(self.title) and marker.search(self.title)
        if not self.has_needle(marker):
            return False
        if marker.where == "thin" and not self.thin:
            return False
        return marker.search(self.text)


def visible_text_length(body: bytes | str) -> int:
    """Characters of text a reader would see (whitespace collapsed, scripts excluded)."""
    if not body.strip():
        return 0
    try:
        root = lxml_html.document_fromstring(body)
    except (ValueError, etree.ParserError):
        return 0
    for element in list(root.iter(*_INVISIBLE)):
        element.drop_tree()
    return len(" ".join(root.text_content().split()))


def _header(headers: HeaderMap | None, name: str) -> str:
    if not headers:
        return ""
    for key, value in headers.items():
        key_text = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        if key_text.lower() == name:
            if isinstance(value, list | tuple):  # Scrapy's Headers hold lists of bytes
                value = value[0] if value else ""
            return value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return ""


def classify(
    status: int,
    headers: HeaderMap | None,
    body: bytes | str,
    *,
    rules: BlockRules | None = None,
) -> Verdict:
    """The verdict on one response.

    Order matters: 429 is throttling whatever the body says; a challenge or CAPTCHA page
    is one whether it came with 200, 403 or 503; then 401/403 are blocks, other 4xx and
    5xx are errors; a 200 needs a real body.
    """
    rules = rules or DEFAULT_RULES
    if status == 429:
        retry = _header(headers, "retry-after")
        reason = "HTTP 429" + (f" (Retry-After: {retry})" if retry else "")
        return Verdict("throttled", reason, status)
    if _header(headers, "cf-mitigated").lower() == "challenge":
        return Verdict("challenge", "cloudflare challenge (cf-mitigated header)", status)
    # AWS WAF names its action on the answer (202 challenge, 405 CAPTCHA).
    waf_action = _header(headers, "x-amzn-waf-action").lower()
    if waf_action == "challenge":
        return Verdict("challenge", "aws waf challenge (x-amzn-waf-action header)", status)
    if waf_action == "captcha":
        return Verdict("captcha", "aws waf captcha (x-amzn-waf-action header)", status)

    page = _Page(body, rules)
    generic: Marker | None = None  # a generic CAPTCHA marker: a challenge page's wins
    for kind in _PRECEDENCE:
        for marker in rules.markers:
            if marker.kind != kind or not page.matches(marker):
                continue
            if marker.generic and kind == "captcha":
                generic = generic or marker
                continue
            return Verdict(kind, marker.name + _SCOPE_TEXT[marker.where], status)
        if generic is not None and kind == "challenge":
            return Verdict("captcha", generic.name + _SCOPE_TEXT[generic.where], status)

    if status in (401, 403, 407, 451):
        return Verdict("blocked", f"HTTP {status}", status)
    if status >= 400:
        return Verdict("error", f"HTTP {status}", status)
    if 200 <= status < 300 and status != 204:
        stripped = page.raw.strip()
        if not stripped:
            return Verdict("blocked", "empty body", status)
        content_type = _header(headers, "content-type").lower()
        looks_html = "html" in content_type or stripped.startswith(b"<")
        # JSON and XML answers (APIs, sitemaps, feeds) are data however short; only an
        # HTML page that small is an empty shell.
        is_data = "json" in content_type or ("xml" in content_type and "html" not in content_type)
        if looks_html and not is_data and len(stripped) < rules.min_html_bytes:
            return Verdict("blocked", f"near-empty body ({len(stripped)} bytes)", status)
    return Verdict("ok", f"HTTP {status}", status)
