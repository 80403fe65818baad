"""A local stand-in for Slack's incoming webhooks that records every post.

Slack is a SaaS we cannot run here; this answers like a webhook does (``200 ok``) and
appends each JSON body to a JSONL file, so tests and the demo can read what was sent.
``--fail-first N --fail-status S`` answers the first N posts with status S to exercise
retries.

    python -m harness.slack_receiver --port 8099 --record .run/slack.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web

from harness.base import ManagedProcess
from harness.foreground import run_in_foreground
from standins import loopback

WEBHOOK_PATH = "/services/T000/B000/XXXXXXXXXXXXXXXX"


def create_app(record: Path, fail_first: int = 0, fail_status: int = 500) -> web.Application:
    failures = {"left": fail_first}

    async def answer(request: web.Request) -> web.Response:
        if request.method == "GET":  # readiness probe
            return _answer(200, b"receiver ok")
        if request.method != "POST":
            return loopback.unsupported(request)
        body = await request.read()
        if failures["left"] > 0:
            failures["left"] -= 1
            return _answer(fail_status, b"server_error")
        with record.open("a") as out:
            entry = {"path": request.raw_path, "body": json.loads(body or b"{}")}
            out.write(json.dumps(entry) + "\n")
        return _answer(200, b"ok")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    loopback.server_header(app, loopback.STDLIB_PRODUCT)
    return app


def _answer(status: int, text: bytes) -> web.Response:
    return web.Response(status=status, body=text, headers={"Content-Type": "text/plain"})


def serve(port: int, record: Path, fail_first: int = 0, fail_status: int = 500) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    record.touch()
    loopback.run(create_app(record, fail_first, fail_status), "127.0.0.1", port)


class SlackReceiver(ManagedProcess):
    name = "slack-receiver"
    start_timeout = 15.0

    def __init__(
        self,
        *,
        port: int | None = None,
        run_dir: Path | None = None,
        fail_first: int = 0,
        fail_status: int = 500,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = f"slack-receiver-{self.port}"
        self.record = self.run_dir / f"slack-{self.port}.jsonl"
        self.fail_first = fail_first
        self.fail_status = fail_status

    @property
    def url(self) -> str:
        """The webhook URL to set as SLACK_WEBHOOK_URL."""
        return f"http://{self.host}:{self.port}{WEBHOOK_PATH}"

    def command(self) -> Sequence[str]:
        return [
            sys.executable, "-m", "harness.slack_receiver",
            "--port", str(self.port),
            "--record", str(self.record),
            "--fail-first", str(self.fail_first),
            "--fail-status", str(self.fail_status),
            "--serve",
        ]  # fmt: skip

    def ready(self) -> bool:
        with urllib.request.urlopen(f"http://{self.host}:{self.port}/", timeout=1) as answer:
            return answer.status == 200

    def posts(self) -> list[dict[str, object]]:
        """The JSON bodies received so far, oldest first."""
        if not self.record.exists():
            return []
        lines = self.record.read_text().splitlines()
        return [json.loads(line)["body"] for line in lines if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record Slack webhook posts locally.")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--record", type=Path, default=Path(".run/slack.jsonl"))
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--serve", action="store_true", help="serve in this process")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.port, args.record, args.fail_first, args.fail_status)
        return 0
    receiver = SlackReceiver(port=args.port, fail_first=args.fail_first)
    return run_in_foreground(receiver)


if __name__ == "__main__":
    raise SystemExit(main())
