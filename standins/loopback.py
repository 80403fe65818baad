"""The one base of every loopback HTTP server here, the stand-ins' and the harness's: an
aiohttp app served on ``host:port`` (0: any free port) until SIGTERM/SIGINT, its ready line
printed once the socket listens; or served on a thread of the calling process (``Threaded``).

It lives in the stand-ins' package because they import nothing of ours outside it (the
harness may import the stand-ins, not the other way round); it imports nothing of ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import http.server
import platform
import signal
import threading
from collections.abc import Callable

from aiohttp import web

# What the standard library's http.server sends as its Server header's product, kept by
# the servers that began on it: their wire answers stay what clients and tests have seen.
STDLIB_PRODUCT = "BaseHTTP/0.6"


def server_header(app: web.Application, product: str) -> None:
    """Every answer of ``app`` carries ``Server: <product> Python/<version>``."""
    value = f"{product} Python/{platform.python_version()}"

    async def stamp(_: web.Request, response: web.StreamResponse) -> None:
        response.headers["Server"] = value

    app.on_response_prepare.append(stamp)


def unsupported(request: web.Request) -> web.Response:
    """http.server's answer to a method its handler has no ``do_<METHOD>`` for: 501 with
    its reason, its HTML error page, and the connection closed."""
    message = f"Unsupported method ({request.method!r})"
    # Both constants are http.server's public module attributes, absent from typeshed.
    body = http.server.DEFAULT_ERROR_MESSAGE % {  # type: ignore[attr-defined]
        "code": 501,
        "message": html.escape(message, quote=False),
        "explain": "Server does not support this operation",
    }
    response = web.Response(
        status=501,
        reason=message,
        body=body.encode("utf-8", "replace"),  # aiohttp sends none to a HEAD
        headers={"Content-Type": http.server.DEFAULT_ERROR_CONTENT_TYPE},  # type: ignore[attr-defined]
    )
    response.force_close()
    return response


async def _started(app: web.Application, host: str, port: int, backlog: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, backlog=backlog).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner


def bound_port(runner: web.AppRunner) -> int:
    return int(runner.addresses[0][1])


async def serve(
    app: web.Application,
    host: str,
    port: int,
    ready: Callable[[int], str] | None = None,
    *,
    backlog: int = 128,
) -> None:
    """Serve until SIGTERM/SIGINT; ``ready(port)`` is printed once the socket listens.

    A taken or foreign address raises the ``OSError`` of the bind, the app not started.
    """
    runner = await _started(app, host, port, backlog)
    if ready is not None:
        print(ready(bound_port(runner)), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def run(
    app: web.Application,
    host: str,
    port: int,
    ready: Callable[[int], str] | None = None,
    *,
    backlog: int = 128,
) -> None:
    """``serve`` in a fresh event loop: a server process's whole life."""
    asyncio.run(serve(app, host, port, ready, backlog=backlog))


class Threaded:
    """``app`` served on 127.0.0.1 (a free port) by an event loop on a thread of this
    process, for stubs a test runs in-process: ``start()`` returns once it listens."""

    def __init__(self, app: web.Application, name: str) -> None:
        self.app = app
        self.name = name
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> int:
        ready = threading.Event()
        failed: list[BaseException] = []

        def serve_here() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                runner = loop.run_until_complete(_started(self.app, "127.0.0.1", 0, 128))
            except BaseException as exc:  # handed to the starting thread
                failed.append(exc)
                ready.set()
                loop.close()
                return
            self.port = bound_port(runner)
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve_here, name=self.name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise RuntimeError(f"{self.name} did not start within {timeout:.0f} s")
        if failed:
            raise failed[0]
        return self.port

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed between the check and the call
                self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
