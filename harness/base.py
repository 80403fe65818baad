"""Process supervision: the one place the harness, the local stack, the benchmarks and
the flow's local workers start, watch and stop processes.

``SupervisedProcess``: a child process in its own session (so a signal reaches its whole
process group), its output in ``<run_dir>/<name>.log``, its PID in ``<run_dir>/<name>.pid``;
stopped by that PID, one signal after another (``stop_signals``, SIGTERM then SIGKILL by
default) with a grace period between them. ``stop_recorded`` stops processes another
invocation started, from their PID files, each only while /proc says it still is the
process that wrote the file (``harness.proc.recorded_pid``).

``ManagedProcess``: a service on a loopback port. It never adopts a process it did not
start: ``start()`` refuses a port something already listens on (one line naming the port
and its holder), and the service is ready only once it answers *and* the socket listening
on its port belongs to the process it started (its session), so a foreign server
answering on the port in the meantime is not taken for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from core.config import REPO_ROOT, get_settings
from harness.proc import (
    ProcessInfo,
    describe_holder,
    held_by_session,
    process_info,
    recorded_pid,
    same_process,
)


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


class SupervisedProcess(ABC):
    """A supervised child process: started in a session of its own, stopped by PID."""

    name: str = "process"
    start_timeout: float = 60.0
    stop_timeout: float = 15.0  # the grace between two stop signals
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGKILL)
    # False: the process gets ``environment()`` alone, none of the caller's (a crawl
    # worker's endpoints travel as settings, never through a stray inherited variable).
    inherit_environment: bool = True

    def __init__(self, *, run_dir: Path | None = None) -> None:
        # Default: PLATFORM_RUN_DIR (core.config, the platform's one default).
        self.run_dir = Path(run_dir or get_settings().platform_run_dir)
        self.process: subprocess.Popen[bytes] | None = None

    # -- what a concrete process provides -------------------------------------------
    @abstractmethod
    def command(self) -> Sequence[str]:
        """The argv that runs the process in the foreground."""

    def ready(self) -> bool:
        """True once the process does its job (default: as soon as it runs)."""
        return True

    def environment(self) -> Mapping[str, str]:
        return {}

    def working_directory(self) -> Path | None:
        """Where the process runs (None: the caller's working directory)."""
        return None

    def prepare(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Create data directories, config files, ... before the process starts."""

    def ready_what(self) -> str:
        """The process as a "not ready" error names it."""
        return self.name

    def secret_file(self, what: str, value: str) -> Path:
        """``value`` in ``<run_dir>/<name>.<what>``, readable by this user only, for a
        process to read its secret from: its argv names the file, never the secret (``ps``
        shows every argv to every user of the host)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / f"{self.name}.{what}"
        path.unlink(missing_ok=True)  # created 0600 from the start, never readable by others
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(value)
        return path

    # -- lifecycle -----------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    @property
    def output_path(self) -> Path:
        """Where the process's stdout and stderr go (its log, unless it writes one itself)."""
        return self.log_path

    @property
    def pid_path(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def returncode(self) -> int | None:
        return self.process.poll() if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def spawn(self) -> Self:
        """Start the process and return at once (``start`` also waits until it is ready)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        base = os.environ if self.inherit_environment else {}
        env = {**base, **self.environment()}
        with self.output_path.open("ab") as log:
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
        return self

    def start(self) -> Self:
        if self.alive():
            return self
        self.spawn()
        try:
            wait_until(
                self._ready_checked,
                timeout=self.start_timeout,
                what=self.ready_what(),
                alive=self.alive,
                log_tail=self.log_tail,
            )
        except ServiceError:
            self.stop()
            raise
        return self

    def _ready_checked(self) -> bool:
        return self.ready()

    def stop(self, grace: float | None = None) -> int | None:
        """Stop the process group (``stop_signals``, ``grace`` seconds apart); its exit code."""
        return stop_all([self], grace)[0]

    def kill(self) -> int | None:
        """Hard-kill the process group (SIGKILL), as a crash would; its exit code."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGKILL)
        return process.wait(timeout=self.stop_timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def stop_all(
    processes: Sequence[SupervisedProcess], grace: float | None = None
) -> list[int | None]:
    """Stop ``processes`` together (the groups get the first one's ``stop_signals`` in turn,
    ``grace`` or its ``stop_timeout`` apart), reap them and remove their PID files. Returns
    their exit codes (None: never started)."""
    running = [p for p in processes if p.process is not None and p.process.poll() is None]
    if running:
        first = running[0]
        signal_groups(
            [p.process.pid for p in running if p.process is not None],
            first.stop_signals,
            grace if grace is not None else first.stop_timeout,
        )
    codes: list[int | None] = []
    for supervised in processes:
        process, supervised.process = supervised.process, None
        # Reaped before its PID file goes: until then its PID cannot go to another process.
        codes.append(None if process is None else process.wait(timeout=supervised.stop_timeout))
        with contextlib.suppress(FileNotFoundError):
            supervised.pid_path.unlink()
    return codes


def signal_groups(
    pids: Sequence[int], signals: Sequence[signal.Signals], grace: float
) -> list[int]:
    """Send each process group of ``pids`` the first signal, then the next one to every
    leader still running ``grace`` seconds later, and so on; a PID is only signalled while
    it still is the process found at the start (/proc start time). Returns the PIDs that
    outlived the last signal's grace."""
    identities: dict[int, float] = {}
    for pid in pids:
        info = process_info(pid)
        if info is not None and info.state != "Z":
            identities[pid] = info.started
    for number, sig in enumerate(signals):
        for pid, started in identities.items():
            if same_process(pid, started):
                _signal_group(pid, sig)
        deadline = time.monotonic() + grace
        while True:
            left = [pid for pid, started in identities.items() if same_process(pid, started)]
            if not left:
                return []
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if number == len(signals) - 1:
            return left
    return []


def stop_recorded(
    pid_files: Sequence[Path],
    signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGKILL),
    grace: float = 5.0,
) -> list[tuple[Path, ProcessInfo]]:
    """Stop the processes ``pid_files`` name, started by another invocation (``make
    prefect-down``): each only if it still is the process that wrote its file (a PID the
    system gave to another process since is left alone). Every PID file is removed.
    Returns the files whose process was signalled, with that process."""
    found: list[tuple[Path, ProcessInfo]] = []
    for pid_file in pid_files:
        info = recorded_pid(pid_file)
        if info is None:
            pid_file.unlink(missing_ok=True)
        else:
            found.append((pid_file, info))
    signal_groups([info.pid for _, info in found], signals, grace)
    for pid_file, _ in found:
        pid_file.unlink(missing_ok=True)
    return found


class ManagedProcess(SupervisedProcess):
    """A service run as a supervised child process on a loopback port."""

    name: str = "service"
    # Whether the service listens on ``port`` (a client of another service, such as a
    # Prefect worker, keeps that service's port only to name it).
    listens: bool = True

    def __init__(self, *, port: int | None = None, run_dir: Path | None = None) -> None:
        super().__init__(run_dir=run_dir)
        self.host = "127.0.0.1"
        self.port = port or free_port()

    @abstractmethod
    def ready(self) -> bool:
        """True once the service answers requests."""

    @property
    @abstractmethod
    def url(self) -> str:
        """Where clients reach the service."""

    def ready_what(self) -> str:
        return f"{self.name} on {self.host}:{self.port}"

    def spawn(self) -> Self:
        self.check_port_free()
        return super().spawn()

    def check_port_free(self) -> None:
        """Raise ``PortInUse`` (one line: the port and its holder) when something listens."""
        if self.listens and port_open(self.host, self.port):
            raise PortInUse(
                f"{self.name}: port {self.port} on {self.host} is already in use by "
                f"{describe_holder(self.port)}; stop it or choose another port"
            )

    def _ready_checked(self) -> bool:
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


class LocalSite(ManagedProcess):
    """A site of this repository served on loopback (``python -m <module>``): the demo
    shop, the jobs board, the plain sites. Its ``/__control`` API answers JSON;
    ``access_log`` and ``clear_access_log`` read and reset the requests it served.

    A subclass names its ``module`` and adds its own options in ``site_arguments``; the
    host, port, generator seed and access-log file are passed the same way to every site.
    """

    module: str
    start_timeout = 30.0
    stop_timeout = 10.0

    def __init__(
        self,
        *,
        seed: int,
        access_log: Path | None = None,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        if name is not None:
            self.name = name  # several sites in one run dir need their own log/PID files
        self.seed = seed
        self.access_log_path = access_log

    def site_arguments(self) -> list[str]:
        """The site's own command-line arguments (placed before the common options)."""
        return []

    def command(self) -> Sequence[str]:
        argv = [sys.executable, "-m", self.module, *self.site_arguments()]
        argv += ["--host", self.host, "--port", str(self.port), "--seed", str(self.seed)]
        if self.access_log_path is not None:
            argv += ["--access-log", str(self.access_log_path)]
        return argv

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
