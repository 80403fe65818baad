"""Create docker/.env from docker/.env.example and fill its empty secrets.

    python3 docker/init_env.py [--env docker/.env] [--example docker/.env.example]

Standard library only: it runs on the Docker host before any image exists. Idempotent:
values already set in docker/.env are kept, keys added to the example since are appended,
and only empty secrets get a random value (hex, so it is safe inside a URL). The file is
written with mode 0600. Secret values are never printed.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The variables compose requires (`${VAR:?...}`) that are secrets: 32 random bytes each.
SECRETS = (
    "REDIS_PASSWORD",
    "ELASTIC_PASSWORD",
    "KIBANA_SYSTEM_PASSWORD",
    "KIBANA_SECURITY_ENCRYPTION_KEY",
    "KIBANA_SAVED_OBJECTS_ENCRYPTION_KEY",
    "POSTGRES_PASSWORD",
    "ELASTICSEARCH_PASSWORD",
    "SEARCH_ES_PASSWORD",
    "KIBANA_SETUP_PASSWORD",
    "PREFECT_API_PASSWORD",
)
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_assignments(text: str) -> dict[str, str]:
    """``KEY=value`` lines (comments and blank lines ignored), in file order."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _ASSIGNMENT.match(line.strip())
        if match:
            values[match.group(1)] = match.group(2).strip()
    return values


def render(example: str, current: dict[str, str]) -> tuple[str, list[str]]:
    """The new .env text and the names of the secrets it generated."""
    generated: list[str] = []
    lines = []
    for line in example.splitlines():
        match = _ASSIGNMENT.match(line.strip())
        if not match:
            lines.append(line)
            continue
        key, value = match.group(1), match.group(2).strip()
        value = current.get(key, value)
        if key in SECRETS and not value:
            value = secrets.token_hex(32)
            generated.append(key)
        lines.append(f"{key}={value}")
    # Keys only the operator's file has (custom settings) are kept at the end.
    extra = [key for key in current if not re.search(rf"^#?{key}=", example, re.MULTILINE)]
    if extra:
        lines += ["", "# -- kept from the previous docker/.env"]
        lines += [f"{key}={current[key]}" for key in extra]
    return "\n".join(lines) + "\n", generated


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", type=Path, default=HERE / ".env")
    parser.add_argument("--example", type=Path, default=HERE / ".env.example")
    args = parser.parse_args(argv)
    current = parse_assignments(args.env.read_text()) if args.env.exists() else {}
    text, generated = render(args.example.read_text(), current)
    # Created 0600 from the start: secrets are never readable by others, not even briefly.
    fd = os.open(args.env, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(args.env, 0o600)
    made = ", ".join(generated) if generated else "none (all were set)"
    print(f"{args.env}: generated {made}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
