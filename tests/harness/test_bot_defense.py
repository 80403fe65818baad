"""The bot-defense stand-in (harness.bot_defense), level by level, with real clients:
Python's ssl, curl_cffi impersonating Chrome, and Debian's Chromium through Playwright.

The pure parts (fingerprint, header rules, cookies, rate window) run in the fast tier on
ClientHello bytes captured from real clients by an in-process TLS listener; the rest
runs one stand-in per level in front of the session's demo shop.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import re
import socket
import ssl
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from curl_cffi import requests as curl_requests
from playwright.sync_api import Browser, Playwright, sync_playwright
from scrapy.settings.default_settings import USER_AGENT as SCRAPY_USER_AGENT

from core.fetch.blocks import classify
from harness.base import ServiceError
from harness.bot_defense import (
    CAPTCHA_SCRIPT,
    CAPTCHA_TEXT,
    CHALLENGE_TITLE,
    COOKIE_NAME,
    HEADERS_BLOCK_DETAIL,
    HEADERS_BLOCK_TEXT,
    HEADERS_BLOCK_TITLE,
    TLS_BLOCK_TITLE,
    VERIFY_PATH,
    BotDefense,
    ClientHello,
    parse_client_hello,
    rules,
    sessions,
    tls_fingerprint,
)
from harness.bot_defense.certs import make_self_signed, spki_sha256
from harness.bot_defense.tls import GREASE, PRE_SHARED_KEY, peek_client_hello
from harness.demo_site import DemoSite

CHROME_UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36"
)
# What Chromium 156 on Linux sends on a navigation (seen on the wire from Playwright).
CHROME_HEADERS = {
    "sec-ch-ua": '"Not:A-Brand";v="8", "Chromium";v="156"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"Linux"',
    "Upgrade-Insecure-Requests": "1",
    "User-Agent": CHROME_UA,
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
    "image/webp,image/apng,*/*;q=0.8",
    "Sec-Fetch-Site": "none",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-User": "?1",
    "Sec-Fetch-Dest": "document",
    "Accept-Encoding": "gzip, deflate, br, zstd",
    "Accept-Language": "en-US,en;q=0.9",
}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STEALTH = "--disable-blink-features=AutomationControlled"
PRODUCT = "/product/DM-00001"


# -- real ClientHellos, captured in-process ------------------------------------------------


@dataclass
class Hellos:
    """ClientHello records a client sent to a local TLS server, one per connection."""

    records: list[bytes]

    @property
    def parsed(self) -> list[ClientHello]:
        return [parse_client_hello(record) for record in self.records]


@contextlib.contextmanager
def tls_listener(tmp_path: Path) -> Iterator[tuple[str, Hellos]]:
    """A TLS server on a free loopback port that records each connection's ClientHello
    (peeked as the stand-in does), then completes the handshake and answers ``ok`` to
    one request per connection, so clients resume sessions as they would for real."""
    cert, key = tmp_path / "listener.crt", tmp_path / "listener.key"
    make_self_signed(cert, key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    server = socket.create_server(("127.0.0.1", 0))
    hellos = Hellos([])

    def serve(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(5)
            hellos.records.append(peek_client_hello(conn))
            with context.wrap_socket(conn, server_side=True) as tls:
                while b"\r\n\r\n" not in tls.recv(65536):
                    pass
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.getsockname()[1]}", hellos
    finally:
        server.close()


def python_ssl_get(url: str) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        response.read()


def curl_cffi_get(url: str, connections: int = 1) -> None:
    """``connections`` requests on one curl_cffi session, each on a new connection (the
    later ones resume the first's TLS session)."""
    with curl_requests.Session(impersonate="chrome152", verify=False) as session:
        for _ in range(connections):
            session.get(url, headers={"Connection": "close"}, timeout=10)


def capture(tmp_path: Path, client: Callable[[str], None]) -> Hellos:
    with tls_listener(tmp_path) as (url, hellos):
        client(url)
    return hellos


def encode_client_hello(hello: ClientHello, random_bytes: bytes = bytes(32)) -> bytes:
    """The record for ``hello`` (the inverse of parse_client_hello, for variations)."""

    def vector(data: bytes, size: int) -> bytes:
        return len(data).to_bytes(size, "big") + data

    def u16s(values: tuple[int, ...]) -> bytes:
        return b"".join(v.to_bytes(2, "big") for v in values)

    extensions = b"".join(kind.to_bytes(2, "big") + vector(d, 2) for kind, d in hello.extensions)
    body = (
        hello.legacy_version.to_bytes(2, "big")
        + random_bytes
        + vector(b"", 1)
        + vector(u16s(hello.cipher_suites), 2)
        + vector(b"\x00", 1)
        + vector(extensions, 2)
    )
    handshake = b"\x01" + vector(body, 3)
    return b"\x16\x03\x01" + vector(handshake, 2)


def with_extension(hello: ClientHello, kind: int, data: bytes) -> ClientHello:
    extensions = [(k, d) for k, d in hello.extensions if k != kind] + [(kind, data)]
    return parse_client_hello(encode_client_hello(replace(hello, extensions=tuple(extensions))))


# -- the fingerprint (fast) ----------------------------------------------------------------


def test_client_hello_is_parsed_from_real_bytes(tmp_path: Path) -> None:
    hello = capture(tmp_path, curl_cffi_get).parsed[0]
    assert 0x1301 in hello.cipher_suites  # TLS_AES_128_GCM_SHA256
    assert hello.alpn == ("h2", "http/1.1")
    assert 0x0304 in hello.supported_versions
    assert hello.signature_algorithms and hello.supported_groups
    assert hello.server_name is None  # an IP address has no SNI
    # The record round-trips through the test's encoder, so variations below are fair.
    assert parse_client_hello(encode_client_hello(hello)).extensions == hello.extensions


def test_fingerprint_tells_tls_stacks_apart_and_is_stable_per_stack(tmp_path: Path) -> None:
    python = [tls_fingerprint(h) for h in capture(tmp_path, python_ssl_get).parsed]
    chrome = [tls_fingerprint(h) for h in capture(tmp_path, curl_cffi_get).parsed]
    again = [tls_fingerprint(h) for h in capture(tmp_path, curl_cffi_get).parsed]
    assert python[0].id != chrome[0].id
    assert chrome[0] == again[0]
    assert re.fullmatch(r"t13_\d\d_\d\d_[0-9a-f]{12}", chrome[0].id)
    assert chrome[0].full.startswith("t13 ciphers=") and "alpn=h2,http/1.1" in chrome[0].full


def test_fingerprint_ignores_grease_order_and_resumption(tmp_path: Path) -> None:
    # Real resumption: curl_cffi's later connections resume the first's session (PSK).
    hellos = capture(tmp_path, lambda url: curl_cffi_get(url, connections=3)).parsed
    assert any(PRE_SHARED_KEY in h.extension_types for h in hellos[1:])
    assert len({tls_fingerprint(h) for h in hellos}) == 1

    base = hellos[0]
    fingerprint = tls_fingerprint(base)
    # Chromium's habits: a GREASE value in signature_algorithms, its extensions shuffled,
    # other GREASE values per connection, pre_shared_key on a resumed connection.
    sigalgs = (0x8A8A, *base.signature_algorithms)
    variant = with_extension(
        base,
        13,
        (2 * len(sigalgs)).to_bytes(2, "big") + b"".join(s.to_bytes(2, "big") for s in sigalgs),
    )
    variant = with_extension(variant, PRE_SHARED_KEY, b"\x00\x00")
    shuffled = list(variant.extensions)
    random.Random(7).shuffle(shuffled)
    regreased = tuple((0xDADA if kind in GREASE else kind, data) for kind, data in shuffled)
    ciphers = tuple(0x3A3A if c in GREASE else c for c in variant.cipher_suites)
    variant = replace(variant, extensions=regreased, cipher_suites=ciphers)
    assert tls_fingerprint(parse_client_hello(encode_client_hello(variant))) == fingerprint

    # What a different stack would change does change it.
    fewer = replace(base, cipher_suites=base.cipher_suites[:-1])
    assert tls_fingerprint(fewer).id != fingerprint.id
    no_alpn = with_extension(base, 16, b"\x00\x09\x08http/1.1")
    assert tls_fingerprint(no_alpn).id != fingerprint.id


# -- header rules, cookies, rate window (fast) ---------------------------------------------


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"User-Agent": None}, rules.UA_MISSING),
        ({"User-Agent": SCRAPY_USER_AGENT}, rules.UA_AUTOMATION),
        ({"User-Agent": "Python-urllib/3.11"}, rules.UA_AUTOMATION),
        ({"User-Agent": CHROME_UA.replace("Chrome/", "HeadlessChrome/")}, rules.UA_AUTOMATION),
        ({"User-Agent": "Opera/9.80 (X11; Linux x86_64) Presto/2.12"}, rules.UA_NOT_BROWSER),
        ({"sec-ch-ua": None}, rules.CH_MISSING),
        ({"sec-ch-ua": '"Chromium";v="152", "Not:A-Brand";v="8"'}, rules.CH_VERSION),
        ({"sec-ch-ua-platform": '"Windows"'}, rules.CH_PLATFORM),
        ({"sec-ch-ua-mobile": "?1"}, rules.CH_MOBILE),
        ({"Accept-Language": None}, rules.ACCEPT_LANGUAGE_MISSING),
        ({"Accept-Language": "en"}, rules.ACCEPT_LANGUAGE_BARE),
        ({"Sec-Fetch-Mode": None}, rules.SEC_FETCH_MISSING),
        ({"Accept-Encoding": None}, rules.ACCEPT_ENCODING_MISSING),
    ],
)
def test_header_rules_name_the_first_broken_rule(
    change: dict[str, str | None], reason: str
) -> None:
    headers = {**CHROME_HEADERS, **change}
    assert (
        rules.header_problem(_lower({k: v for k, v in headers.items() if v is not None})) == reason
    )


def test_header_rules_pass_real_browsers() -> None:
    assert rules.header_problem(_lower(CHROME_HEADERS)) is None
    # Google Chrome's brand list on Windows; a subresource needs no Sec-Fetch-*.
    windows = {
        **CHROME_HEADERS,
        "User-Agent": CHROME_UA.replace("X11; Linux x86_64", "Windows NT 10.0; Win64; x64"),
        "sec-ch-ua": '"Google Chrome";v="156", "Chromium";v="156", "Not:A-Brand";v="8"',
        "sec-ch-ua-platform": '"Windows"',
        "Accept": "image/avif,image/webp,*/*;q=0.8",
    }
    del windows["Sec-Fetch-Mode"]
    assert rules.header_problem(_lower(windows)) is None
    firefox = {
        "user-agent": "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0",
        "accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
        "accept-language": "de-DE,de;q=0.8",
        "accept-encoding": "gzip, deflate, br",
    }
    assert rules.header_problem(firefox) is None  # no client hints: not a Chrome UA


def solve(nonce: str, difficulty: int) -> int:
    answer = 0
    while not sessions.pow_ok(nonce, answer, difficulty):
        answer += 1
    return answer


def test_cookie_is_sealed_and_bound() -> None:
    book = sessions.Sessions(ttl=60, rate=5, window=10, difficulty=8)
    nonce = book.nonce(now=1000)
    payload = {"nonce": nonce, "answer": solve(nonce, 8), "webdriver": False}
    assert book.verify({**payload, "webdriver": True}, now=1001) == sessions.WEBDRIVER
    wrong = next(i for i in range(1000) if not sessions.pow_ok(nonce, i, 8))
    assert book.verify({**payload, "answer": wrong}, now=1001) == sessions.BAD_ANSWER
    assert book.verify({**payload, "answer": -1}, now=1001) == sessions.BAD_ANSWER
    assert book.verify(payload, now=1000 + sessions.NONCE_TTL + 1) == sessions.STALE_NONCE
    forged_nonce = nonce[:-1] + ("1" if nonce[-1] == "0" else "0")
    assert book.verify({**payload, "nonce": forged_nonce}, now=1001) == sessions.BAD_NONCE
    assert book.verify(payload, now=1001) is None
    assert book.verify(payload, now=1002) == sessions.SPENT_NONCE

    me = sessions.Binding(CHROME_UA, "127.0.0.1", "t13_15_15_aaaaaaaaaaaa")
    sid, cookie = book.issue(me, now=1000)
    assert book.open(cookie, me, now=1010) == sessions.Opened(sid, None)
    assert book.open(cookie, me, now=1060) == sessions.Opened(sid, sessions.EXPIRED)
    other_ua = replace(me, user_agent=CHROME_UA.replace("156", "155"))
    assert book.open(cookie, other_ua, now=1010) == sessions.Opened(sid, sessions.FOREIGN_UA)
    other_ip = replace(me, client="127.0.0.2")
    assert book.open(cookie, other_ip, now=1010) == sessions.Opened(sid, sessions.FOREIGN_CLIENT)
    other_tls = replace(me, tls="t13_18_09_bbbbbbbbbbbb")
    assert book.open(cookie, other_tls, now=1010) == sessions.Opened(sid, sessions.FOREIGN_TLS)
    payload_b64, mac = cookie.split(".")
    forged = payload_b64[:-2] + ("AA" if payload_b64[-2:] != "AA" else "BB") + "." + mac
    assert book.open(forged, me, now=1010) == sessions.TAMPERED
    assert book.open("garbage", me) == sessions.TAMPERED
    assert book.open(None, me) == sessions.NO_COOKIE
    # Another process (a restart) has another secret: its cookies are forgeries here.
    assert sessions.Sessions(ttl=60, rate=5, window=10).open(cookie, me) == sessions.TAMPERED


def test_rate_window_slides_and_a_burnt_session_stays_burnt() -> None:
    book = sessions.Sessions(ttl=60, rate=3, window=10)
    assert [book.hit("a", now=t) for t in (0, 1, 2)] == [None, None, None]
    assert book.hit("a", now=10.5) is None  # the hit at 0 left the window
    assert book.hit("b", now=10.5) is None  # windows are per session
    assert book.hit("a", now=11.5) is None  # ... and the one at 1
    assert book.hit("a", now=11.6) == sessions.RATE  # 2, 10.5, 11.5 are in: a fourth
    assert book.burnt("a") and not book.burnt("b")
    assert book.hit("a", now=100) == sessions.BURNT


# -- the running stand-in --------------------------------------------------------------------


def curl(
    defense: BotDefense,
    path: str = PRODUCT,
    *,
    headers: dict[str, str] | None = None,
    session: curl_requests.Session | None = None,
    **kwargs: Any,
) -> curl_requests.Response:
    """One request as Chrome 152's TLS stack with Chromium 156's headers (by default)."""
    own = session is None
    session = session or curl_requests.Session(impersonate="chrome152")
    try:
        return session.request(
            kwargs.pop("method", "GET"),
            defense.url + path,
            headers=CHROME_HEADERS if headers is None else headers,
            default_headers=False,
            verify=str(defense.cert_path),
            timeout=30,
            **kwargs,
        )
    finally:
        if own:
            session.close()


def python_get(defense: BotDefense, path: str, headers: dict[str, str]) -> tuple[int, str]:
    """One request over Python's ssl (OpenSSL's ClientHello), trusting the stand-in."""
    conn = http.client.HTTPSConnection(
        defense.host, defense.port, context=defense.ssl_context(), timeout=30
    )
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def solved_cookie(defense: BotDefense, session: curl_requests.Session | None = None) -> str:
    """A session cookie got as the challenge page's script would, by curl_cffi."""
    page = curl(defense, session=session)
    assert page.status_code == 403 and page.headers.get("cf-mitigated") == "challenge"
    options = json.loads(re.search(r"window\._cf_chl_opt = (\{.*?\});", page.text).group(1))
    body = {"nonce": options["cN"], "answer": solve(options["cN"], options["cD"])}
    body["webdriver"] = False
    verify_headers = {**CHROME_HEADERS, "Accept": "*/*", "Content-Type": "application/json"}
    answer = curl(
        defense,
        VERIFY_PATH,
        method="POST",
        headers=verify_headers,
        data=json.dumps(body),
        session=session,
    )
    assert answer.status_code == 200, answer.text
    set_cookie = answer.headers.get("set-cookie")
    for attribute in ("Path=/", "HttpOnly", "Secure", "SameSite=Lax", "Max-Age="):
        assert attribute in set_cookie
    return re.match(rf"{COOKIE_NAME}=([^;]+)", set_cookie).group(1)


def with_cookie(cookie: str, **changes: str) -> dict[str, str]:
    return {**CHROME_HEADERS, **changes, "Cookie": f"theme=dark; {COOKIE_NAME}={cookie}"}


def last(defense: BotDefense) -> dict[str, Any]:
    return defense.log_records()[-1]


def _start(demo: DemoSite, run_dir: Path, level: int, **knobs: Any) -> BotDefense:
    return BotDefense(upstream=demo.url, level=level, run_dir=run_dir, **knobs).start()


@pytest.fixture(scope="module")
def level0(demo_site_server: DemoSite, run_dir: Path) -> Iterator[BotDefense]:
    defense = _start(demo_site_server, run_dir, 0)
    yield defense
    defense.stop()


@pytest.fixture(scope="module")
def level1(demo_site_server: DemoSite, run_dir: Path) -> Iterator[BotDefense]:
    defense = _start(demo_site_server, run_dir, 1)
    yield defense
    defense.stop()


@pytest.fixture(scope="module")
def level2(demo_site_server: DemoSite, run_dir: Path) -> Iterator[BotDefense]:
    defense = _start(demo_site_server, run_dir, 2)
    yield defense
    defense.stop()


@pytest.fixture(scope="module")
def python_fingerprint(tmp_path_factory: pytest.TempPathFactory) -> str:
    hellos = capture(tmp_path_factory.mktemp("python-hello"), python_ssl_get)
    return tls_fingerprint(hellos.parsed[0]).id


@pytest.fixture(scope="module")
def level3(
    demo_site_server: DemoSite, run_dir: Path, python_fingerprint: str
) -> Iterator[BotDefense]:
    # Python's TLS stack is allowed too, so a cookie can be shown bound to Chromium's.
    defense = _start(demo_site_server, run_dir, 3, allow_fingerprints=[python_fingerprint])
    yield defense
    defense.stop()


@pytest.fixture(scope="module")
def level4(demo_site_server: DemoSite, run_dir: Path) -> Iterator[BotDefense]:
    defense = _start(demo_site_server, run_dir, 4, session_rate=5, rate_window=60)
    yield defense
    defense.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[tuple[Playwright, Browser]]:
    with sync_playwright() as playwright:
        stealthy = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=[*CHROMIUM_ARGS, STEALTH]
        )
        yield playwright, stealthy
        stealthy.close()


def test_level0_relays_plain_python_over_tls(
    level0: BotDefense, demo_site_server: DemoSite
) -> None:
    level0.clear_log()
    before = len(demo_site_server.access_log())
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(level0.url + PRODUCT + "?x=1", context=context) as response:
        page = response.read().decode()
        assert response.status == 200 and "Demo Store" in page
    record = last(level0)
    assert record["decision"] == "pass" and record["path"] == PRODUCT + "?x=1"
    assert record["ua"].startswith("Python-urllib/")
    upstream = demo_site_server.access_log()[before:]
    assert [(r["method"], r["path"]) for r in upstream] == [("GET", PRODUCT + "?x=1")]

    # HTTPS only, with the certificate it says: its SPKI hash is what the server shows,
    # trusting the PEM file verifies 127.0.0.1, and only http/1.1 is negotiated.
    trusting = level0.ssl_context()
    trusting.set_alpn_protocols(["h2", "http/1.1"])
    with (
        socket.create_connection((level0.host, level0.port)) as raw,
        trusting.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.selected_alpn_protocol() == "http/1.1"
        served = tls.getpeercert(binary_form=True)
    assert spki_sha256(level0.cert_path) == level0.spki_sha256
    assert ssl.DER_cert_to_PEM_cert(served).strip() == level0.cert_path.read_text().strip()
    # Absolute links name the stand-in, not the plain-HTTP upstream.
    robots = curl(level0, "/robots.txt").text
    assert f"Sitemap: {level0.url}/sitemap.xml" in robots


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"User-Agent": SCRAPY_USER_AGENT}, rules.UA_AUTOMATION),
        ({"Accept-Language": "en"}, rules.ACCEPT_LANGUAGE_BARE),
        (
            {"sec-ch-ua": None, "sec-ch-ua-mobile": None, "sec-ch-ua-platform": None},
            rules.CH_MISSING,
        ),
        ({"User-Agent": CHROME_UA.replace("Chrome/", "HeadlessChrome/")}, rules.UA_AUTOMATION),
    ],
)
def test_level1_refuses_inconsistent_headers(
    level1: BotDefense, demo_site_server: DemoSite, change: dict[str, str | None], reason: str
) -> None:
    before = len(demo_site_server.access_log())
    headers = {k: v for k, v in {**CHROME_HEADERS, **change}.items() if v is not None}
    page = curl(level1, headers=headers)
    assert page.status_code == 403
    for marker in (HEADERS_BLOCK_TITLE, HEADERS_BLOCK_TEXT, "Error", "1010", HEADERS_BLOCK_DETAIL):
        assert marker in page.text
    verdict = classify(page.status_code, dict(page.headers), page.content)
    assert verdict.kind == "blocked", verdict
    record = last(level1)
    assert (record["decision"], record["reason"], record["status"]) == ("headers", reason, 403)
    assert record["ref"] in page.text  # the Ray ID on the page is the log's
    assert len(demo_site_server.access_log()) == before  # never reached the site


def test_level1_passes_a_consistent_chrome(level1: BotDefense) -> None:
    page = curl(level1)
    assert page.status_code == 200 and "Demo Store" in page.text
    assert last(level1)["decision"] == "pass"


def test_level2_refuses_pythons_tls_with_perfect_headers(level2: BotDefense) -> None:
    # Two requests on one connection: every request of a refused connection is refused.
    conn = http.client.HTTPSConnection(
        level2.host, level2.port, context=level2.ssl_context(), timeout=30
    )
    try:
        for _ in range(2):
            conn.request("GET", PRODUCT, headers=CHROME_HEADERS)
            response = conn.getresponse()
            page = response.read().decode()
            assert response.status == 403
            assert f"<TITLE>{TLS_BLOCK_TITLE}</TITLE>" in page
            assert "You don't have permission to access" in page
            assert re.search(r"Reference #18\.[0-9a-f]+\.", page)
            assert classify(403, dict(response.getheaders()), page).kind == "blocked"
            record = last(level2)
            assert (record["decision"], record["status"]) == ("tls", 403)
            assert record["ref"] in page
    finally:
        conn.close()


def test_level2_passes_curl_cffi_as_chrome_and_learned_chromium(level2: BotDefense) -> None:
    with curl_requests.Session(impersonate="chrome152") as session:
        for path in (PRODUCT, "/robots.txt", "/category/kitchen"):
            # A new connection each time: resumed ones (pre_shared_key) must pass too.
            headers = {**CHROME_HEADERS, "Connection": "close"}
            assert curl(level2, path, headers=headers, session=session).status_code == 200
    stats = level2.stats()
    learned = [entry["id"] for entry in stats["allowlist"]]
    assert last(level2)["tls"] in learned  # Debian's Chromium 156 == curl_cffi chrome152
    assert stats["by_decision"]["tls"] == sum(
        1 for r in level2.log_records() if r["decision"] == "tls"
    )


def test_level2_without_chromium_fails_to_start_with_one_line(
    demo_site_server: DemoSite, tmp_path: Path
) -> None:
    defense = BotDefense(
        upstream=demo_site_server.url, level=2, run_dir=tmp_path, chromium="/nonexistent/chromium"
    )
    with pytest.raises(ServiceError) as failure:
        defense.start()
    assert "cannot start level 2: no Chromium at /nonexistent/chromium" in str(failure.value)


def test_level3_chromium_passes_the_challenge_and_its_cookie_is_bound(
    level3: BotDefense, browser: tuple[Playwright, Browser], python_fingerprint: str
) -> None:
    _, stealthy = browser
    level3.clear_log()
    context = stealthy.new_context(user_agent=CHROME_UA, ignore_https_errors=True)
    try:
        page = context.new_page()
        first = page.goto(level3.url + PRODUCT)
        assert first is not None and first.status == 403  # the challenge, then a reload
        page.wait_for_function("document.title.includes('Demo Store')", timeout=20_000)
        assert page.locator("h1").first.text_content()
        cookie = next(c for c in context.cookies() if c["name"] == COOKIE_NAME)
        assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
    finally:
        context.close()
    # (Chromium also asks for /favicon.ico meanwhile, which is challenged in turn.)
    decisions = [
        (r["path"], r["decision"], r["reason"])
        for r in level3.log_records()
        if r["path"] in (PRODUCT, VERIFY_PATH)
    ]
    assert decisions == [
        (PRODUCT, "challenge", "no_cookie"),
        (VERIFY_PATH, "verified", None),
        (PRODUCT, "pass", None),
    ]
    session = next(r["session"] for r in level3.log_records() if r["decision"] == "verified")
    value = cookie["value"]

    # The same cookie from curl_cffi (Chrome's TLS stack, the same UA, same address).
    assert curl(level3, headers=with_cookie(value)).status_code == 200
    assert last(level3)["session"] == session
    # ... but not with another UA, tampered with, from another address or TLS stack.
    other_ua = CHROME_UA.replace("X11; Linux x86_64", "X11; Linux aarch64")
    page = curl(level3, headers=with_cookie(value, **{"User-Agent": other_ua}))
    assert page.status_code == 403 and CHALLENGE_TITLE in page.text
    assert (last(level3)["reason"], last(level3)["session"]) == ("foreign_ua", session)
    tampered = value[:5] + ("A" if value[5] != "A" else "B") + value[6:]
    assert curl(level3, headers=with_cookie(tampered)).status_code == 403
    assert (last(level3)["reason"], last(level3)["session"]) == ("tampered", None)
    assert curl(level3, headers=with_cookie(value), interface="127.0.0.2").status_code == 403
    assert last(level3)["reason"] == "foreign_client"
    status, _ = python_get(level3, PRODUCT, with_cookie(value))
    assert status == 403
    assert (last(level3)["reason"], last(level3)["tls"]) == ("foreign_tls", python_fingerprint)


def test_level3_challenge_page_and_what_it_exempts(level3: BotDefense) -> None:
    page = curl(level3)
    assert page.status_code == 403 and page.headers.get("cf-mitigated") == "challenge"
    assert f"<title>{CHALLENGE_TITLE}</title>" in page.text
    assert "window._cf_chl_opt = {" in page.text and "navigator.webdriver" in page.text
    assert classify(403, dict(page.headers), page.content).kind == "challenge"
    # robots.txt needs no session; the other levels still apply to it.
    assert curl(level3, "/robots.txt").status_code == 200
    assert last(level3)["decision"] == "pass"
    assert curl(level3, "/robots.txt", headers={"User-Agent": "curl/8"}).status_code == 403
    # Wrong answers and automation get no cookie.
    options = json.loads(re.search(r"window\._cf_chl_opt = (\{.*?\});", page.text).group(1))
    headers = {**CHROME_HEADERS, "Accept": "*/*", "Content-Type": "application/json"}
    for body, reason in (
        ({"nonce": options["cN"], "answer": -1, "webdriver": False}, "bad_answer"),
        ({"nonce": options["cN"], "answer": 0, "webdriver": True}, "webdriver"),
        ({"nonce": "x.1.y", "answer": 0, "webdriver": False}, "bad_nonce"),
    ):
        answer = curl(level3, VERIFY_PATH, method="POST", headers=headers, data=json.dumps(body))
        assert answer.status_code == 403 and "set-cookie" not in answer.headers
        assert (last(level3)["decision"], last(level3)["reason"]) == ("verify_failed", reason)


def test_level3_cookie_expires(demo_site_server: DemoSite, run_dir: Path) -> None:
    defense = _start(demo_site_server, run_dir, 3, cookie_ttl=1.5)
    try:
        cookie = solved_cookie(defense)
        assert curl(defense, headers=with_cookie(cookie)).status_code == 200
        tries = 0
        while curl(defense, headers=with_cookie(cookie)).status_code == 200:
            tries += 1
            assert tries < 50, "the cookie never expired"
            time.sleep(0.1)
        assert (last(defense)["decision"], last(defense)["reason"]) == ("challenge", "expired")
    finally:
        defense.stop()


def test_level3_automation_marked_chromium_never_gets_a_cookie(
    level3: BotDefense, browser: tuple[Playwright, Browser]
) -> None:
    playwright, _ = browser
    # Playwright's defaults: navigator.webdriver is true. The certificate is trusted by
    # its SPKI hash here (the platform's way) rather than by ignoring every error.
    marked = playwright.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=[*CHROMIUM_ARGS, f"--ignore-certificate-errors-spki-list={level3.spki_sha256}"],
    )
    try:
        context = marked.new_context(user_agent=CHROME_UA)
        page = context.new_page()
        level3.clear_log()
        page.goto(level3.url + PRODUCT)
        assert page.evaluate("navigator.webdriver") is True
        page.wait_for_function(
            "document.getElementById('challenge-running').textContent.includes('automated')"
        )
        page.wait_for_timeout(500)
        assert page.title() == CHALLENGE_TITLE
        assert not [c for c in context.cookies() if c["name"] == COOKIE_NAME]
    finally:
        marked.close()
    assert {r["decision"] for r in level3.log_records()} <= {"challenge"}


def test_level4_rate_burns_the_session_into_a_captcha(level4: BotDefense) -> None:
    level4.clear_log()
    cookie = solved_cookie(level4)
    for _ in range(5):
        assert curl(level4, headers=with_cookie(cookie)).status_code == 200
    page = curl(level4, headers=with_cookie(cookie))
    assert page.status_code == 403
    assert (
        "var dd={'rt':'c','cid':" in page.text and "'host':'geo.captcha-delivery.com'" in page.text
    )
    assert f'src="{CAPTCHA_SCRIPT}"' in page.text and CAPTCHA_TEXT in page.text
    assert classify(403, dict(page.headers), page.content).kind == "captcha"
    assert (last(level4)["decision"], last(level4)["reason"]) == ("captcha", "rate")
    # Burnt: every later request with that cookie, however slow, robots.txt aside.
    for path in (PRODUCT, "/category/kitchen"):
        assert curl(level4, path, headers=with_cookie(cookie)).status_code == 403
        assert (last(level4)["decision"], last(level4)["reason"]) == ("captcha", "burnt")
    assert curl(level4, "/robots.txt", headers=with_cookie(cookie)).status_code == 200
    # A new session starts afresh.
    fresh = solved_cookie(level4)
    assert curl(level4, headers=with_cookie(fresh)).status_code == 200
    stats = level4.stats()
    assert (stats["sessions_issued"], stats["sessions_burnt"]) == (2, 1)


def test_log_counts_equal_stats_and_requests_sent(
    level4: BotDefense, demo_site_server: DemoSite
) -> None:
    level4.clear_log()
    before = len(demo_site_server.access_log())
    sent = 0

    def send(**kwargs: Any) -> int:
        nonlocal sent
        sent += 1
        return curl(level4, **kwargs).status_code

    send(headers={**CHROME_HEADERS, "Accept-Language": "en"})  # headers
    # (Not Accept-Encoding: curl_cffi's impersonation adds it whatever it is given.)
    no_fetch_mode = {k: v for k, v in CHROME_HEADERS.items() if k != "Sec-Fetch-Mode"}
    send(headers=no_fetch_mode)  # headers
    send(path="/robots.txt")  # pass
    status, _ = python_get(level4, "/robots.txt", CHROME_HEADERS)  # tls
    sent += 1
    assert status == 403
    with curl_requests.Session(impersonate="chrome152") as session:
        cookie = solved_cookie(level4, session)  # challenge + verified
        sent += 2
        for _ in range(7):  # 5 pass, captcha rate, captcha burnt
            send(headers=with_cookie(cookie), session=session)
    records = level4.log_records()
    stats = level4.stats()
    assert len(records) == sent == stats["requests"]
    decisions = Counter(r["decision"] for r in records)
    assert decisions == {k: v for k, v in stats["by_decision"].items() if v}
    assert decisions == {
        "headers": 2,
        "pass": 6,
        "tls": 1,
        "challenge": 1,
        "verified": 1,
        "captcha": 2,
    }
    reasons: dict[str, Counter[str]] = {}
    for r in records:
        reasons.setdefault(r["decision"], Counter())[r["reason"] or "-"] += 1
    assert reasons == stats["by_reason"]
    assert Counter(str(r["status"]) for r in records) == stats["by_status"]
    # Only passed requests reached the site, each once.
    upstream = demo_site_server.access_log()[before:]
    assert len(upstream) == decisions["pass"]
    assert sorted(r["path"] for r in upstream) == sorted(
        r["path"] for r in records if r["decision"] == "pass"
    )


# -- vendor styles (harness.bot_defense.styles) -----------------------------------------------


@pytest.mark.parametrize(
    ("style", "status", "marker", "rule"),
    [
        ("aws", 202, ("x-amzn-waf-action", "challenge"), "aws waf challenge"),
        ("datadome", 403, ("x-datadome", "protected"), "datadome interstitial"),
    ],
)
def test_each_style_challenges_as_its_vendor_and_chromium_passes_it(
    demo_site_server: DemoSite,
    run_dir: Path,
    browser: tuple[Playwright, Browser],
    style: str,
    status: int,
    marker: tuple[str, str],
    rule: str,
) -> None:
    """AWS WAF's interstitial (its script writes aws-waf-token and reloads) and DataDome's
    device check (its script writes datadome and goes back to the URL): each is what
    core.fetch.blocks calls a challenge, and a real browser gets past it by itself, robots.txt
    and an API's JSON included when robots.txt is challenged too."""
    _, stealthy = browser
    defense = _start(demo_site_server, run_dir / style, 3, style=style, challenge_robots=True)
    try:
        page = curl(defense)
        assert page.status_code == status and page.headers.get(marker[0]) == marker[1]
        verdict = classify(page.status_code, dict(page.headers), page.content)
        assert verdict.kind == "challenge" and verdict.reason.startswith(rule.split()[0])
        # Without its headers too (a vendor's page is known by its body).
        assert classify(200, {}, page.content).kind == "challenge"
        robots = curl(defense, "/robots.txt")
        assert robots.status_code == status and last(defense)["decision"] == "challenge"
        context = stealthy.new_context(user_agent=CHROME_UA, ignore_https_errors=True)
        try:
            tab = context.new_page()
            first = tab.goto(defense.url + PRODUCT)
            assert first is not None and first.status == status
            tab.wait_for_function("document.title.includes('Demo Store')", timeout=20_000)
            cookie = next(c for c in context.cookies() if c["name"] == defense.cookie_name)
            assert cookie["secure"] and not cookie["httpOnly"]  # written by the script
            text = tab.goto(defense.url + "/robots.txt")
            assert text is not None and text.status == 200 and "Disallow" in text.text()
        finally:
            context.close()
        # The cookie the browser's script wrote serves curl_cffi (same UA and address).
        headers = {**CHROME_HEADERS, "Cookie": f"{defense.cookie_name}={cookie['value']}"}
        assert curl(defense, headers=headers).status_code == 200
        stats = defense.stats()
        assert (stats["style"], stats["cookie_name"]) == (style, defense.cookie_name)
    finally:
        defense.stop()


def test_a_styles_header_refusal_is_its_vendors(demo_site_server: DemoSite, run_dir: Path) -> None:
    """Level 1 refuses a self-announcing client the way each vendor does: DataDome with
    its CAPTCHA page, AWS (CloudFront) with a bare 403."""
    bot = {**CHROME_HEADERS, "User-Agent": "scraping-platform/0.1 (+https://example.invalid/bot)"}
    for style, kind in (("datadome", "captcha"), ("aws", "blocked"), ("cloudflare", "blocked")):
        defense = _start(demo_site_server, run_dir / f"{style}-1", 1, style=style)
        try:
            page = curl(defense, headers=bot)
            assert page.status_code == 403
            assert classify(403, dict(page.headers), page.content).kind == kind, style
            assert (last(defense)["decision"], last(defense)["reason"]) == (
                "headers",
                "ua_automation",
            )
        finally:
            defense.stop()
