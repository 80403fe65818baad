"""Names and ids of the index layout, and the store's settings (pure: no services)."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from core.config import ConfigurationError
from core.store import IndexLayout, MissingSetting, StoreSettings, doc_id_for, epoch_ms, iso_ms
from core.store.layout import MAX_ID_BYTES, index_for_key, replicas_for, replicas_setting
from crawlers.addon import project_settings


def test_names_ids_and_times() -> None:
    assert IndexLayout.index("demo", "demo_product") == "items-demo-demo_product-v1"
    assert IndexLayout.write_alias("demo", "demo_product") == "items-demo-demo_product"
    assert IndexLayout.read_alias("demo") == "items-demo"
    assert index_for_key("demo:demo_product:url:http://x/a:b") == "items-demo-demo_product"
    assert doc_id_for("demo:demo_product:DM-1") == "demo:demo_product:DM-1"
    long_key = "demo:product:url:" + "x" * MAX_ID_BYTES
    assert doc_id_for(long_key).startswith("sha256:") and len(doc_id_for(long_key)) == 71
    assert iso_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert epoch_ms(iso_ms(1_700_000_000_123)) == 1_700_000_000_123


def test_store_settings_come_from_the_crawl_settings_only() -> None:
    project = project_settings()
    built = StoreSettings.from_settings(project)
    assert built.bulk_size == project.getint("STORE_BULK_SIZE")
    assert built.flush_interval == project.getfloat("STORE_FLUSH_INTERVAL")
    custom = project.copy()
    custom.set("STORE_BULK_SIZE", 7, priority="cmdline")
    assert StoreSettings.from_settings(custom).bulk_size == 7
    assert StoreSettings.from_settings(custom, bulk_size=3).bulk_size == 3
    # No second set of defaults: without the platform's settings it says what is missing.
    with pytest.raises(MissingSetting, match="STORE_BULK_SIZE"):
        StoreSettings.from_settings(Settings())
    assert built.backoff(1) == built.retry_backoff
    assert built.backoff(50) == built.retry_backoff_max


def test_replicas_are_auto_by_default_one_on_two_or_more_data_nodes() -> None:
    assert StoreSettings.from_settings(project_settings()).replicas is None  # auto
    assert [replicas_for(n) for n in (1, 2, 3, 5)] == [0, 1, 1, 1]
    assert replicas_setting("auto") is None and replicas_setting(" AUTO ") is None
    assert replicas_setting(0) == 0 and replicas_setting("2") == 2
    for bad in ("-1", "one"):
        with pytest.raises(ConfigurationError, match="STORE_INDEX_REPLICAS"):
            replicas_setting(bad)
