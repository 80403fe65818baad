"""The session pool (core.sessions.store): the same behaviours on Redis, a Redis Cluster and in
memory, since workers share the Redis one and a local crawl uses the memory one."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from core.keys import SiteKeys
from core.redis_client import connect_async
from core.sessions.redis_store import RedisSessionStore
from core.sessions.store import (
    MemorySessionStore,
    Retired,
    Session,
    SessionPolicy,
    SessionStore,
    Wait,
)
from harness.redis_server import RedisServer
from tests.core.redis_target import Target

IDENTITY = {"browser": "chromium", "version": "156.0.8078.114"}
Scenario = Callable[[SessionStore], Awaitable[None]]


async def _on_store(kind: str, url: str | None, cluster: bool, policy: SessionPolicy) -> Any:
    site = f"s{uuid.uuid4().hex[:8]}"
    if kind == "memory":
        return MemorySessionStore(site, policy), None
    assert url is not None
    server = connect_async(url, cluster=cluster)
    return RedisSessionStore(server, site, policy), server


@pytest.fixture(
    params=[
        "memory",
        # A service fetched by name below: the tier classifier cannot see it, so marked.
        pytest.param("redis", marks=pytest.mark.integration),
        pytest.param("cluster", marks=pytest.mark.integration),
    ]
)
def run(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``run(scenario, **policy)``: the scenario against a fresh pool of the store kind."""
    kind = request.param
    target: Target | None = None
    if kind == "redis":
        target = Target(request.getfixturevalue("redis_server").url, cluster=False)
    elif kind == "cluster":
        target = Target(request.getfixturevalue("redis_cluster").url, cluster=True)

    def runner(scenario: Scenario, **policy: Any) -> None:
        async def main() -> None:
            store, server = await _on_store(
                "memory" if target is None else "redis",
                target.url if target else None,
                bool(target and target.cluster),
                SessionPolicy(**policy),
            )
            try:
                await scenario(store)
            finally:
                if server is not None:
                    await server.aclose()

        asyncio.run(main())

    return runner


async def new_live(store: SessionStore, proxies: list[str] | None = None) -> Session:
    """A session created and proven by one good answer."""
    session = await store.create(IDENTITY, proxies or [])
    assert session is not None and session.probe
    await store.record(session.id, "ok")
    return session


def test_a_new_session_is_probed_by_one_request_then_shared(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        assert await store.acquire() is None  # empty pool: room for one
        first = await store.create(IDENTITY, [])
        assert first is not None and first.probe and first.identity == IDENTITY
        # While its probe is out, nobody else gets it: the pool has room for another.
        assert await store.acquire() is None
        second = await store.create(IDENTITY, [])
        assert second is not None
        # Full (max 2), both probing: wait.
        assert isinstance(await store.acquire(), Wait)
        await store.record(first.id, "ok")
        assert isinstance(await store.acquire(), Wait)  # rested for its interval
        await asyncio.sleep(0.25)
        again = await store.acquire()
        assert isinstance(again, Session)
        assert (again.id, again.probe) == (first.id, False)

    run(scenario, max_sessions=2, interval=0.2)


def test_rate_budget_spaces_the_uses_of_one_session(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        session = await new_live(store)
        await asyncio.sleep(0.35)
        asked, granted = [], []  # when each granted acquire was sent, and answered
        while len(granted) < 3:
            sent = time.monotonic()
            got = await store.acquire()
            if isinstance(got, Wait):
                assert 0 < got.seconds <= 0.3
                await asyncio.sleep(got.seconds)
                continue
            assert isinstance(got, Session) and got.id == session.id
            asked.append(sent)
            granted.append(time.monotonic())
        # Never faster than its budget: the store granted the first use after it was asked
        # for and the third before it was answered, so these bound the grants' spacing.
        assert granted[2] - asked[0] >= 2 * 0.3 - 0.01

    run(scenario, max_sessions=1, interval=0.3)


def test_budgets_retire_sessions_by_uses_and_errors(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        session = await new_live(store)
        got = await store.acquire()
        assert isinstance(got, Session) and got.id == session.id  # use 2 of 2
        assert await store.acquire() is None  # worn out: retired on the way, room again
        assert store.take_retired() == [Retired(session.id, "uses")]
        assert store.take_retired() == []
        fresh = await store.create(IDENTITY, [])
        assert fresh is not None
        await store.record(fresh.id, "error")
        await store.record(fresh.id, "error")
        assert store.take_retired() == [Retired(fresh.id, "errors")]
        assert await store.sessions() == []

    run(scenario, max_sessions=1, interval=0, max_uses=2, max_errors=2)


def test_a_failed_probe_gives_the_session_back_after_a_pause(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        session = await store.create(IDENTITY, [])
        assert session is not None
        await store.record(session.id, "throttled", pause=0.3)
        assert isinstance(await store.acquire(), Wait)
        await asyncio.sleep(0.35)
        again = await store.acquire()
        assert isinstance(again, Session) and again.id == session.id and again.probe

    run(scenario, max_sessions=1, interval=0.0, max_errors=3)


def test_a_probe_whose_worker_died_is_taken_over_after_the_hold(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        session = await store.create(IDENTITY, [])
        assert session is not None
        assert isinstance(await store.acquire(), Wait)  # held by its (dead) prober
        await asyncio.sleep(0.35)
        again = await store.acquire()
        assert isinstance(again, Session) and again.id == session.id and again.probe

    run(scenario, max_sessions=1, hold=0.3)


def test_a_challenge_is_passed_once_and_its_cookies_serve_everyone(
    run: Callable[..., None],
) -> None:
    cookie = {"name": "clearance", "value": "v1", "domain": "127.0.0.1", "path": "/"}

    async def scenario(store: SessionStore) -> None:
        session = await new_live(store)
        assert await store.begin_challenge(session.id)
        assert not await store.begin_challenge(session.id)  # held: others go elsewhere
        assert isinstance(await store.acquire(), Wait)  # not handed out meanwhile
        assert await store.challenge_passed(session.id, [cookie]) == 1
        await asyncio.sleep(0.05)
        got = await store.acquire()
        assert isinstance(got, Session) and got.id == session.id
        assert (got.generation, got.cookies) == (1, [cookie])
        # A plain answer's cookies merge; an expired one deletes.
        extra = {"name": "pref", "value": "1", "domain": "127.0.0.1", "path": "/"}
        await store.merge_cookies(session.id, [extra, {**cookie, "expires": 1.0}])
        await asyncio.sleep(0.05)
        got = await store.acquire()
        assert isinstance(got, Session) and got.cookies == [extra]
        # A retired session's late challenge pass is dropped.
        assert await store.retire(session.id, "captcha")
        assert not await store.retire(session.id, "captcha")
        assert await store.challenge_passed(session.id, [cookie]) == 0
        assert not await store.begin_challenge(session.id)

    run(scenario, max_sessions=1, interval=0.01)


def test_sessions_spread_over_proxies_and_skip_excluded_ones(run: Callable[..., None]) -> None:
    proxies = ["127.0.0.1:1001", "127.0.0.1:1002"]

    async def scenario(store: SessionStore) -> None:
        a = await new_live(store, proxies)
        b = await new_live(store, proxies)
        assert {a.proxy, b.proxy} == set(proxies)  # the proxy with fewest sessions first
        got = await store.acquire(excluded_proxies=[a.proxy])
        assert isinstance(got, Session) and got.id == b.id
        # Retiring frees its proxy's place: the next session goes there.
        assert await store.retire(a.id, "blocked")
        c = await new_live(store, proxies)
        assert c.proxy == a.proxy

    run(scenario, max_sessions=2, interval=0)


def test_two_workers_share_one_redis_pool(redis_server: RedisServer) -> None:
    """Two stores on one Redis (two workers): a session proven and cleared by one is
    handed to the other with its cookies, and the pool's size holds across them."""

    async def main() -> None:
        site = f"s{uuid.uuid4().hex[:8]}"
        servers = [connect_async(redis_server.url) for _ in range(2)]
        policy = SessionPolicy(max_sessions=1, interval=0)
        one, two = (RedisSessionStore(server, site, policy) for server in servers)
        try:
            session = await one.create(IDENTITY, [])
            assert session is not None
            assert isinstance(await two.acquire(), Wait)  # the other worker's probe
            assert await one.begin_challenge(session.id)
            cookie = {"name": "c", "value": "x", "domain": "h", "path": "/"}
            await one.challenge_passed(session.id, [cookie])
            got = await two.acquire()
            assert isinstance(got, Session) and got.id == session.id
            assert got.cookies == [cookie] and got.generation == 1
            assert await two.create(IDENTITY, []) is None  # full
            keys = SiteKeys(site)
            assert await servers[0].exists(keys.session_prefix + session.id)
        finally:
            for server in servers:
                await server.aclose()

    asyncio.run(main())


@pytest.mark.parametrize(
    "policy",
    [{"max_sessions": 0}, {"interval": -1}, {"hold": 0}, {"max_errors": 0}],
)
def test_a_policy_out_of_range_is_refused(policy: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must"):
        SessionPolicy(**policy)


def test_a_retry_waits_for_the_session_that_just_passed_its_challenge(
    run: Callable[..., None],
) -> None:
    """``prefer``: the session that cleared a request serves its retry, once it has rested
    its interval, though another session is ready now."""

    async def scenario(store: SessionStore) -> None:
        cleared, other = await new_live(store), await new_live(store)
        await asyncio.sleep(0.25)
        assert await store.begin_challenge(cleared.id)
        assert await store.challenge_passed(cleared.id, []) == 1
        waited = await store.acquire(prefer=cleared.id)
        assert isinstance(waited, Wait) and 0 < waited.seconds <= 0.2
        await asyncio.sleep(waited.seconds)
        got = await store.acquire(prefer=cleared.id)
        assert isinstance(got, Session) and got.id == cleared.id
        # A preferred session that is gone is no preference.
        assert await store.retire(cleared.id, "captcha")
        got = await store.acquire(prefer=cleared.id)
        assert isinstance(got, Session) and got.id == other.id

    run(scenario, max_sessions=2, interval=0.2)


def test_a_site_is_known_defended_from_its_first_block(run: Callable[..., None]) -> None:
    async def scenario(store: SessionStore) -> None:
        assert await store.defended() is None
        assert await store.mark_defended("challenge: cloudflare challenge")
        assert not await store.mark_defended("captcha: datadome captcha")  # known already
        assert await store.defended() == "challenge: cloudflare challenge"  # the first

    run(scenario)


@pytest.mark.integration
def test_the_jobs_ledger_is_written_with_each_session_event(redis_server: RedisServer) -> None:
    """Created, passed and retired (by a verdict, by its errors, by its uses) are written
    into the job's ledger by the same atomic step that changes the pool: no kill falls
    between a session and the report's record of it."""

    async def main() -> None:
        site = f"s{uuid.uuid4().hex[:8]}"
        server = connect_async(redis_server.url)
        policy = SessionPolicy(max_sessions=3, interval=0, max_uses=2)
        store = RedisSessionStore(server, site, policy)
        ledger = SiteKeys(site).job_sessions("job-1")
        try:
            a = await store.create(IDENTITY, [], job="job-1")
            b = await store.create(IDENTITY, [], job="job-1")
            c = await store.create(IDENTITY, [], job="job-1")
            assert a and b and c
            assert await store.begin_challenge(a.id)
            assert await store.challenge_passed(a.id, [], job="job-1") == 1
            assert await store.retire(b.id, "captcha", job="job-1")
            for _ in range(3):
                await store.record(c.id, "error", job="job-1")
            await store.record(a.id, "ok", job="job-1")
            while not store.take_retired() or await server.hexists(ledger, f"retired:{a.id}") == 0:
                await store.acquire(job="job-1")  # a's third use retires it (uses)
            events = {k.decode(): v.decode() for k, v in (await server.hgetall(ledger)).items()}
            assert events == {
                f"created:{a.id}": "1",
                f"created:{b.id}": "1",
                f"created:{c.id}": "1",
                f"passed:{a.id}:1": "1",
                f"retired:{b.id}": "captcha",
                f"retired:{c.id}": "errors",
                f"retired:{a.id}": "uses",
            }
            assert await server.ttl(ledger) > 0
            # Without a job nothing is written anywhere.
            d = await store.create(IDENTITY, [])
            assert d is not None and len(await server.hgetall(ledger)) == len(events)
        finally:
            await server.aclose()

    asyncio.run(main())
