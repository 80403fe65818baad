"""A harness service (or a cluster of them) run in the foreground as a command,
``python -m harness.<service>``: started, watched, stopped on Ctrl-C."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from functools import partial
from typing import Protocol

from harness.base import ManagedProcess, SupervisedProcess


class Foreground(Protocol):
    """What ``run_in_foreground`` runs: a service, or a cluster of them."""

    def start(self) -> object: ...
    def stop(self) -> object: ...
    def alive(self) -> bool: ...


def run_in_foreground(
    service: Foreground,
    *,
    ready: Callable[[], str] | None = None,
    died: Callable[[], str] | None = None,
) -> int:
    """Start ``service``, print where it is (``ready``), and keep it up until SIGINT/SIGTERM.

    Returns a process exit code: 0 on a requested stop, 1 if the service (or one of a
    cluster's nodes) died, said by ``died``.
    """
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    service.start()
    if ready is None and isinstance(service, ManagedProcess):
        ready = partial(_ready_line, service)
    if died is None and isinstance(service, SupervisedProcess):
        died = partial(_died_line, service)
    print(ready() if ready else "ready; Ctrl-C stops it", flush=True)
    try:
        while not stop.wait(1.0):
            if not service.alive():
                print(died() if died else "exited unexpectedly", flush=True)
                return 1
        return 0
    finally:
        service.stop()


def _ready_line(service: ManagedProcess) -> str:
    return (
        f"{service.name} ready at {service.url} (pid {service.pid}, log {service.log_path}); "
        "Ctrl-C stops it"
    )


def _died_line(service: SupervisedProcess) -> str:
    return f"{service.name} exited unexpectedly; see {service.log_path}"
