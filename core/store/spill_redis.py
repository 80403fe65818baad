"""The Redis spill of a site: ``<site>:store:spill`` and ``<site>:store:dead_letters``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Sequence
from typing import Any

from redis.asyncio.lock import Lock

from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient, Client
from core.store.actions import StoreAction
from core.store.spill import DEAD_LETTER_CAP, SendFn, Spill, dead_entry

logger = logging.getLogger(__name__)

# Lua, each script headed by its KEYS and ARGV: core/store/lua/trim_if_owner.lua
_TRIM_IF_OWNER = load_script("core.store", "trim_if_owner")


class RedisSpill(Spill):
    """A list of JSON actions per site, shared by every worker of the site.

    Drain reads from the head without removing, sends, then trims what it sent, guarded
    by a lock token: a drainer that dies mid-way leaves every entry in place (re-sending
    is idempotent), and two drainers never trim each other's entries.

    The lock is a short lease (``lock_timeout``) renewed in the background while the
    drain runs: a drainer killed mid-way (SIGKILL: no ``finally``) blocks the others for
    at most ``lock_timeout`` seconds, however long a drain takes. Its value starts with the
    drainer's PID (``<pid>:<token>``), so an operator can tell who holds it.
    """

    def __init__(self, server: AsyncClient, site: str, *, lock_timeout: float = 6.0) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.lock_timeout = lock_timeout
        self.description = f"redis list {self.keys.store_spill}"
        self.remedy = "its Redis, REDIS_URL, answering"
        self._trim = server.register_script(_TRIM_IF_OWNER)

    async def push(self, actions: Sequence[StoreAction]) -> None:
        if actions:
            await self.server.rpush(self.keys.store_spill, *[a.to_json() for a in actions])

    async def size(self) -> int:
        return int(await self.server.llen(self.keys.store_spill))

    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        token = f"{os.getpid()}:{uuid.uuid4().hex}"
        lock = self.server.lock(
            self.keys.store_spill_lock, timeout=self.lock_timeout, blocking=False
        )
        if not await lock.acquire(token=token):
            return 0  # another process is draining
        renewal = asyncio.get_running_loop().create_task(self._renew(lock))
        drained = 0
        try:
            batches = 0
            while max_batches is None or batches < max_batches:
                raws = await self.server.lrange(self.keys.store_spill, 0, batch - 1)
                if not raws:
                    break
                actions = [await self._parse(raw) for raw in raws]
                keep = await send([a for a in actions if a is not None])
                owned = await self._trim(
                    keys=[self.keys.store_spill, self.keys.store_spill_lock],
                    args=[token, len(raws), *[a.to_json() for a in keep]],
                )
                if not owned:
                    logger.warning("spill drain lost its lock; another drainer continues")
                    break
                drained += len(raws) - len(keep)
                batches += 1
                if keep:
                    break  # Elasticsearch still refuses some: try again later
        finally:
            renewal.cancel()
            with contextlib.suppress(BaseException):
                await renewal
            with contextlib.suppress(Exception):
                await lock.release()
        return drained

    async def _renew(self, lock: Lock) -> None:
        """Extend the lease every third of its length while the drain runs. A renewal
        that fails (lock lost, Redis away) stops renewing: the trim's token check
        (``_TRIM_IF_OWNER``) then keeps this drainer from touching others' entries."""
        while True:
            await asyncio.sleep(self.lock_timeout / 3)
            try:
                await lock.reacquire()
            except Exception as exc:
                logger.warning("spill drain lock not renewed (%s)", type(exc).__name__)
                return

    async def _parse(self, raw: bytes | str) -> StoreAction | None:
        try:
            return StoreAction.from_json(raw)
        except (ValueError, TypeError) as exc:
            logger.error("undecodable spill entry moved to dead letters: %s", exc)
            entry = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            await self._push_dead({"raw": entry, "error": str(exc)})
            return None

    async def _push_dead(self, entry: dict[str, Any]) -> None:
        async with self.server.pipeline(transaction=True) as pipe:
            pipe.rpush(
                self.keys.store_dead_letters, json.dumps(dead_entry(entry), ensure_ascii=False)
            )
            pipe.ltrim(self.keys.store_dead_letters, -DEAD_LETTER_CAP, -1)
            await pipe.execute()


# -- sync readers (flows, operators, tests) ---------------------------------------------


def spill_size(server: Client, site: str) -> int:
    """Items of ``site`` waiting in the Redis spill (the drain step waits for 0)."""
    return int(server.llen(SiteKeys(site).store_spill))


def dead_letters(server: Client, site: str, limit: int = 100) -> list[dict[str, Any]]:
    """The newest ``limit`` dead letters of ``site`` (action + error + time)."""
    raws = server.lrange(SiteKeys(site).store_dead_letters, -limit, -1)
    return [json.loads(raw) for raw in raws]
