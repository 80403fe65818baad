"""Which page types need a browser (core.fetch.render_choice): the state machine, on Redis, a
Redis Cluster and in memory."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from core.fetch.render_choice import Choice, MemoryChoiceStore, RedisChoiceStore, next_choice
from core.redis_client import connect_async
from tests.core.redis_target import Target


def test_learning_ends_at_the_first_difference_or_after_the_sample() -> None:
    learning = Choice("learning")
    assert next_choice(learning, False, 3).mode == "render"
    state = learning
    for _ in range(2):
        state = next_choice(state, True, 3)
        assert state.mode == "learning"
    assert next_choice(state, True, 3) == Choice("plain")


def test_decided_page_types_keep_being_checked() -> None:
    assert next_choice(Choice("plain"), False, 3) == Choice("render")
    assert next_choice(Choice("plain"), True, 3).mode == "plain"
    # A rendered type goes back to plain after `sample` agreeing checks in a row only.
    state = Choice("render")
    state = next_choice(next_choice(state, True, 3), True, 3)
    assert state.mode == "render"
    assert next_choice(next_choice(state, False, 3), True, 3).mode == "render"
    assert next_choice(state, True, 3) == Choice("plain")


def test_a_sample_below_one_page_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MemoryChoiceStore("s", 0)


def test_stores_agree_on_the_same_comparisons(target: Target) -> None:
    """The memory store and the Redis one (one Redis, a cluster) side by side."""

    async def main() -> None:
        site = f"s{uuid.uuid4().hex[:8]}"
        server = connect_async(target.url, cluster=target.cluster)
        stores = [MemoryChoiceStore(site, 2), RedisChoiceStore(server, site, 2)]
        try:
            for store in stores:
                assert await store.start_probe("parse_product")
                assert await store.start_probe("parse_product")
                assert not await store.start_probe("parse_product")  # two under way
                assert (await store.record("parse_product", True)).mode == "learning"
                assert (await store.record("parse_product", True)).mode == "plain"
                assert await store.start_probe("parse_product")  # decided: no bound
                assert (await store.record("parse_listing", False)).mode == "render"
                choices = await store.choices()
                assert {k: v.mode for k, v in choices.items()} == {
                    "parse_product": "plain",
                    "parse_listing": "render",
                }
                await store.put_summary("fp1", '{"items": []}')
                assert await store.take_summary("fp1") == '{"items": []}'
                assert await store.take_summary("fp1") is None  # taken once
        finally:
            await server.aclose()

    asyncio.run(main())


def test_a_plain_type_is_checked_again_only_once_its_check_is_old(target: Target) -> None:
    """A plain page type costs a browser to check: one caller claims the check once the
    last comparison is ``after`` seconds old, and only until the check comes back or
    goes stale; a sample that never came back stops counting after ``stale`` too."""

    async def main() -> None:
        site = f"s{uuid.uuid4().hex[:8]}"
        server = connect_async(target.url, cluster=target.cluster)
        stores = [MemoryChoiceStore(site, 1, stale=1), RedisChoiceStore(server, site, 1, stale=1)]
        try:
            for store in stores:
                assert not await store.start_recheck("parse", 0)  # learning: no recheck
                assert await store.start_probe("parse")
                assert not await store.start_probe("parse")  # the one sample under way
                await asyncio.sleep(1.1)
                assert await store.start_probe("parse")  # that one is lost: another
                choice = await store.record("parse", True)
                assert choice.mode == "plain" and choice.checked > 0
                assert (await store.choices())["parse"].checked == pytest.approx(
                    choice.checked, abs=1
                )
                assert not await store.start_recheck("parse", 60)  # checked just now
                assert await store.start_recheck("parse", 0)  # old enough: claimed...
                assert not await store.start_recheck("parse", 0)  # ... by one caller
                await asyncio.sleep(1.1)
                assert await store.start_recheck("parse", 0)  # that check went stale
                await store.record("parse", True)  # it came back: checked now
                assert not await store.start_recheck("parse", 60)
        finally:
            await server.aclose()

    asyncio.run(main())


def test_a_page_found_the_same_while_its_type_learns_is_known_for_a_while(target: Target) -> None:
    """A learning type's page that agreed is remembered (the next job's start page goes
    plain); one that differed, or one compared once the type was decided, is not."""

    async def main() -> None:
        site = f"s{uuid.uuid4().hex[:8]}"
        server = connect_async(target.url, cluster=target.cluster)
        stores = [MemoryChoiceStore(site, 3), RedisChoiceStore(server, site, 3)]
        try:
            for store in stores:
                assert not await store.agreed("parse", "home", 60)
                assert (await store.record("parse", True, "home")).mode == "learning"
                assert await store.agreed("parse", "home", 60)
                assert not await store.agreed("parse", "home", 0)  # too old for the caller
                assert not await store.agreed("parse", "other", 60)
                assert not await store.agreed("parse_listing", "home", 60)  # another type
                # Still one page type among the choices, learning.
                assert {k: v.mode for k, v in (await store.choices()).items()} == {
                    "parse": "learning"
                }
                assert (await store.record("parse_product", False, "p1")).mode == "render"
                assert not await store.agreed("parse_product", "p1", 60)
                await store.record("parse_product", True, "p2")  # a decided type's check
                assert not await store.agreed("parse_product", "p2", 60)
        finally:
            await server.aclose()

    asyncio.run(main())
