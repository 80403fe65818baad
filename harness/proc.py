"""What /proc says about a process: its identity (start time, group, session), and who
listens on a TCP port.

One reader of ``/proc/<pid>/stat`` serves both questions a supervisor asks before it acts:
is the PID a file names still the process that wrote the file (``recorded_pid``: a PID
the system gave to another process since must never be signalled), and which process
holds a port a service was about to take (``holders``: a service never adopts a process
it did not start). Linux only: elsewhere (or without the rights to read another user's
descriptors) a holder is "unknown" and a recorded PID is not trusted.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column
_CMDLINE_MAX = 120


@dataclass(frozen=True)
class ProcessInfo:
    """One process as /proc describes it."""

    pid: int
    state: str  # R, S, D, Z (zombie), ...
    pgrp: int
    session: int
    started: float  # epoch seconds
    cmdline: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.cmdline or '?'})"


def process_info(pid: int) -> ProcessInfo | None:
    """``pid`` from ``/proc/<pid>/stat`` and its command line; None when it is gone or
    unreadable."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        # The fields after "(comm)", whose name may hold spaces: state, ppid, pgrp, session,
        # ... starttime (the 20th of them, in clock ticks since boot).
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp, session, ticks = fields[0], int(fields[2]), int(fields[3]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None
    started = _boot_time() + ticks / os.sysconf("SC_CLK_TCK")
    cmdline = ""
    with contextlib.suppress(OSError):
        raw = (PROC / str(pid) / "cmdline").read_bytes()
        cmdline = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    if len(cmdline) > _CMDLINE_MAX:
        cmdline = cmdline[: _CMDLINE_MAX - 3] + "..."
    return ProcessInfo(pid, state, pgrp, session, started, cmdline)


def _boot_time() -> float:
    for line in (PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    info = process_info(pid)
    return info is None or info.state != "Z"


def same_process(pid: int, started: float) -> bool:
    """Whether ``pid`` still runs and is the process that started at ``started``."""
    info = process_info(pid)
    return info is not None and info.state != "Z" and abs(info.started - started) < 1.0


def recorded_pid(pid_file: Path) -> ProcessInfo | None:
    """The process ``pid_file`` names if it still is the one that wrote it: alive, the
    leader of its process group (every supervised process is), and started before the file
    was written (a reused PID belongs to a process started later). None otherwise."""
    try:
        pid = int(pid_file.read_text().split()[0])
        written = pid_file.stat().st_mtime
    except (OSError, ValueError, IndexError):
        return None
    if pid <= 1:
        return None
    info = process_info(pid)
    if info is None or info.state == "Z" or info.pgrp != pid:
        return None
    return info if info.started <= written + 1.0 else None


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


def holders(port: int) -> list[ProcessInfo]:
    """The processes with a socket listening on ``port`` (empty: none, or not readable)."""
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    if not inodes:
        return []
    found: list[ProcessInfo] = []
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
        if links & inodes and (info := process_info(int(entry.name))) is not None:
            found.append(info)
    return found


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
