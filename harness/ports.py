"""Who listens on a TCP port: the process behind a loopback service's port, from /proc.

A service started on an occupied port must not take the process already there for its own
(``harness.base.ManagedProcess.start``): it names the holder instead, and checks after
its start that the listening socket belongs to the process it started. Linux only: the
listening sockets come from ``/proc/net/tcp{,6}`` and their owners from ``/proc/<pid>/fd``;
elsewhere (or without the rights to read another user's descriptors) the holder is
"unknown".
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column


@dataclass(frozen=True)
class Holder:
    """A process holding a listening socket."""

    pid: int
    cmdline: str
    session: int | None  # its session id (our services each run in a session of their own)

    def describe(self) -> str:
        return f"pid {self.pid} ({self.cmdline or '?'})"


def listening_inodes(port: int) -> set[int]:
    """The inodes of the sockets listening on TCP ``port`` (any address, IPv4 or IPv6)."""
    inodes: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port:
                inodes.add(int(fields[9]))
    return inodes


def holders(port: int) -> list[Holder]:
    """The processes with a socket listening on ``port`` (empty: none, or not readable)."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    if not inodes:
        return []
    found: list[Holder] = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue  # gone, or another user's process
        links = set()
        for fd in fds:
            with contextlib.suppress(OSError):  # closed since it was listed
                links.add(os.readlink(fd))
        if links & inodes:
            found.append(_holder(int(entry.name)))
    return found


def _holder(pid: int) -> Holder:
    cmdline = ""
    session = None
    with contextlib.suppress(OSError):
        raw = (PROC / str(pid) / "cmdline").read_bytes()
        cmdline = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    with contextlib.suppress(OSError, ValueError, IndexError):
        # The fields after the command name (which may hold spaces): state, ppid, pgrp, sid.
        stat = (PROC / str(pid) / "stat").read_text()
        session = int(stat.rsplit(")", 1)[1].split()[3])
    if len(cmdline) > 120:
        cmdline = cmdline[:117] + "..."
    return Holder(pid, cmdline, session)


def describe_holder(port: int) -> str:
    """Who listens on ``port``, for an error line: ``pid N (argv)``, or "an unknown process"."""
    found = holders(port)
    if not found:
        return "an unknown process (its owner is not visible from here)"
    return ", ".join(holder.describe() for holder in found)


def held_by_session(port: int, session: int) -> bool | None:
    """Whether the socket listening on ``port`` belongs to a process of ``session``;
    None when no holder is visible (not Linux, or not readable): the caller decides."""
    found = holders(port)
    if not found:
        return None
    return any(holder.session == session for holder in found)
