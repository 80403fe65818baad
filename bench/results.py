"""docs/benchmarks.md, written from what the benchmarks print.

    .venv/bin/python -m bench.results NAME [NAME ...] [--args NAME="--rounds 2"] [--page PATH]
    .venv/bin/python -m bench.results --list

Runs each named benchmark as ``python -m bench.<NAME> [its --args]``, one after the other,
and writes what it printed (its stdout; progress on stderr passes through) into that
benchmark's section of the page, under the date, the command, its run time and exit
status, and the machine: cores and CPU model, memory, and the load average (1 minute) at
its start and end, since the machine may be shared. The sections of benchmarks not named
stay as they are, each with its own date and command, so the page can be brought up to
date one benchmark at a time. ``--list``: the benchmarks and when the page last measured
each. Exit status: the highest of the benchmarks' (1: a goal missed or a failure, as the
benchmark printed).
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import smoke
from core.config import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "benchmarks.md"
BENCH_DIR = REPO_ROOT / "bench"
# Commands in bench/ that are not benchmarks: this one, and crawlee's side of bench.frontier.
NOT_BENCHMARKS = frozenset({"results", "crawlee_demo"})
HEADER = """# Benchmarks: what they printed

Written by `python -m bench.results` from the benchmarks' own output: do not edit the
sections by hand, run the benchmark through it again (README "Benchmarks"). Each section
says when, on what machine and with which command it was measured; the machine is a
shared 2-core one unless it says otherwise, so read each table's own load average, and
its same-run ratios rather than its absolute rates. What each benchmark measures and how
to read its columns: its module's docstring (`python -m bench.<name> --help`) and the
reference doc it names.
"""
BEGIN = "<!-- bench.results: {name} -->"
END = "<!-- /bench.results: {name} -->"
SECTION = re.compile(
    r"<!-- bench\.results: (?P<name>[\w.]+) -->\n"
    r"(?P<body>.*?)<!-- /bench\.results: (?P=name) -->\n",
    re.DOTALL,
)


def commands(bench_dir: Path = BENCH_DIR) -> set[str]:
    """The modules of bench/ that are commands: a module-level ``main`` run under
    ``__main__``."""
    found = set()
    for path in bench_dir.glob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        has_main = any(
            isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body
        )
        runs_as_main = any(
            isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
        )
        if has_main and runs_as_main:
            found.add(path.stem)
    return found


def benchmarks() -> list[str]:
    return sorted(commands() - NOT_BENCHMARKS)


@dataclass(frozen=True)
class Run:
    name: str
    argv: tuple[str, ...]
    started: dt.datetime
    seconds: float
    status: int
    load_start: float
    load_end: float
    output: str

    @property
    def command(self) -> str:
        return shlex.join(["python", "-m", f"bench.{self.name}", *self.argv])

    def section(self) -> str:
        output = self.output.rstrip("\n") or "(nothing printed)"
        return (
            f"## bench.{self.name}\n\n"
            f"`{self.command}`: {self.started:%Y-%m-%d %H:%M} UTC, {self.seconds:.0f} s, "
            f"exit status {self.status}; {machine()}, load average {self.load_start:.1f} at "
            f"start, {self.load_end:.1f} at end.\n\n```\n{output}\n```\n"
        )


def machine() -> str:
    """Cores, CPU model and memory of this machine, in a few words."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        model = f" ({found.group(1).strip()})" if found else ""
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        found = re.search(r"^MemTotal:\s+(\d+) kB", meminfo.read_text(), re.MULTILINE)
        memory = f", {int(found.group(1)) / 1024**2:.0f} GiB" if found else ""
    return f"{os.cpu_count()} cores{model}{memory}, {platform.system()}"


def run(name: str, argv: Sequence[str]) -> Run:
    """``python -m bench.<name> argv``; its stdout kept (and shown as it comes)."""
    started = dt.datetime.now(dt.UTC)
    load_start = os.getloadavg()[0]
    began = time.monotonic()
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    process = subprocess.Popen(
        [sys.executable, "-m", f"bench.{name}", *argv],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        print(line, end="", file=sys.stderr, flush=True)
        lines.append(line)
    status = process.wait()
    return Run(
        name=name,
        argv=tuple(argv),
        started=started,
        seconds=time.monotonic() - began,
        status=status,
        load_start=load_start,
        load_end=os.getloadavg()[0],
        output="".join(lines),
    )


def sections(page: str) -> dict[str, str]:
    """name -> its section's text (between its markers), from the page."""
    return {match["name"]: match["body"] for match in SECTION.finditer(page)}


def render(found: dict[str, str]) -> str:
    """The page: its header, then the sections in benchmark-name order."""
    parts = [HEADER]
    for name in sorted(found):
        begin, end = BEGIN.format(name=name), END.format(name=name)
        parts.append(f"{begin}\n{found[name].rstrip()}\n{end}\n")
    return "\n".join(parts)


def write(page: Path, runs: Sequence[Run]) -> None:
    found = sections(page.read_text()) if page.exists() else {}
    for measured in runs:
        found[measured.name] = measured.section()
    page.write_text(render(found))


def listing(page: Path) -> None:
    found = sections(page.read_text()) if page.exists() else {}
    for name in benchmarks():
        body = found.get(name)
        when = re.search(r"`: (\d{4}-\d\d-\d\d)", body) if body else None
        print(f"bench.{name:<14} {when.group(1) if when else 'not on the page'}")


def parse_extra(values: Sequence[str], names: Sequence[str]) -> dict[str, list[str]]:
    extra: dict[str, list[str]] = {}
    for value in values:
        name, sep, arguments = value.partition("=")
        if not sep or name not in names:
            raise SystemExit(f"--args {value!r}: give NAME=ARGUMENTS for a benchmark named")
        extra[name] = shlex.split(arguments)
    return extra


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run")
    parser.add_argument(
        "--args", action="append", default=[], metavar="NAME=ARGS", help="a benchmark's options"
    )
    parser.add_argument("--page", type=Path, help=f"default: {PAGE.relative_to(REPO_ROOT)}")
    parser.add_argument("--list", action="store_true", help="the benchmarks, when last measured")
    # The smoke run writes a page of its own (a temporary file), never the repository's.
    args = smoke.parse_args(parser, argv, names=["reclaim"])
    page = args.page or PAGE
    if args.list:
        listing(page)
        return 0
    unknown = sorted(set(args.names) - set(benchmarks()))
    if unknown or not args.names:
        parser.error(f"name benchmarks among {', '.join(benchmarks())} (unknown: {unknown})")
    extra = parse_extra(args.args, args.names)
    with tempfile.TemporaryDirectory(prefix="bench-results-") as tmp:
        if args.smoke and args.page is None:
            page = Path(tmp) / "benchmarks.md"
        runs = []
        for name in args.names:
            own = extra.get(name, ["--smoke"] if args.smoke else [])
            runs.append(run(name, own))
            print(f"bench.{name}: exit status {runs[-1].status}, {runs[-1].seconds:.0f} s")
        write(page, runs)
        print(f"wrote {len(runs)} section(s) of {page}")
    return max(measured.status for measured in runs)


if __name__ == "__main__":
    raise SystemExit(main())
