"""The pages the stand-in answers with, shaped like the real vendors' so the platform's
block rules (``core.fetch.blocks``) meet what production shows them.

- ``headers_block``: Cloudflare's Browser Integrity Check block (Error 1010);
- ``tls_block``: Akamai's edge "Access Denied" with its ``Reference #18.`` id;
- ``challenge``: Cloudflare's managed challenge ("Just a moment..."), whose script
  refuses to run under automation, solves a SHA-256 proof of work and POSTs it to
  ``VERIFY_PATH``, then reloads;
- ``captcha``: DataDome's CAPTCHA interstitial (``var dd={...}`` and ``c.js``), which
  only a person could solve: its script host is unreachable from here.

Each refusal carries an id (Cloudflare's Ray ID, Akamai's reference, DataDome's cid)
that the stand-in's log also records, so a page a client saw can be found in the log.
"""

from __future__ import annotations

import json
from html import escape

VERIFY_PATH = "/__defense/verify"

# Markers tests and docs look for (each is on the page verbatim).
HEADERS_BLOCK_TITLE = "Attention Required! | Cloudflare"
HEADERS_BLOCK_TEXT = "Sorry, you have been blocked"
HEADERS_BLOCK_DETAIL = (
    "The owner of this website has banned your access based on your browser's signature"
)
TLS_BLOCK_TITLE = "Access Denied"
CHALLENGE_TITLE = "Just a moment..."
CAPTCHA_TEXT = "Please enable JS and disable any ad blocker"
CAPTCHA_SCRIPT = "https://ct.captcha-delivery.com/c.js"

_CSS = (
    "body{margin:0;font-family:-apple-system,system-ui,'Segoe UI',Roboto,sans-serif;"
    "color:#313131}.wrap{max-width:60rem;margin:8rem auto;padding:0 1.5rem}"
    "h1{font-size:2.5rem;font-weight:500}.small{font-size:.8rem;color:#595959}"
)


def headers_block(host: str, ray: str) -> str:
    host = escape(host)
    return f"""<!DOCTYPE html>
<html class="no-js" lang="en-US">
<head>
<title>{HEADERS_BLOCK_TITLE}</title>
<meta charset="UTF-8">
<meta http-equiv="X-UA-Compatible" content="IE=Edge">
<meta name="robots" content="noindex, nofollow">
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>{_CSS}</style>
</head>
<body>
<div id="cf-wrapper"><div id="cf-error-details" class="cf-error-details-wrapper wrap">
<h1 data-translate="block_headline">{HEADERS_BLOCK_TEXT}</h1>
<h2 class="cf-subheadline"><span data-translate="unable_to_access">You are unable to access</span>
 {host}</h2>
<p><span class="cf-error-type">Error</span> <span class="cf-error-code">1010</span></p>
<h2 data-translate="what_happened">What happened?</h2>
<p>{HEADERS_BLOCK_DETAIL} ({host}).</p>
<h2 data-translate="blocked_resolve_headline">What can I do to resolve this?</h2>
<p data-translate="blocked_resolve_detail">You can email the site owner to let them know you
were blocked. Please include what you were doing when this page came up and the Cloudflare
Ray ID found at the bottom of this page.</p>
<p class="cf-error-footer small">Cloudflare Ray ID: <strong>{ray}</strong> &bull;
Performance &amp; security by Cloudflare</p>
</div></div>
</body>
</html>
"""


def tls_block(url: str, reference: str) -> str:
    return f"""<HTML><HEAD>
<TITLE>{TLS_BLOCK_TITLE}</TITLE>
</HEAD><BODY>
<H1>Access Denied</H1>

You don't have permission to access "{escape(url)}" on this server.<P>
Reference #18.{reference}
<P>https://errors.edgesuite.net/18.{reference}</P>
</BODY>
</HTML>
"""


# The challenge script. Stops under automation (navigator.webdriver, which Chromium sets
# when driven over CDP unless launched with --disable-blink-features=AutomationControlled);
# otherwise finds an answer whose SHA-256 over "<nonce>:<answer>" starts with cD zero
# bits, in batches so the digests run concurrently, then POSTs it and reloads.
_CHALLENGE_SCRIPT = """
(function () {
  var o = window._cf_chl_opt;
  var status = document.getElementById('challenge-running');
  function fail(text) { status.textContent = text; document.title = 'Just a moment...'; }
  if (navigator.webdriver) { fail('Verification failed: automated browser.'); return; }
  if (!window.crypto || !crypto.subtle) { fail('Verification failed: no WebCrypto.'); return; }
  var encoder = new TextEncoder();
  function zeroBits(bytes) {
    var bits = 0;
    for (var i = 0; i < bytes.length; i++) {
      if (bytes[i] === 0) { bits += 8; continue; }
      return bits + Math.clz32(bytes[i]) - 24;
    }
    return bits;
  }
  async function solve() {
    for (var base = 0; ; base += 256) {
      var batch = [];
      for (var i = 0; i < 256; i++) {
        batch.push(crypto.subtle.digest('SHA-256', encoder.encode(o.cN + ':' + (base + i))));
      }
      var digests = await Promise.all(batch);
      for (var j = 0; j < digests.length; j++) {
        if (zeroBits(new Uint8Array(digests[j])) >= o.cD) { return base + j; }
      }
    }
  }
  var started = performance.now();
  solve().then(function (answer) {
    return fetch(o.cV, {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({nonce: o.cN, answer: answer, webdriver: navigator.webdriver === true,
                            ms: Math.round(performance.now() - started)})
    });
  }).then(function (response) {
    if (response.ok) { location.reload(); } else { fail('Verification failed.'); }
  }).catch(function () { fail('Verification failed.'); });
})();
"""


def challenge(host: str, ray: str, nonce: str, difficulty: int, path: str) -> str:
    options = {
        "cvId": "3",
        "cZone": host,
        "cType": "managed",
        "cRay": ray,
        "cH": nonce,
        "cN": nonce,
        "cD": difficulty,
        "cV": VERIFY_PATH,
        "cUPMDTk": path,
        "cFPWv": "g",
        "cTplV": 5,
        "cTplB": "cf",
    }
    # json.dumps escapes nothing HTML-special in these values except "</": guard it.
    opt = json.dumps(options).replace("</", "<\\/")
    host = escape(host)
    return f"""<!DOCTYPE html>
<html lang="en-US">
<head>
<title>{CHALLENGE_TITLE}</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta http-equiv="X-UA-Compatible" content="IE=Edge">
<meta name="robots" content="noindex,nofollow">
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>{_CSS}</style>
</head>
<body>
<div class="main-wrapper wrap" role="main"><div class="main-content">
<h1 class="zone-name-title h1">{host}</h1>
<p id="challenge-running" class="h2">Verifying you are human. This may take a few seconds.</p>
<noscript><div class="h2">Enable JavaScript and cookies to continue</div></noscript>
<p>{host} needs to review the security of your connection before proceeding.</p>
</div></div>
<div class="footer small">Ray ID: <code>{ray}</code> &bull; Performance &amp; security by
Cloudflare</div>
<script>window._cf_chl_opt = {opt};</script>
<script>{_CHALLENGE_SCRIPT}</script>
</body>
</html>
"""


# DataDome fades its one line of text in, so a page that redirects at once never shows it.
_CAPTCHA_CSS = (
    "#cmsg{animation: A 1.5s;}@keyframes A{0%{opacity:0;}99%{opacity:0;}100%{opacity:1;}}"
)


def captcha(host: str, cid: str) -> str:
    dd = {
        "rt": "c",
        "cid": cid,
        "hsh": "2211F522B61E269B869FA6EAFFB5E1",
        "t": "fe",
        "qp": "",
        "s": 17434,
        "e": cid[::-1],
        "host": "geo.captcha-delivery.com",
        "cookie": "",
    }
    # DataDome's page writes the object with single quotes.
    dd_js = "{" + ",".join(f"'{k}':{_js_value(v)}" for k, v in dd.items()) + "}"
    return f"""<html lang="en"><head><title>{escape(host)}</title><style>{_CAPTCHA_CSS}</style>\
</head><body style="margin:0"><p id="cmsg">{CAPTCHA_TEXT}</p>\
<script data-cfasync="false">var dd={dd_js}</script>\
<script data-cfasync="false" src="{CAPTCHA_SCRIPT}"></script>\
</body></html>
"""


def _js_value(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def learn_page(fingerprint_id: str) -> str:
    return (
        "<!DOCTYPE html><html><head><title>bot-defense learn</title></head>"
        f'<body><p id="fingerprint">{escape(fingerprint_id)}</p></body></html>'
    )
