"""Item types a profile declares (``[item_fields]``, crawlers/declared_items.py): a
validated item type, its key and its index mapping, from the profile alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlers.items import (
    schema_by_type,  # the platform's own types, which a profile never replaces
)
from crawlers.profiles import ProfileError, SiteProfile
from crawlers.spiders.rules import field_kinds

PROFILE = """
item_type = "{item_type}"
base_url = "https://sayings.example"
[item_fields]
saying_id = {{type = "keyword", key = true}}
text = {{type = "long_text", required = true}}
tags = {{type = "keyword", list = true}}
published_at = {{type = "date"}}
likes = {{type = "count"}}
"""


def load(tmp_path: Path, item_type: str) -> SiteProfile:
    (tmp_path / "sayings.toml").write_text(PROFILE.format(item_type=item_type))
    return SiteProfile.load("sayings", tmp_path)


def test_a_declared_item_type_validates_keys_and_maps_its_items(tmp_path: Path) -> None:
    load(tmp_path, "saying")
    schema = schema_by_type("saying")
    assert schema.id_field == "saying_id"
    assert schema.required == ("url", "text")
    item = schema.cls(url="https://sayings.example/p/1", saying_id="s-1", text="Be kind.")
    assert schema.validate(item).ok
    assert schema.key("sayings", {"saying_id": "s-1"}) == "sayings:saying:s-1"
    missing = schema.validate(schema.cls(url="https://sayings.example/p/1", likes=-1))
    assert {(e.field, e.reason) for e in missing.errors} >= {("text", "missing")}
    assert "likes" in {e.field for e in missing.errors}  # a count is never negative
    assert schema.es_properties["published_at"]["type"] == "date"
    assert schema.es_properties["likes"] == {"type": "long"}
    assert schema.es_properties["tags"]["type"] == "keyword"
    kinds = field_kinds("saying")
    assert (kinds["published_at"].name, kinds["tags"].many) == ("date", True)


def test_a_profile_cannot_redeclare_a_platform_item_type(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"'product' is declared in crawlers/items\.py"):
        load(tmp_path, "product")


def test_an_unknown_field_type_is_the_profiles_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "sayings.toml").write_text(
        'item_type = "saying"\nbase_url = "https://sayings.example"\n'
        '[item_fields]\ntext = {type = "prose"}\n'
    )
    with pytest.raises(ProfileError, match=r"item_fields.text.type: expected one of"):
        SiteProfile.load("sayings", tmp_path)
