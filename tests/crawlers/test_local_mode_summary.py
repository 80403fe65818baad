"""The one line a crawl logs about what local mode leaves out."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawlers.addon import LocalModeSummary, local_mode_line


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {},
            "local mode: no frontier (Scrapy's own scheduler), no dedup, no store, no proxies "
            "(direct connections); set REDIS_URL/ELASTICSEARCH_URL/PROXY_LIST to enable",
        ),
        (
            {"ELASTICSEARCH_URL": "http://127.0.0.1:9200"},
            "local mode: no frontier (Scrapy's own scheduler), no proxies (direct "
            "connections); set REDIS_URL/PROXY_LIST to enable",
        ),
        (
            {"REDIS_URL": "redis://127.0.0.1:6379/0", "ROTATING_PROXY_LIST": ["http://p:1"]},
            "local mode: no store; set ELASTICSEARCH_URL to enable",
        ),
    ],
)
def test_line_names_what_is_off_and_how_to_enable_it(
    settings: dict[str, object], expected: str
) -> None:
    assert local_mode_line(Settings(settings)) == expected


def test_nothing_said_when_every_service_is_configured() -> None:
    settings = {
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "ELASTICSEARCH_URL": "http://127.0.0.1:9200",
        "ROTATING_PROXY_LIST": ["http://p:1"],
    }
    assert local_mode_line(Settings(settings)) is None
    with pytest.raises(NotConfigured):
        LocalModeSummary.from_crawler(get_crawler(settings_dict=settings))
