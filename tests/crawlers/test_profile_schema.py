"""The profile schema: each wrong type or value fails the load with one exact line naming the
file, the key and what was expected; nothing is coerced or split."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from crawlers.profile_schema import FingerprintTable
from crawlers.profiles import PROFILES_DIR, ProfileError, SiteProfile, profile_sites
from fingerprints.baselines.store import FingerprintConfig

SHOP = 'item_type = "p"\nbase_url = "https://shop.example"\n'
CRON = "expected a 5-field cron (minute hour day month weekday)"


def load_error(tmp_path: Path, toml: str) -> str:
    """The one-line error of loading ``toml`` as the profile of site "shop", without the file."""
    path = tmp_path / "shop.toml"
    path.write_text(toml)
    with pytest.raises(ProfileError) as info:
        SiteProfile.load("shop", tmp_path)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{path}: "
    assert message.startswith(prefix), message
    return message.removeprefix(prefix)


# -- the wrong types issue 14 found: each crashed later or was silently misread ----------------


def test_a_string_of_start_paths_is_refused_not_split_into_characters(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + 'start_paths = "/home"\n')
    assert error == 'start_paths: expected a list of strings, got "/home"'


def test_a_word_for_the_concurrency_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + '[politeness]\nconcurrency_per_domain = "sixteen"\n')
    assert error == 'politeness.concurrency_per_domain: expected an integer, got "sixteen"'


def test_a_word_for_the_download_delay_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + '[politeness]\ndownload_delay = "fast"\n')
    assert error == 'politeness.download_delay: expected a number, got "fast"'


def test_a_string_for_a_boolean_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + '[politeness]\nobey_robots = "no"\n')
    assert error == 'politeness.obey_robots: expected true or false, got "no"'


def test_a_quoted_number_of_seconds_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + '[timeouts]\nproducer = "300"\n')
    assert error == 'timeouts.producer: expected an integer, got "300"'


# -- keys and values ---------------------------------------------------------------------------


def test_a_misspelt_key_is_named_with_the_key_it_resembles(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + "[politeness]\ndownload_dealy = 2.0\n")
    assert error == 'politeness.download_dealy: unknown key (did you mean "download_delay"?)'
    error = load_error(tmp_path, SHOP + "[politness]\ndownload_delay = 2.0\n")
    assert error == 'politness: unknown key (did you mean "politeness"?)'


def test_a_missing_required_key_is_named(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'base_url = "https://shop.example"\n')
    assert error == "item_type: required key is missing"


def test_negative_delays_and_timeouts_are_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + "[politeness]\ndownload_delay = -1.5\n")
    assert error == "politeness.download_delay: expected a value >= 0, got -1.5"
    error = load_error(tmp_path, SHOP + "[timeouts]\ndrain = -60\n")
    assert error == "timeouts.drain: expected a value > 0, got -60"
    error = load_error(tmp_path, SHOP + "[politeness]\ndownload_delay = inf\n")
    assert error == "politeness.download_delay: expected a finite number, got inf"


def test_a_session_rate_of_0_is_no_budget_and_a_negative_one_is_refused(tmp_path: Path) -> None:
    # docs/fetching.md: "0: no budget" (a loopback replay's sessions are not paced).
    (tmp_path / "shop.toml").write_text(SHOP + "[fetch]\nsessions = true\nsession_rate = 0\n")
    profile = SiteProfile.load("shop", tmp_path)
    assert profile.fetch.scrapy_settings()["SESSION_MAX_RATE"] == 0
    error = load_error(tmp_path, SHOP + "[fetch]\nsession_rate = -1\n")
    assert error == "fetch.session_rate: expected a value >= 0, got -1"


def test_an_unknown_render_mode_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + 'render = "browser"\n')
    assert error == (
        'render: expected one of "never", "always", "per_request" or "auto", got "browser"'
    )


def test_a_bad_cron_is_refused_with_its_fault(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + 'schedule = "0 25 * * *"\n')
    assert error == f'schedule: {CRON}, got "0 25 * * *" (bad hour)'


def test_urls_and_paths_must_be_well_formed(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'item_type = "p"\nbase_url = "shop.example"\n')
    assert (
        error
        == 'base_url: expected an http(s) URL like https://www.example.com, got "shop.example"'
    )
    error = load_error(tmp_path, SHOP + 'start_paths = ["/", "home"]\n')
    assert error == 'start_paths[1]: expected a path starting with /, got "home"'
    error = load_error(tmp_path, 'item_type = ""\nbase_url = "https://shop.example"\n')
    assert error == 'item_type: expected a non-empty string, got ""'


def test_tables_must_be_tables_and_every_problem_is_counted(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + "politeness = 3\n")
    assert error == "politeness: expected a table, got 3"
    error = load_error(tmp_path, "item_type = 1\nbase_url = 2\n")
    assert error == "item_type: expected a string, got 1 (and 1 more problem)"


def test_a_profile_that_is_not_toml_is_named(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + "render = \n")
    assert error == "not valid TOML: Invalid value (at line 3, column 10)"


# -- the [fingerprint] table (read by fingerprints.baselines.store.FingerprintConfig) ----------


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            "[fingerprint]\nthreshold = 1.5\n",
            "fingerprint.threshold: expected a value <= 1, got 1.5",
        ),
        ("[fingerprint]\nthreshold = true\n", "fingerprint.threshold: expected a number, got true"),
        (
            '[fingerprint.page_types.Listing]\nsample_paths = ["/"]\n',
            "fingerprint.page_types.Listing: expected a page type name of a-z, 0-9, _ and -"
            ' (not starting with _ or -), got "Listing"',
        ),
        (
            '[fingerprint.page_types.listing]\nsample_paths = "/category"\n',
            "fingerprint.page_types.listing.sample_paths: expected a list of strings,"
            ' got "/category"',
        ),
        (
            '[fingerprint.page_types.listing]\nsample_paths = ["category"]\n',
            "fingerprint.page_types.listing.sample_paths[0]: expected a path starting with /,"
            ' got "category"',
        ),
        (
            '[fingerprint.page_types.listing.selectors]\nlinks = " "\n',
            'fingerprint.page_types.listing.selectors.links: expected a non-empty string, got " "',
        ),
        (
            '[fingerprint.page_types.listing]\nsample_path = ["/"]\n',
            "fingerprint.page_types.listing.sample_path: unknown key"
            ' (did you mean "sample_paths"?)',
        ),
    ],
)
def test_a_malformed_fingerprint_table_is_refused(tmp_path: Path, table: str, problem: str) -> None:
    assert load_error(tmp_path, SHOP + table) == problem


def test_a_gate_selector_is_compiled_when_the_profile_loads(tmp_path: Path) -> None:
    css = '[fingerprint.page_types.listing.selectors]\nlinks = "a[href"\n'
    assert load_error(tmp_path, SHOP + css).startswith(
        'fingerprint.page_types.listing.selectors.links: expected a CSS selector, got "a[href"'
    )
    xpath = "[fingerprint.page_types.listing.shows]\nreply = '//div[@class='\n"
    assert load_error(tmp_path, SHOP + xpath).startswith(
        "fingerprint.page_types.listing.shows.reply[0].select: expected an XPath expression"
    )
    absent = "[fingerprint.page_types.listing.absent]\nprice = { each = 'li[' }\n"
    assert load_error(tmp_path, SHOP + absent).startswith(
        "fingerprint.page_types.listing.absent.price[0].each: expected a CSS selector"
    )
    regex = "[fingerprint.page_types.listing.absent]\nprice = { re = '(unclosed' }\n"
    assert load_error(tmp_path, SHOP + regex).startswith(
        "fingerprint.page_types.listing.absent.price[0].re: expected a regular expression"
    )


@pytest.mark.parametrize("site", profile_sites())
def test_the_fingerprint_table_reaches_the_gate_as_written(site: str) -> None:
    raw = tomllib.loads((PROFILES_DIR / f"{site}.toml").read_text())
    profile = SiteProfile.load(site)
    if "pages" in raw:  # a profile-driven site: its page types derive from [pages]
        assert set(profile.fingerprint["page_types"]) == set(raw["pages"])
        written = {k: v for k, v in profile.fingerprint.items() if k != "page_types"}
        assert set(written) == set(raw.get("fingerprint", {}))
        # In the schema's own form (a list of names is a tuple).
        assert FingerprintTable.model_validate(written) == FingerprintTable.model_validate(
            raw.get("fingerprint", {})
        )
    else:
        # As written, in the schema's own form (a lone shows selector is a list of one).
        written = FingerprintTable.model_validate(raw.get("fingerprint", {}))
        assert FingerprintTable.model_validate(profile.fingerprint) == written
    config = FingerprintConfig.for_site(site)
    table = "pages" if "pages" in raw else "fingerprint.page_types"  # what hints name
    assert config == replace(
        FingerprintConfig.from_mapping(profile.fingerprint), page_types_table=table
    )


def test_no_fingerprint_table_is_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(SHOP)
    assert SiteProfile.load("shop", tmp_path).fingerprint == {}
    assert FingerprintConfig.for_site("shop", tmp_path) == FingerprintConfig()


# -- what a valid profile becomes ---------------------------------------------------------------


def test_valid_values_keep_their_types_and_the_profile_is_read_only(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(
        SHOP + 'start_paths = ["/a", "/b"]\n[politeness]\ndownload_delay = 2\n'
    )
    profile = SiteProfile.load("shop", tmp_path)
    assert profile.start_paths == ("/a", "/b") and profile.sitemaps == ()
    assert profile.politeness.download_delay == 2.0
    assert isinstance(profile.politeness.download_delay, float)
    assert (profile.timeouts.producer, profile.timeouts.drain, profile.timeouts.download) == (
        1800,
        7200,
        30,
    )
    with pytest.raises(ValueError, match="frozen"):
        profile.render = "always"  # type: ignore[misc]


# -- [pages.<name>]: the page types of a profile-driven site (crawlers.spiders.generic) -----------

PAGE = '[pages.product]\nurl_patterns = ["^/"]\n'
ONE_OF = "expected exactly one of data, css, xpath, table, url, value, got a table"


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            '[pages.product.fields]\nname = {data = "name", css = "h1"}\n',
            f"pages.product.fields.name[0]: {ONE_OF} (found data, css)",
        ),
        (
            '[pages.product.fields]\nname = {re = "(.+)"}\n',
            f"pages.product.fields.name[0]: {ONE_OF} (found none)",
        ),
        (
            '[pages.product.fields]\nname = [{css = "h1"}, {attr = "title"}]\n',
            f"pages.product.fields.name[1]: {ONE_OF} (found none)",
        ),
        (
            '[pages.product.fields]\ncolor = {table = "table.specs"}\n',
            "pages.product.fields.color[0]: expected table and label together, got a table",
        ),
        (
            '[pages.product.fields]\ncolor = {css = "p", label = "Colour"}\n',
            "pages.product.fields.color[0]: expected table and label together, got a table",
        ),
        (
            '[pages.product.fields]\nrating = {data = "ratingValue", count = true}\n',
            "pages.product.fields.rating[0]: expected count with css or xpath, got a table",
        ),
        (
            '[pages.product.fields]\nname = {css = "h1", re = "(x"}\n',
            'pages.product.fields.name[0].re: expected a regular expression, got "(x"'
            " (missing ), unterminated subpattern at position 0)",
        ),
        (
            '[pages.product.fields]\nproduct_id = {url = "[x"}\n',
            'pages.product.fields.product_id[0].url: expected a regular expression, got "[x"'
            " (unterminated character set at position 0)",
        ),
        (
            '[pages.product]\nurl_patterns = ["^/", "(x"]\n',
            'pages.product.url_patterns[1]: expected a regular expression, got "(x"'
            " (missing ), unterminated subpattern at position 0)",
        ),
        (
            '[pages.product]\nfollow = [{css = "a", deny = ["*x"]}]\n',
            'pages.product.follow[0].deny[0]: expected a regular expression, got "*x"'
            " (nothing to repeat at position 0)",
        ),
        (
            "[pages.product.fields]\nname = []\n",
            "pages.product.fields.name: expected at least 1 entry, got []",
        ),
        (
            '[pages.product.fields]\nname = {css = "h1", atr = "title"}\n',
            'pages.product.fields.name[0].atr: unknown key (did you mean "attr"?)',
        ),
        (
            '[pages.product]\nfollow = [{css = "a", too = "listing"}]\n',
            'pages.product.follow[0].too: unknown key (did you mean "to"?)',
        ),
        (
            '[pages.product]\nurl_pattern = ["^/"]\n',
            'pages.product.url_pattern: unknown key (did you mean "url_patterns"?)',
        ),
        (
            '[pages.Product]\nurl_patterns = ["^/"]\n',
            "pages.Product: expected a page type name of a-z, 0-9, _ and - (not starting with"
            ' _ or -), got "Product"',
        ),
        (
            '[pages.product.fields]\nname = {css = "h1[[["}\n',
            'pages.product.fields.name[0].css: expected a CSS selector, got "h1[[["'
            " (Expected ident or '*', got <DELIM '[' at 3>)",
        ),
        (
            '[pages.product.fields]\nname = {xpath = "//h1["}\n',
            'pages.product.fields.name[0].xpath: expected an XPath expression, got "//h1["'
            " (Invalid expression in //h1[)",
        ),
        (
            '[pages.product.fields]\ncolor = {table = "table..x", label = "Colour"}\n',
            'pages.product.fields.color[0].table: expected a CSS selector, got "table..x"'
            " (Expected ident, got <DELIM '.' at 6>)",
        ),
        (
            '[pages.product]\nfollow = [{xpath = "//a[@href"}]\n',
            'pages.product.follow[0].xpath: expected an XPath expression, got "//a[@href"'
            " (Invalid predicate in //a[@href)",
        ),
        (
            '[pages.product]\nselectors = {gallery = "//div["}\n',
            'pages.product.selectors.gallery: expected an XPath expression, got "//div["'
            " (Invalid expression in //div[)",
        ),
        (
            '[pages.product]\nitem = "schema:Product"\n',
            "pages.product.item: expected a schema.org type name like Product,"
            ' got "schema:Product"',
        ),
    ],
)
def test_a_malformed_page_table_is_refused(tmp_path: Path, table: str, problem: str) -> None:
    toml = SHOP + (table if table.startswith("[pages.product]") else PAGE + table)
    assert load_error(tmp_path, toml) == problem


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        (
            PAGE + 'follow = [{css = "nav"}, {css = "a", to = "detail"}]\n',
            'pages.product.follow[1].to: expected one of the page types ["product"], got "detail"',
        ),
        (
            'start_page = "home"\n' + PAGE,
            'start_page: expected one of the page types ["product"], got "home"',
        ),
        (
            'start_page = "home"\n',
            'start_page: expected a [pages.<name>] table for it to name, got "home"',
        ),
        (
            PAGE + '[fingerprint.page_types.listing]\nsample_paths = ["/"]\n',
            "fingerprint.page_types: expected no [fingerprint.page_types] beside [pages]"
            ' (put samples and selectors in [pages.<name>]), got ["listing"]',
        ),
        (
            'start_paths = ["/", "/deals"]\n[pages.home]\nurl_patterns = ["^/$"]\n',
            "start_paths[1]: expected a path some page type's url_patterns match"
            ' (or a start_page), got "/deals"',
        ),
    ],
)
def test_pages_that_do_not_fit_together_are_refused(
    tmp_path: Path, toml: str, problem: str
) -> None:
    assert load_error(tmp_path, SHOP + toml) == problem


def test_start_paths_need_no_pattern_with_a_start_page_or_none_at_all(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(
        SHOP + 'start_page = "home"\n[pages.home]\n[pages.item]\nurl_patterns = ["^/i/"]\n'
    )
    assert SiteProfile.load("shop", tmp_path).start_page == "home"
    (tmp_path / "shop.toml").write_text(
        SHOP
        + 'start_paths = []\nsitemaps = ["/robots.txt"]\n[pages.item]\nurl_patterns = ["/i/"]\n'
    )
    profile = SiteProfile.load("shop", tmp_path)
    assert (profile.start_paths, profile.start_page) == ((), None)


def test_one_rule_or_a_list_of_fallbacks_is_always_a_tuple_of_rules(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(
        SHOP
        + PAGE
        + 'item = "Product"\n[pages.product.fields]\nname = {data = "name"}\n'
        + 'price = [{data = "offers.price"}, {css = ".price", re = "([0-9.,]+)"}]\n'
        + 'availability = {css = ".stock", map = {"In stock" = "InStock", "Sold" = false}}\n'
    )
    page = SiteProfile.load("shop", tmp_path).pages["product"]
    assert page.item == "Product" and page.url_patterns == ("^/",)
    assert [rule.data for rule in page.fields["name"]] == ["name"]
    assert [(rule.data, rule.css, rule.re) for rule in page.fields["price"]] == [
        ("offers.price", None, None),
        (None, ".price", "([0-9.,]+)"),
    ]
    assert page.fields["availability"][0].map == {"In stock": "InStock", "Sold": False}
    assert [rule.selector for rule in page.fields["price"]] == [None, ".price"]


PAGES = """start_page = "home"
[fingerprint]
threshold = 0.8
[pages.home]
follow = [{css = "a.category-link", to = "listing"}, {allow = ["/deals"]}]
sample_paths = ["/"]
[pages.listing]
url_patterns = ['^/category/']
follow = [{css = "a.product-link", to = "product-page"}, {xpath = "//nav[@class='pages']"}]
threshold = 0.6
[pages.product-page]
url_patterns = ['^/product/']
item = "Product"
sample_paths = ["/product/1", "/product/2"]
selectors = {gallery = "div.gallery"}
[pages.product-page.fields]
name = [{data = "name"}, {css = "h1.title"}, {xpath = "//h1"}, {xpath = "string(//title)"}]
color = {table = "table.specs", label = "Colour"}
rating = {css = "i.star.full", count = true}
product_id = {url = '/product/([^/?#]+)'}
"""


def test_the_gate_s_page_types_are_derived_from_the_pages(tmp_path: Path) -> None:
    (tmp_path / "shop.toml").write_text(SHOP + PAGES)
    item = (
        "//script[@type='application/ld+json'][contains(., '\"Product\"')]"
        " | //*[@itemscope][contains(@itemtype, 'schema.org/Product')]"
    )
    assert SiteProfile.load("shop", tmp_path).fingerprint == {
        "threshold": 0.8,
        "page_types": {
            "home": {
                "sample_paths": ["/"],
                "selectors": {"follow_listing_1": "a.category-link"},  # allow only: none
                "callback": "parse_home",
            },
            "listing": {
                "sample_paths": [],
                "selectors": {
                    "follow_product-page_1": "a.product-link",
                    "follow_links_2": "//nav[@class='pages']",
                },
                "callback": "parse_listing",
                "threshold": 0.6,
            },
            "product-page": {
                "sample_paths": ["/product/1", "/product/2"],
                "selectors": {
                    "name": "h1.title",
                    "name_2": "//h1",
                    "color": "table.specs",
                    "rating": "i.star.full",
                    "item_Product": item,
                    "gallery": "div.gallery",
                },
                "callback": "parse_product_page",
            },
        },
    }
    config = FingerprintConfig.for_site("shop", tmp_path)
    assert config.threshold == 0.8 and config.declared
    assert config.page_types["product-page"].callback == "parse_product_page"
    assert config.page_types["product-page"].sample_paths == ("/product/1", "/product/2")
    assert config.page_types["listing"].threshold == 0.6
