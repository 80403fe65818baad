"""What ``ps`` shows: the argv of every process of a tree, sampled while it runs.

``ArgvWatch(roots, secrets)`` reads ``/proc/<pid>/cmdline`` of the root processes and of
every process below them (children of children too) every few milliseconds, in a thread,
and keeps each distinct argv it saw. ``leaks()`` names the argvs holding a secret (the
secret masked); ``saw(word)`` says whether a process whose argv holds ``word`` was sampled
at all, so a test knows its sampler did not just miss everything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Self

Roots = Callable[[], Iterable[int]]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc: children of children too)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue  # it exited meanwhile
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    frontier.append(child)
    return found


def command_line(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ()
    return tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)


class ArgvWatch:
    """Samples the argvs of ``roots()`` (PIDs, read again at every sample) and their
    descendants until stopped; ``secrets``: the values no argv may hold."""

    def __init__(self, roots: Roots, secrets: Iterable[str], *, interval: float = 0.003) -> None:
        self.roots = roots
        self.secrets = [secret for secret in secrets if secret]
        self.interval = interval
        self.argvs: set[tuple[str, ...]] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="argv-watch", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(self.interval)

    def sample(self) -> None:
        for root in list(self.roots()):
            for pid in (root, *descendants(root)):
                argv = command_line(pid)
                if argv:
                    self.argvs.add(argv)
        self.samples += 1

    def leaks(self) -> list[str]:
        """Each argv that holds a secret, the secret masked (a failure message may print it)."""
        found = []
        for argv in sorted(self.argvs):
            line = " ".join(argv)
            if any(secret in line for secret in self.secrets):
                for secret in self.secrets:
                    line = line.replace(secret, "<SECRET>")
                found.append(line)
        return found

    def saw(self, word: str) -> bool:
        return any(word in part for argv in self.argvs for part in argv)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.sample()  # what is left at the end
