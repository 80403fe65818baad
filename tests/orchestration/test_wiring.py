"""orchestration.wiring: the compose file's site workers and the Kibana saved objects are
what the site profiles give, and a new profile says which command brings them up to date."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.config import REPO_ROOT, OperatorError
from crawlers.profiles import PROFILES_DIR, profile_sites
from orchestration import wiring

FIX = "python -m orchestration.wiring"


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    """The repository's profiles plus a new site, ztw_shop."""
    directory = tmp_path / "profiles"
    shutil.copytree(PROFILES_DIR, directory)
    hermes = (PROFILES_DIR / "hermes.toml").read_text()
    (directory / "ztw_shop.toml").write_text(hermes.replace('site = "hermes"', 'site = "ztw_shop"'))
    return directory


def services(text: str) -> dict[str, Any]:
    return dict(yaml.safe_load(text)["services"])


def test_committed_files_are_what_the_profiles_give() -> None:
    for path, text in wiring.wanted().items():
        assert path.read_text() == text, f"{path.relative_to(REPO_ROOT)} is stale: run {FIX}"


def test_a_worker_per_profile_only_between_the_markers() -> None:
    text = wiring.COMPOSE_FILE.read_text()
    start, end = text.index(wiring.BEGIN), text.index(wiring.END)
    block = text[start:end]
    outside = text[:start] + text[end:]
    for site in profile_sites():
        assert f"  worker-{site}:\n" in block
    assert "  worker-" not in outside
    # The demo shop's worker waits for the shop and runs under its compose profile.
    demo = services(text)["worker-demo"]
    assert demo["profiles"] == ["demo"]
    assert demo["depends_on"]["demo-site"]["condition"] == "service_healthy"
    assert demo["depends_on"]["redis"]["condition"] == "service_healthy"  # the stores too
    for site, (compose_profile, service) in wiring.LOCAL_SITES.items():
        assert services(text)[service]["profiles"] == [compose_profile], site


def test_a_new_profile_gets_its_worker_and_saved_search(profiles: Path) -> None:
    files = wiring.wanted(profiles)
    compose = services(files[wiring.COMPOSE_FILE])
    worker = compose["worker-ztw_shop"]
    assert worker["command"] == ["scrapy", "crawl", "ztw_shop", "-a", "always_on=true"]
    assert worker["profiles"] == ["sites", "ztw_shop"]
    assert worker["healthcheck"]["test"][-2:] == ["worker", "ztw_shop"]
    assert worker["build"]["target"] == "worker"  # the x-site-worker anchor's image
    assert (
        worker["depends_on"] == services(wiring.COMPOSE_FILE.read_text())["worker-g2"]["depends_on"]
    )
    # Nothing else of the file changed.
    before = services(wiring.COMPOSE_FILE.read_text())
    assert {k: v for k, v in compose.items() if k != "worker-ztw_shop"} == before
    objects = [json.loads(line) for line in files[wiring.SAVED_OBJECTS].splitlines()]
    [search] = [o for o in objects if o["id"] == "platform-items-ztw_shop"]
    assert search["attributes"]["title"] == "Items: ztw_shop"
    assert json.loads(search["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])[
        "query"
    ] == {"query": 'site : "ztw_shop"', "language": "kuery"}


def test_check_names_the_stale_files_and_the_command(profiles: Path) -> None:
    env = {**os.environ, "SITE_PROFILES_DIR": str(profiles)}
    before = {path: path.read_text() for path in (wiring.COMPOSE_FILE, wiring.SAVED_OBJECTS)}
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.wiring", "--check"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"docker/compose.yaml: out of date with the site profiles; run `{FIX}`",
        f"docker/kibana/saved_objects.ndjson: out of date with the site profiles; run `{FIX}`",
    ]
    assert {path: path.read_text() for path in before} == before  # --check changes nothing


def test_writing_rewrites_only_what_changed(
    profiles: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    compose, saved = tmp_path / "compose.yaml", tmp_path / "saved_objects.ndjson"
    shutil.copy(wiring.COMPOSE_FILE, compose)
    shutil.copy(wiring.SAVED_OBJECTS, saved)
    monkeypatch.setattr(wiring, "COMPOSE_FILE", compose)
    monkeypatch.setattr(wiring, "SAVED_OBJECTS", saved)
    monkeypatch.setattr(wiring, "wanted", functools.partial(wiring.wanted, profiles))
    assert wiring.main([]) == 0
    assert "worker-ztw_shop" in services(compose.read_text())
    assert capsys.readouterr().out.count(": rewritten") == 2
    assert wiring.main(["--check"]) == 0
    assert wiring.main([]) == 0
    assert capsys.readouterr().out.count(": up to date") == 2


def test_a_site_name_that_cannot_name_a_service_is_refused() -> None:
    with pytest.raises(OperatorError, match=r"site 'ZTW-shop': a site name is lowercase"):
        wiring.worker_services(["demo", "ZTW-shop"])


def test_missing_markers_are_named_with_the_fix() -> None:
    text = wiring.COMPOSE_FILE.read_text().replace(wiring.END, "")
    with pytest.raises(OperatorError, match=r"marker lines .* are missing; put them back"):
        wiring.compose_text(text, ["demo"])


def test_a_site_s_fetch_secrets_reach_its_worker_and_the_flows_only(profiles: Path) -> None:
    """A new site needing proxies and a session of its own: its worker passes both
    through, the flows' worker gets the session too, no other worker gets it."""
    facebook = (profiles / "facebook_marketplace.toml").read_text()
    (profiles / "ztw_social.toml").write_text(
        facebook.replace('site = "facebook_marketplace"', 'site = "ztw_social"').replace(
            "needs_proxies = false", "needs_proxies = true"
        )
    )
    document = yaml.safe_load(wiring.wanted(profiles)[wiring.COMPOSE_FILE])
    compose = document["services"]
    assert set(compose["worker-ztw_social"]["environment"]) >= {
        "PROXY_LIST",
        "PROXY_LIST_FILE",
        "FACEBOOK_SESSION_COOKIES",
    }
    assert "PROXY_LIST" not in compose["worker-facebook_marketplace"]["environment"]
    assert "FACEBOOK_SESSION_COOKIES" not in compose["worker-ztw_shop"]["environment"]
    assert "PROXY_LIST" in compose["worker-ztw_shop"]["environment"]  # hermes' needs_proxies
    assert set(document["x-fetch-env"]) == {
        "PROXY_LIST",
        "PROXY_LIST_FILE",
        "FACEBOOK_SESSION_COOKIES",
    }


def test_a_secret_the_platform_does_not_read_is_refused(profiles: Path) -> None:
    text = (profiles / "facebook_marketplace.toml").read_text()
    (profiles / "facebook_marketplace.toml").write_text(
        text.replace('secrets = ["FACEBOOK_SESSION_COOKIES"]', 'secrets = ["FB_COOKIES"]')
    )
    with pytest.raises(OperatorError, match=r"secrets names FB_COOKIES, which is no secret"):
        wiring.wanted(profiles)
