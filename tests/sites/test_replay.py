"""The replay server: routes, host rewriting, robots.txt, proxy-form requests, sessions."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.replay_site import ManifestError, ReplayManifest, ReplaySite, normalise_target


def _site(tmp_path: Path, manifest: dict[str, object], files: dict[str, str]) -> Path:
    root = tmp_path / "sites" / "shop"
    root.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    (root / "replay.json").write_text(json.dumps(manifest), encoding="utf-8")
    return tmp_path / "sites"


PAGE = (
    '<html><head><link rel="canonical" href="https://www.shop.example/list?page=1"></head>'
    '<body><a href="//www.shop.example/list?page=2">next</a>'
    '<a href="https://www.shop.example.evil/x">other</a>'
    '<script>{"url":"https:\\/\\/www.shop.example\\/item\\/1"}</script></body></html>'
)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplaySite]:
    tmp = tmp_path_factory.mktemp("replay")
    sites = _site(
        tmp,
        {
            "hosts": ["https://www.shop.example"],
            "robots": ["User-agent: *", "Disallow: /private/"],
            "session_cookie": "sid",
            "login_page": "login.html",
            "routes": {
                "/list?page=1&sort=new": "pages/list.html",
                "/blocked": {"file": "pages/list.html", "status": 403},
            },
        },
        {"pages/list.html": PAGE, "login.html": "<html><body>log in</body></html>"},
    )
    with ReplaySite("shop", sites_dir=sites, run_dir=tmp / "run") as site:
        yield site


def _get(url: str, *, proxy: str | None = None, cookie: str | None = None) -> tuple[int, str]:
    handler = urllib.request.ProxyHandler({"http": proxy} if proxy else {})
    opener = urllib.request.build_opener(handler)
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with opener.open(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_pages_are_served_with_the_site_host_rewritten(replay: ReplaySite) -> None:
    replay.clear_log()
    # Query parameters in another order find the same route.
    status, body = _get(f"{replay.url}/list?sort=new&page=1", cookie="sid=abc")
    assert status == 200
    assert f'href="{replay.url}/list?page=1"' in body
    assert f'href="//127.0.0.1:{replay.port}/list?page=2"' in body  # protocol-relative kept
    assert "https://www.shop.example.evil/x" in body  # a longer host is not this site
    assert json.loads(body.split("<script>")[1].split("</script>")[0])["url"] == (
        f"{replay.url}/item/1"
    )
    assert _get(f"{replay.url}/blocked", cookie="sid=abc")[0] == 403
    assert _get(f"{replay.url}/nowhere", cookie="sid=abc")[0] == 404
    log = replay.access_log()
    assert [(e["path"], e["status"]) for e in log] == [
        ("/list?sort=new&page=1", 200),
        ("/blocked", 403),
        ("/nowhere", 404),
    ]


def test_robots_txt_disallows_the_control_paths(replay: ReplaySite) -> None:
    status, body = _get(f"{replay.url}/robots.txt")
    assert status == 200
    assert body.splitlines() == [
        "User-agent: *",
        "Disallow: /private/",
        "Disallow: /__replay/",
    ]


def test_absolute_form_requests_are_answered_like_a_proxy(replay: ReplaySite) -> None:
    replay.clear_log()
    status, body = _get(f"{replay.url}/list?page=1&sort=new", proxy=replay.url, cookie="sid=1")
    assert status == 200 and "canonical" in body
    assert replay.access_log()[-1]["proxied"] is True


def test_without_the_session_cookie_the_login_page_is_served(replay: ReplaySite) -> None:
    status, body = _get(f"{replay.url}/list?page=1&sort=new")
    assert (status, body) == (200, "<html><body>log in</body></html>")
    assert replay.access_log()[-1]["session"] is False


def test_a_manifest_naming_a_missing_file_is_refused(tmp_path: Path) -> None:
    sites = _site(tmp_path, {"routes": {"/": "missing.html"}}, {})
    with pytest.raises(ManifestError, match="missing file"):
        ReplayManifest.load("shop", sites)
    with pytest.raises(ManifestError, match="no replay manifest"):
        ReplayManifest.load("other", sites)


def test_query_normalisation() -> None:
    assert normalise_target("/p?b=2&a=1") == "/p?a=1&b=2"
    assert normalise_target("/p", "") == "/p"
