"""Process supervision shared by every locally started service.

Each service runs as a child process in its own session (so a stop reaches its whole
process group), logs into ``<run_dir>/<name>.log``, writes ``<run_dir>/<name>.pid`` and
is stopped by that PID: SIGTERM first, SIGKILL after a grace period.

A service never adopts a process it did not start: ``start()`` refuses a port something
already listens on (one line naming the port and its holder, ``harness.ports``), and
the service is ready only once it answers *and* the socket listening on its port belongs
to the process it started (its session), so a foreign server answering on the port in
the meantime is not taken for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from core.config import REPO_ROOT, get_settings
from harness.ports import describe_holder, held_by_session


class ServiceError(RuntimeError):
    """A service could not be started, became unready, or is missing its binary."""


class PortInUse(ServiceError):
    """A service's port is held by a process the service did not start."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def wait_until(
    predicate: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    alive: Callable[[], bool] | None = None,
    log_tail: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until it is true; raise ServiceError naming ``what`` otherwise.

    ``alive`` lets a caller stop waiting as soon as the process it waits for has died,
    instead of sitting out the whole timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except PortInUse:
            raise  # a verdict, not a "not yet"
        except Exception:  # noqa: S110 - not answering yet: poll again
            pass
        if alive is not None and not alive():
            tail = log_tail() if log_tail else ""
            raise ServiceError(f"{what}: process exited before it was ready\n{tail}")
        if time.monotonic() >= deadline:
            tail = log_tail() if log_tail else ""
            raise ServiceError(f"{what}: not ready after {timeout:.0f}s\n{tail}")
        time.sleep(interval)


class ManagedProcess(ABC):
    """A service run as a supervised child process on a loopback port."""

    name: str = "service"
    start_timeout: float = 60.0
    stop_timeout: float = 15.0
    # Whether the service listens on ``port`` (a client of another service, such as a
    # Prefect worker, keeps that service's port only to name it).
    listens: bool = True

    def __init__(self, *, port: int | None = None, run_dir: Path | None = None) -> None:
        self.host = "127.0.0.1"
        self.port = port or free_port()
        # Default: PLATFORM_RUN_DIR (core.config, the platform's one default).
        self.run_dir = Path(run_dir or get_settings().platform_run_dir)
        self.process: subprocess.Popen[bytes] | None = None

    # -- what a concrete service provides -------------------------------------------
    @abstractmethod
    def command(self) -> Sequence[str]:
        """The argv that runs the service in the foreground."""

    @abstractmethod
    def ready(self) -> bool:
        """True once the service answers requests."""

    def environment(self) -> Mapping[str, str]:
        return {}

    def working_directory(self) -> Path | None:
        """Where the process runs (None: the caller's working directory)."""
        return None

    def prepare(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Create data directories, config files, ... before the process starts."""

    @property
    @abstractmethod
    def url(self) -> str:
        """Where clients reach the service."""

    # -- lifecycle -----------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> Self:
        if self.alive():
            return self
        self.check_port_free()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        env = {**os.environ, **self.environment()}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.command()),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.working_directory(),
                start_new_session=True,
            )
        self.pid_path.write_text(f"{self.process.pid}\n")
        try:
            wait_until(
                self._ready_and_ours,
                timeout=self.start_timeout,
                what=f"{self.name} on {self.host}:{self.port}",
                alive=self.alive,
                log_tail=self.log_tail,
            )
        except ServiceError:
            self.stop()
            raise
        return self

    def check_port_free(self) -> None:
        """Raise ``PortInUse`` (one line: the port and its holder) when something listens."""
        if self.listens and port_open(self.host, self.port):
            raise PortInUse(
                f"{self.name}: port {self.port} on {self.host} is already in use by "
                f"{describe_holder(self.port)}; stop it or choose another port"
            )

    def _ready_and_ours(self) -> bool:
        if not self.ready():
            return False
        if not self.listens or self.process is None:
            return True
        # The process started here runs in a session of its own (start_new_session).
        ours = held_by_session(self.port, self.process.pid)
        if ours is False:
            raise PortInUse(
                f"{self.name}: port {self.port} on {self.host} is answered by "
                f"{describe_holder(self.port)}, not by the process started here "
                f"(pid {self.process.pid})"
            )
        return True

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait(timeout=self.stop_timeout)
        with contextlib.suppress(FileNotFoundError):
            self.pid_path.unlink()

    def kill(self) -> None:
        """Hard-kill the service (SIGKILL), as a crash would; for failure tests."""
        if self.process is not None and self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=self.stop_timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LocalSite(ManagedProcess):
    """A site of this repository served on loopback (``python -m <package>``): the demo
    shop, the jobs board. Its ``/__control`` API answers JSON; ``access_log`` and
    ``clear_access_log`` read and reset the requests it served."""

    def environment(self) -> Mapping[str, str]:
        # `python -m <package>` must import from this checkout whatever the caller's cwd.
        path = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def ready(self) -> bool:
        with urllib.request.urlopen(self.url + "/", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)

    def start(self) -> Self:
        if self.alive():
            return self
        super().start()
        # The readiness probes are not traffic anyone asked for: start with an empty log.
        self.clear_access_log()
        return self

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(  # noqa: S310 - our own loopback URL
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.loads(response.read())

    def access_log(self, since: int = 0) -> list[dict[str, Any]]:
        """Requests served since index ``since``."""
        result: list[dict[str, Any]] = self._call("GET", f"/__control/access-log?since={since}")
        return result

    def clear_access_log(self) -> None:
        self._call("DELETE", "/__control/access-log")


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_in_foreground(service: ManagedProcess) -> int:
    """Start ``service``, print where it is, and keep it up until SIGINT/SIGTERM.

    Returns a process exit code: 0 on a requested stop, 1 if the service died.
    """
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    service.start()
    print(
        f"{service.name} ready at {service.url} (pid {service.pid}, log {service.log_path}); "
        "Ctrl-C stops it",
        flush=True,
    )
    try:
        while not stop.wait(1.0):
            if not service.alive():
                print(f"{service.name} exited unexpectedly; see {service.log_path}", flush=True)
                return 1
        return 0
    finally:
        service.stop()
