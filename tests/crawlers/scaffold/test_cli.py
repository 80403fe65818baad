"""``python -m crawlers.scaffold``: operator errors in process; the real command against
the demo shop on loopback, into temporary profile and site directories."""

from __future__ import annotations

import functools
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlers.items import schema_by_type
from crawlers.profiles import SiteProfile
from crawlers.scaffold import __main__ as cli
from crawlers.scaffold.site_map import SiteMap
from crawlers.scaffold.study import Study
from harness import job_board_site
from harness.demo_site import DemoSite
from tests.crawlers.support import REPO_ROOT

# -- operator mistakes: one line, exit 2, nothing fetched ---------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["Acme-Shop", "http://x.test/"], "site name 'Acme-Shop': use a-z, 0-9 and _ only"),
        (["acme", "x.test/shop"], "url 'x.test/shop': expected an http(s) URL"),
        (["acme", "ftp://x.test/"], "url 'ftp://x.test/': expected an http(s) URL"),
        (["acme", "http://x.test/", "--pages", "1"], "--pages 1: sample at least 3 pages"),
        (["acme", "http://x.test/", "--item-type", "widget"], "--item-type 'widget': expected one"),
        (["acme", "http://x.test/", "--item-type", "hotel", "--pages", "2"], "--pages 2: sample"),
    ],
)
def test_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_an_existing_site_needs_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "PROFILES_DIR", tmp_path / "profiles")
    monkeypatch.setattr(cli, "SITES_DIR", tmp_path / "sites")
    (tmp_path / "sites" / "acme").mkdir(parents=True)
    assert cli.main(["acme", "http://x.test/"]) == 2
    err = capsys.readouterr().err
    assert err == f"{tmp_path / 'sites' / 'acme'} exists: pass --force to replace site 'acme'\n"


# -- the real command ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    # 300 products: 12 categories of 25, so every category has a second, one-card page.
    run_dir = tmp_path_factory.mktemp("scaffold-shop")
    with DemoSite(products=300, run_dir=run_dir, name="scaffold-shop") as server:
        yield server


def scaffold(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env |= {
        "SITE_PROFILES_DIR": str(tmp_path / "profiles"),
        "FINGERPRINT_SITES_DIR": str(tmp_path / "sites"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "crawlers.scaffold", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.integration
def test_scaffold_the_demo_shop(shop: DemoSite, tmp_path: Path) -> None:
    done = scaffold(tmp_path, "shop", shop.url + "/", "--pages", "50")
    assert done.returncode == 0, done.stdout + done.stderr
    report = done.stdout
    profile = SiteProfile.load("shop", tmp_path / "profiles")
    assert profile.item_type == "product" and profile.base_url == shop.url
    assert profile.sitemaps == ("/sitemap.xml",)
    assert next(iter(profile.pages)) == "product" and "listing" in profile.pages
    product = profile.pages["product"]
    assert product.item == "Product"
    assert product.url_patterns == ("^/product/[^/?#]+$",)
    data = {name: rules[0].data for name, rules in product.fields.items()}
    # Every field its JSON-LD carries is read from there first.
    for name, path in {
        "name": "name",
        "product_id": "sku",
        "brand": "brand.name",
        "price": "offers.price",
        "currency": "offers.priceCurrency",
        "availability": "offers.availability",
        "rating": "aggregateRating.ratingValue",
        "review_count": "aggregateRating.reviewCount",
    }.items():
        assert data[name] == path, name
    # ... with the page's own element after it where one shows the same value.
    assert (product.fields["name"][1].css or "").startswith("h1")
    listing = profile.pages["listing"]
    assert listing.url_patterns == (r"^/category/[^/?#]+(\?page=\d+)?$",)
    assert {rule.to for rule in listing.follow} >= {"product", "listing"}
    assert profile.recrawl.item_callbacks == ("parse_product",)
    # The report: page types, each field's coverage on the sample, reach.
    assert "page types found:" in report and "field coverage on the sample" in report
    for name in data:
        line = next(line for line in report.splitlines() if line.strip().startswith(name + " "))
        found, total = line.split()[1].split("/")
        assert found == total, line
    assert "the follow rules reach" in report
    # Fixtures of every page type's sample paths, the baseline and the coverage baseline.
    site_dir = tmp_path / "sites" / "shop"
    for name, page in profile.pages.items():
        files = sorted((site_dir / "fixtures" / name).glob("*.html"))
        assert len(files) == len(page.sample_paths) >= 1, name
    baseline = json.loads((site_dir / "baseline.json").read_text())
    assert set(baseline["page_types"]) == set(profile.pages)
    coverage = json.loads((site_dir / "coverage.json").read_text())
    assert coverage["fields"]["name"]["rate"] == 1.0
    # The fields without a rule are declared unread: the coverage baseline has no hole.
    not_read = tomllib.loads((tmp_path / "profiles" / "shop.toml").read_text())["fingerprint"]
    unread = set(schema_by_type("product").field_names) - set(product.fields)
    assert set(not_read["not_read"]) == unread - {"url", "job_id", "incomplete"}
    assert set(coverage["fields"]) | unread >= set(schema_by_type("product").field_names)
    # Paths as the operator would type them: relative to the working directory.
    assert "\nwrote sites/shop/baseline.json\n" in report
    assert report.endswith("wrote sites/shop/coverage.json\n")

    again = scaffold(tmp_path, "shop", shop.url + "/")
    assert again.returncode == 2
    assert again.stderr == "profiles/shop.toml exists: pass --force to replace site 'shop'\n"
    assert again.stdout == ""
    stale = site_dir / "fixtures" / "old_type" / "page.html"
    stale.parent.mkdir()
    stale.write_text("<html></html>")
    forced = scaffold(tmp_path, "shop", shop.url + "/", "--pages", "20", "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert not stale.parent.exists()  # nothing of the replaced site's page types is left
    assert tomllib.loads((tmp_path / "profiles" / "shop.toml").read_text())["site"] == "shop"


@pytest.mark.integration
def test_scaffold_the_jobs_board(tmp_path: Path) -> None:
    """A differently built site: JobPosting JSON-LD with an HTML description, facts only
    its HTML table carries, two kinds of listing (categories, companies)."""
    with job_board_site.JobBoardSite(jobs=150, run_dir=tmp_path, name="scaffold-jobs") as board:
        done = scaffold(tmp_path, "board", board.url)
    assert done.returncode == 0, done.stdout + done.stderr
    profile = SiteProfile.load("board", tmp_path / "profiles")
    assert profile.item_type == "job_posting"
    posting = profile.pages["job_posting"]
    rules = {
        name: [rule.model_dump(exclude_defaults=True) for rule in r]
        for name, r in posting.fields.items()
    }
    assert rules["posting_id"][0] == {"data": "identifier.value"}
    assert rules["remote"][0] == {  # the structured data first, where it agrees
        "data": "jobLocationType",
        "map": {"TELECOMMUTE": True},
        "default": False,
    }
    # The rows only its HTML table has, by their labels.
    assert rules["experience_level"] == [{"table": "table.job-facts", "label": "Experience level"}]
    jsonld = {"title", "company", "employment_type", "city", "region", "country",
              "salary_min", "salary_max", "salary_currency", "salary_period", "date_posted",
              "valid_through", "description"}  # fmt: skip
    assert jsonld <= set(rules)
    assert profile.sitemaps == ("/sitemap_index.xml",)
    # The company's stars, printed only (drawn, and said in an aria-label).
    assert rules["company_rating"][0]["css"].startswith("span.rating")
    assert (tmp_path / "sites" / "board" / "baseline.json").is_file()
    assert (tmp_path / "sites" / "board" / "coverage.json").is_file()


@pytest.mark.integration
def test_an_unreachable_site_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    done = scaffold(tmp_path, "gone", f"http://127.0.0.1:{port}/", "-s", "RETRY_TIMES=0")
    assert done.returncode == 2
    assert done.stderr.startswith(f"cannot sample http://127.0.0.1:{port}/: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "profiles").exists()


@pytest.fixture
def one_page(tmp_path: Path) -> Iterator[str]:
    """A site of one page with nothing repeated on it."""
    root = tmp_path / "www"
    root.mkdir()
    words = "Nothing to list here: a page about a small workshop and what it makes. " * 12
    (root / "index.html").write_text(
        f"<html><head><title>Hello</title></head><body><h1>Hello</h1><p>{words}</p>"
        f"<p>{words}</p></body></html>"
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.integration
def test_a_site_without_items_is_one_line_naming_the_next_step(
    one_page: str, tmp_path: Path
) -> None:
    done = scaffold(tmp_path, "lonely", one_page)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith(f"cannot scaffold {one_page}: no item pages found among 1 ")
    assert "start from a page linking to the items, or raise --pages" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "profiles").exists()


@pytest.mark.integration
def test_required_fields_missing_is_one_line_and_nothing_written(
    shop: DemoSite, tmp_path: Path
) -> None:
    done = scaffold(tmp_path, "jobs", shop.url + "/", "--pages", "30", "--item-type", "job_posting")
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith(f"cannot scaffold {shop.url}/: ")
    assert "job_posting page(s) found (--item-type) but the required " in done.stderr
    assert (
        "company (0/" in done.stderr
        and "pass --item-type if they are no job_posting" in done.stderr
    )
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "profiles").exists()


def test_a_declared_type_another_profile_declares_otherwise_is_the_sites_own(
    tmp_path: Path,
) -> None:
    """Two quote sites, one keyed by its quotes' ids, the other by their text: one class
    per item type name, so the second is named after its site."""
    (tmp_path / "sayings.toml").write_text(
        'site = "sayings"\nitem_type = "quote"\n[item_fields]\n'
        'quote_id = {type = "keyword", key = true}\n'
        'text = {type = "long_text", required = true}\n'
    )
    declared = {"text": {"type": "long_text", "required": True, "key": True}}
    found = Study(SiteMap({}), None, item_type="quote", declared=declared)
    note = cli.own_declaration("quotes2", found, tmp_path)
    assert found.item_type == "quote_quotes2"
    assert note is not None and note.endswith(
        "this site's is 'quote_quotes2' (one class per item type)"
    )
    assert schema_by_type("quote_quotes2").id_field == "text"
    # The same declaration (or its own file, replaced with --force) keeps the name.
    same = Study(SiteMap({}), None, item_type="quote", declared=declared)
    (tmp_path / "sayings.toml").write_text(
        'site = "sayings"\nitem_type = "quote"\n[item_fields]\n'
        'text = {type = "long_text", required = true, key = true}\n'
    )
    assert cli.own_declaration("quotes2", same, tmp_path) is None and same.item_type == "quote"
    assert cli.own_declaration("sayings", same, tmp_path) is None


def test_a_field_the_fixtures_fill_more_than_the_sample_gets_the_gap_as_tolerance(
    tmp_path: Path,
) -> None:
    path = tmp_path / "coverage.json"
    fields = {"name": {"rate": 1.0}, "rating": {"rate": 1.0}, "brand": {"rate": 0.5}}
    path.write_text(json.dumps({"site": "s", "items": 4, "tolerance": 0.1, "fields": fields}))
    notes = cli.widen_tolerances(path, {"name": (30, 30), "rating": (23, 30), "brand": (20, 30)})
    written = json.loads(path.read_text())["fields"]
    # The gap (0.2333), the default (0.1) and twice the sample's standard error (23 of 30:
    # 0.1545; the fixtures' is 0, all four rated).
    assert written["rating"] == {"rate": 1.0, "tolerance": 0.4878}
    assert written["name"] == {"rate": 1.0}  # on every item: nothing to widen
    # On half of 4 fixture items: known within twice its standard error (0.5).
    assert written["brand"] == {"rate": 0.5, "tolerance": 0.6}
    assert notes == [
        "coverage.json rating: fixtures 100% of 4, sampled items 23/30: tolerance 49%",
        "coverage.json brand: fixtures 50% of 4, sampled items 20/30: tolerance 60%",
    ]
