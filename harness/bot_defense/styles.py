"""Vendor styles of the stand-in: how a refusal looks and how a challenge is passed.

The checks are the levels' (``harness.bot_defense.server``); a style (``cloudflare``,
``aws``, ``datadome``) only shapes the level 1 refusal and the level 3 challenge as that
vendor does, so the platform meets each way a JavaScript challenge resolves itself in a
browser. Levels 2 and 4 are the same in every style; each style's cookie is sealed and
bound alike (``harness.bot_defense.sessions``).

Reads: ``--style``. The styles' pages, statuses and cookies: docs/bot-defense.md
"Styles (``--style``, ``harness/bot_defense/styles.py``)".
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from html import escape

from harness.bot_defense import pages

STYLES = ("cloudflare", "aws", "datadome")
NO_STORE = "private, max-age=0, no-store, no-cache, must-revalidate"
COOKIE_NAMES = {"cloudflare": "__defense_session", "aws": "aws-waf-token", "datadome": "datadome"}


@dataclass(frozen=True)
class Page:
    """A response the stand-in makes: status, headers, body, and the id it shows."""

    status: int
    headers: list[tuple[str, str]]
    body: str
    ref: str


def cookie_name(style: str) -> str:
    return COOKIE_NAMES[style]


def headers_refusal(style: str, host: str) -> Page:
    """Level 1's answer to inconsistent headers, as the style's vendor answers a bot."""
    if style == "datadome":
        cid = secrets.token_urlsafe(24)
        headers = [("X-DataDome", "protected"), ("Cache-Control", NO_STORE)]
        return Page(403, headers, pages.captcha(host, cid), cid)
    if style == "aws":
        request_id = secrets.token_urlsafe(42)
        headers = [("Server", "CloudFront"), ("X-Cache", "Error from cloudfront")]
        headers.append(("Cache-Control", NO_STORE))
        return Page(403, headers, _aws_block(request_id), request_id)
    ray = secrets.token_hex(8)
    headers = [("Server", "cloudflare"), ("CF-RAY", ray), ("Cache-Control", NO_STORE)]
    return Page(403, headers, pages.headers_block(host, ray), ray)


def challenge(style: str, host: str, nonce: str, difficulty: int, path: str) -> Page:
    """Level 3's JavaScript challenge in the style's shape."""
    if style == "aws":
        ref = secrets.token_hex(8)
        headers = [("x-amzn-waf-action", "challenge"), ("Cache-Control", NO_STORE)]
        return Page(202, headers, _aws_challenge(nonce, difficulty), ref)
    if style == "datadome":
        cid = secrets.token_urlsafe(24)
        headers = [("X-DataDome", "protected"), ("Cache-Control", NO_STORE)]
        return Page(403, headers, _datadome_interstitial(host, cid, nonce, difficulty, path), cid)
    ray = secrets.token_hex(8)
    headers = [
        ("cf-mitigated", "challenge"),
        ("Server", "cloudflare"),
        ("CF-RAY", ray),
        ("Cache-Control", NO_STORE),
    ]
    return Page(403, headers, pages.challenge(host, ray, nonce, difficulty, path), ray)


def verified(style: str, value: str, ttl: int) -> tuple[list[tuple[str, str]], str]:
    """The verify POST's answer for a solved challenge: (headers, JSON body). Cloudflare
    sets its cookie itself; AWS and DataDome hand it to their script, which writes it."""
    headers = [("Content-Type", "application/json"), ("Cache-Control", NO_STORE)]
    name = cookie_name(style)
    attributes = f"Path=/; Max-Age={ttl}; Secure; SameSite=Lax"
    if style == "aws":
        return headers, json.dumps({"token": value, "maxAge": ttl})
    if style == "datadome":
        return headers, json.dumps({"cookie": f"{name}={value}; {attributes}", "view": "redirect"})
    cookie = f"{name}={value}; {attributes}; HttpOnly"
    return [*headers, ("Set-Cookie", cookie)], json.dumps({"ok": True})


# The proof of work the challenges share (as harness.bot_defense.pages' Cloudflare page):
# SHA-256 over "<nonce>:<answer>" with `difficulty` leading zero bits, in batches, after
# refusing to run under automation. `solve(nonce, difficulty)` resolves to the answer.
_SOLVER = """
function zeroBits(bytes) {
  var bits = 0;
  for (var i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0) { bits += 8; continue; }
    return bits + Math.clz32(bytes[i]) - 24;
  }
  return bits;
}
async function solve(nonce, difficulty) {
  if (navigator.webdriver) { throw new Error('automated browser'); }
  var encoder = new TextEncoder();
  for (var base = 0; ; base += 256) {
    var batch = [];
    for (var i = 0; i < 256; i++) {
      batch.push(crypto.subtle.digest('SHA-256', encoder.encode(nonce + ':' + (base + i))));
    }
    var digests = await Promise.all(batch);
    for (var j = 0; j < digests.length; j++) {
      if (zeroBits(new Uint8Array(digests[j])) >= difficulty) { return base + j; }
    }
  }
}
async function verify(nonce, difficulty) {
  var answer = await solve(nonce, difficulty);
  var response = await fetch('VERIFY_PATH', {
    method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({nonce: nonce, answer: answer, webdriver: navigator.webdriver === true})
  });
  if (!response.ok) { throw new Error('verification failed'); }
  return response.json();
}
""".replace("VERIFY_PATH", pages.VERIFY_PATH)


def _script(text: str) -> str:
    return text.replace("</", "<\\/")


def _aws_challenge(nonce: str, difficulty: int) -> str:
    # AWS WAF's interstitial: an empty page, its sealed context in window.gokuProps, and
    # challenge.js's AwsWafIntegration, which gets a token and reloads.
    goku = json.dumps({"key": secrets.token_urlsafe(32), "iv": secrets.token_urlsafe(12),
                       "context": nonce, "difficulty": difficulty})  # fmt: skip
    integration = """
window.AwsWafIntegration = {
  getToken: function () {
    var p = window.gokuProps;
    return verify(p.context, p.difficulty).then(function (answer) {
      document.cookie = 'aws-waf-token=' + answer.token + '; Path=/; Max-Age=' +
        answer.maxAge + '; Secure; SameSite=Lax';
      return answer.token;
    });
  }
};
AwsWafIntegration.getToken().then(function () { window.location.reload(); })
  .catch(function (e) { document.getElementById('msg').textContent = String(e); });
"""
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title></title></head><body>
<div id="challenge-container"></div><noscript><p>JavaScript is disabled</p></noscript>
<p id="msg"></p>
<script>window.awsWafCookieDomainList = []; window.gokuProps = {_script(goku)};</script>
<script>{_script(_SOLVER)}{_script(integration)}</script>
</body></html>
"""


def _datadome_interstitial(host: str, cid: str, nonce: str, difficulty: int, path: str) -> str:
    # DataDome's device-check interstitial ('rt':'i'): its i.js (from
    # ct.captcha-delivery.com, unreachable here, so run inline) checks the browser, gets
    # the cookie from geo.captcha-delivery.com/interstitial/ and goes back to the URL.
    dd = {"rt": "i", "cid": cid, "hsh": "2211F522B61E269B869FA6EAFFB5E1", "t": "fe",
          "s": 17434, "e": nonce, "d": difficulty, "host": "geo.captcha-delivery.com",
          "src": "https://ct.captcha-delivery.com/i.js",
          "endpoint": "https://geo.captcha-delivery.com/interstitial/"}  # fmt: skip
    target = json.dumps(path)
    runner = f"""
verify(dd.e, dd.d).then(function (answer) {{
  document.cookie = answer.cookie;
  window.location.href = {target};
}}).catch(function (e) {{ document.getElementById('cmsg').textContent = String(e); }});
"""
    return f"""<html lang="en"><head><title>{escape(host)}</title></head>\
<body style="margin:0"><p id="cmsg">{pages.CAPTCHA_TEXT}</p>\
<script data-cfasync="false">var dd={_script(json.dumps(dd))}</script>\
<script data-cfasync="false">{_script(_SOLVER)}{_script(runner)}</script>\
</body></html>
"""


def _aws_block(request_id: str) -> str:
    return f"""<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" \
"http://www.w3.org/TR/html4/loose.dtd">
<HTML><HEAD><META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=iso-8859-1">
<TITLE>ERROR: The request could not be satisfied</TITLE>
</HEAD><BODY>
<H1>403 ERROR</H1>
<H2>The request could not be satisfied.</H2>
<HR noshade size="1px">
Request blocked.
We can't connect to the server for this app or website at this time. There might be too much
traffic or a configuration error. Try again later, or contact the app or website owner.
<BR clear="all">
<HR noshade size="1px">
<PRE>
Generated by cloudfront (CloudFront)
Request ID: {escape(request_id)}
</PRE>
</BODY></HTML>
"""
