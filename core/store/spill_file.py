"""The file spill: JSON lines, for a worker without Redis (``scrapy crawl`` + ES only)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from core.store.actions import StoreAction
from core.store.spill import SendFn, Spill, dead_entry


class FileSpill(Spill):
    """``<dir>/<site>.jsonl`` and its dead letters ``<dir>/<site>.dead.jsonl``.

    Appends are fsynced under an exclusive lock; one drainer at a time (its own lock),
    which rewrites the file without what it sent, and removes it once it is empty (the
    lock files stay: another process may hold them).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dead_path = self.path.with_name(self.path.stem + ".dead.jsonl")
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._drain_lock_path = self.path.with_name(self.path.name + ".drain-lock")
        self.description = f"file {self.path}"
        self.remedy = f"make {self.path.parent} writable, or set STORE_SPILL_DIR"
        self._mutex = asyncio.Lock()

    @contextlib.contextmanager
    def _locked(self, path: Path, *, blocking: bool = True) -> Iterator[bool]:
        with path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _append(self, path: Path, lines: Sequence[str]) -> None:
        with self._locked(self._lock_path), path.open("a", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
            out.flush()
            os.fsync(out.fileno())

    def _read(self) -> list[str]:
        try:
            return [line for line in self.path.read_text(encoding="utf-8").splitlines() if line]
        except FileNotFoundError:
            return []

    async def push(self, actions: Sequence[StoreAction]) -> None:
        if actions:
            async with self._mutex:
                self._append(self.path, [a.to_json() for a in actions])

    async def size(self) -> int:
        async with self._mutex:
            with self._locked(self._lock_path):
                return sum(1 for line in self._read() if line.strip())

    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        drained = 0
        with self._locked(self._drain_lock_path, blocking=False) as acquired:
            if not acquired:
                return 0
            batches = 0
            while max_batches is None or batches < max_batches:
                async with self._mutex:
                    with self._locked(self._lock_path):
                        head = [line for line in self._read() if line.strip()][:batch]
                if not head:
                    break
                actions = []
                for line in head:
                    try:
                        actions.append(StoreAction.from_json(line))
                    except (ValueError, TypeError) as exc:
                        await self._push_dead({"raw": line, "error": str(exc)})
                keep = await send(actions)
                async with self._mutex:
                    with self._locked(self._lock_path):
                        rest = [line for line in self._read() if line.strip()][len(head) :]
                        self._rewrite(rest + [a.to_json() for a in keep])
                drained += len(head) - len(keep)
                batches += 1
                if keep:
                    break
        return drained

    async def dead_size(self) -> int:
        """Entries in the dead-letter file."""
        async with self._mutex:
            try:
                text = self.dead_path.read_text(encoding="utf-8")
            except FileNotFoundError:
                return 0
            return sum(1 for line in text.splitlines() if line.strip())

    def _rewrite(self, lines: Sequence[str]) -> None:
        if not lines:
            # Under the append lock: a writer appending next creates the file again.
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self.path)

    async def _push_dead(self, entry: dict[str, Any]) -> None:
        async with self._mutex:
            self._append(self.dead_path, [json.dumps(dead_entry(entry), ensure_ascii=False)])
