"""The profile schema: each wrong type or value fails the load with one exact line naming the
file, the key and what was expected; nothing is coerced or split."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from crawlers.profiles import PROFILES_DIR, ProfileError, SiteProfile, profile_sites
from fingerprints.baseline import FingerprintConfig

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


def test_an_unknown_render_mode_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, SHOP + 'render = "browser"\n')
    assert error == 'render: expected one of "never", "always" or "per_request", got "browser"'


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


# -- the [fingerprint] table (read by fingerprints.baseline.FingerprintConfig) ------------------


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


@pytest.mark.parametrize("site", profile_sites())
def test_the_fingerprint_table_reaches_the_gate_as_written(site: str) -> None:
    raw = tomllib.loads((PROFILES_DIR / f"{site}.toml").read_text())
    profile = SiteProfile.load(site)
    assert profile.fingerprint == raw.get("fingerprint", {})
    config = FingerprintConfig.for_site(site)
    assert config == FingerprintConfig.from_mapping(raw["fingerprint"])


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
