"""The loopback server base: a server process's life (ready line, SIGTERM, a taken port),
an in-process server on a thread, the Server header kept and http.server's 501."""

from __future__ import annotations

import errno
import http.client
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from standins import loopback

REPO_ROOT = Path(__file__).resolve().parents[2]


async def _echo(request: web.Request) -> web.Response:
    return web.Response(text=f"{request.method} {request.raw_path}")


def _app(product: str | None = None) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        if request.method == "GET":
            return await _echo(request)
        return loopback.unsupported(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    if product is not None:
        loopback.server_header(app, product)
    return app


@pytest.fixture
def served() -> Iterator[int]:
    server = loopback.Threaded(_app("Testsite/2.1"), "loopback-test")
    port = server.start()
    yield port
    server.stop()


def _request(port: int, method: str, target: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, target)
    return connection.getresponse()


def test_a_threaded_server_answers_on_a_free_port_until_stopped() -> None:
    server = loopback.Threaded(_app(), "loopback-test")
    port = server.start()
    assert port > 0
    answer = _request(port, "GET", "/a?b=%20c")
    assert (answer.status, answer.read()) == (200, b"GET /a?b=%20c")  # the raw target
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_the_server_header_is_the_products_with_pythons_version(served: int) -> None:
    answer = _request(served, "GET", "/")
    answer.read()
    assert answer.getheader("Server") == f"Testsite/2.1 Python/{sys.version.split()[0]}"


@pytest.mark.parametrize("method", ["POST", "HEAD"])
def test_an_unhandled_method_gets_http_servers_501(served: int, method: str) -> None:
    answer = _request(served, method, "/")
    body = answer.read()
    assert answer.status == 501
    assert answer.reason == f"Unsupported method ('{method}')"
    assert answer.getheader("Content-Type") == "text/html;charset=utf-8"
    assert answer.getheader("Connection") == "close"
    page = b"<p>Message: Unsupported method ('" + method.encode() + b"').</p>"
    # A HEAD gets the page's length, not the page.
    assert int(answer.getheader("Content-Length") or 0) > len(page)
    assert (page in body) if method == "POST" else body == b""


SERVER = textwrap.dedent(
    """
    import sys
    from aiohttp import web
    from standins import loopback

    async def hello(request):
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    try:
        loopback.run(app, "127.0.0.1", int(sys.argv[1]), lambda port: f"ready on {port}")
    except OSError as exc:
        print(f"cannot listen: errno {exc.errno}", flush=True)
        sys.exit(3)
    print("stopped", flush=True)
    """
)


def _start(port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)],
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_server_process_prints_its_port_once_listening_and_stops_on_sigterm() -> None:
    process = _start(0)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("ready on ")
        port = int(line.removeprefix("ready on "))
        assert _request(port, "GET", "/").read() == b"hello"
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
        assert (process.returncode, out.strip()) == (0, "stopped")
    finally:
        process.kill()
        process.wait()


def test_a_taken_port_raises_the_binds_error_before_any_ready_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = _start(taken.getsockname()[1])
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 3
    assert out.strip() == f"cannot listen: errno {errno.EADDRINUSE}"  # no ready line
