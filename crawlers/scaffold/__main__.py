"""``python -m crawlers.scaffold <site> <url>``: onboard a site with a profile only.

    python -m crawlers.scaffold <site> <url> [--force] [--pages N] [--item-type T]
                                [-s NAME=VALUE ...] [--timeout SECONDS]

Samples up to N pages of the site through the platform's fetch settings (sample.py),
tells detail pages from listings and hubs (classify.py), proposes the page types, follow
rules (propose.py) and field map (fields.py, with visible.py and rows.py; plain.py,
templates.py and slots.py for pages without structured data) as a commented profile
(profile.py, write.py), tries them on the sample with the generic spider's rules engine (verify.py)
and writes:

- the profile: ``<profiles dir>/<site>.toml`` (crawlers/profiles, or SITE_PROFILES_DIR);
- fixtures and baseline: ``python -m fingerprints baseline <site> --from-url <base URL>``,
  the one fixture recipe (docs/sites.md): each page type's ``sample_paths`` fetched
  through the gate's own sampler into ``<sites dir>/<site>/fixtures/<page_type>/`` and
  the baseline computed from them (fingerprints/sites, or FINGERPRINT_SITES_DIR).

It prints the page types found, each field's fill rate on the sampled item pages, the
item fields it could not find and what to check by hand. It never overwrites a site's
profile or directory without ``--force``. Exit status: 0 written, 1 written but the
baseline was refused (see its message), 2 an operator's mistake or an unusable site.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from core.config import REPO_ROOT, OperatorError, fingerprint_sites_dir
from crawlers.items import registered_types, schema_by_type
from crawlers.profile_schema import SITE_NAME
from crawlers.profiles import PROFILES_DIR, ProfileError, SiteProfile, shown_path
from crawlers.runtime.sidecrawl import add_settings_option
from crawlers.scaffold.classify import Classification, classify
from crawlers.scaffold.plain import PlainProposal, PlainRefusal, plain_proposal
from crawlers.scaffold.profile import profile_text, propose
from crawlers.scaffold.sample import Sample, SampleError, sample_site
from crawlers.scaffold.verify import report, verify
from crawlers.spiders.rules import field_kinds

SITES_DIR = fingerprint_sites_dir(REPO_ROOT / "fingerprints" / "sites")
DEFAULT_PAGES = 60
# What `python -m fingerprints baseline` writes under a site's directory.
BASELINE_FILE = "baseline.json"
FIXTURES_DIR = "fixtures"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m crawlers.scaffold",
        description="Write a new site's profile, fixtures and baseline from a sample of it.",
    )
    parser.add_argument("site", help="the site's name: a-z, 0-9 and _ (e.g. acme_shop)")
    parser.add_argument("url", help="where to start, e.g. https://www.example.com/")
    parser.add_argument("--force", action="store_true", help="replace an existing site")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="pages to sample")
    parser.add_argument(
        "--item-type",
        help="the item type of the detail pages (default: "
        "the majority of the sampled structured data)",
    )
    add_settings_option(parser, "a Scrapy setting for the sampling crawl (repeatable)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the sample")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args, list(sys.argv[1:] if argv is None else argv))
    except OperatorError as exc:
        print(exc.message, file=sys.stderr)
        return 2


def run(args: argparse.Namespace, argv: list[str]) -> int:
    site, url = args.site, args.url
    check_arguments(site, url, args.pages, args.item_type)
    profile_path = PROFILES_DIR / f"{site}.toml"
    site_dir = SITES_DIR / site
    if not args.force:
        for existing in (profile_path, site_dir):
            if existing.exists():
                raise OperatorError(
                    f"{shown_path(existing)} exists: pass --force to replace site {site!r}"
                )
    with tempfile.TemporaryDirectory(prefix="scaffold-") as scratch:
        try:
            sample = sample_site(
                url,
                args.pages,
                out=Path(scratch) / "sample.jsonl",
                settings=dict(args.settings),
                timeout=args.timeout,
            )
        except SampleError as exc:
            raise OperatorError(f"{url}: {exc}") from None
    check_reached(url, sample)
    classification = classify(sample.pages, url, args.item_type)
    plain: PlainProposal | None = None
    if classification.detail is None and not any(p.types for p in sample.pages):
        # No structured data at all: page types from repeated templates instead.
        try:
            plain = plain_proposal(
                sample.pages, url, field_kinds, args.item_type, sorted(registered_types())
            )
        except PlainRefusal as exc:
            raise OperatorError(f"cannot scaffold {url}: {exc}; try more --pages") from None
        classification = plain.classification
    else:
        check_detail_pages(url, sample, classification, args.item_type)
    if plain is not None and plain.declared:
        item_fields: Sequence[str] = ()
    else:
        item_fields = schema_by_type(str(classification.item_type)).field_names
    proposal = propose(
        site, url, classification, sample.sitemaps, item_fields, plain.fields if plain else None
    )
    if plain is not None:
        proposal.items_css, proposal.declared = plain.items_css, plain.declared
        proposal.languages = plain.languages
        proposal.check += plain.notes
    command = "python -m crawlers.scaffold " + shlex.join(argv)
    text = profile_text(proposal, command)
    try:
        profile = SiteProfile.from_dict(site, tomllib.loads(text), source=shown_path(profile_path))
    except (ProfileError, tomllib.TOMLDecodeError) as exc:
        raise OperatorError(
            f"the proposed profile is not valid ({exc}); please report it"
        ) from None
    verification = verify(profile, proposal)
    blocked = [page for page in sample.pages if page.blocked]
    if blocked:
        proposal.check.append(
            f"{len(blocked)} sampled page(s) were blocked or refused, e.g. "
            f"{blocked[0].url} ({blocked[0].blocked}): consider render or needs_proxies"
        )
    for failed, why in list(sample.errors.items())[:1]:
        proposal.check.append(f"{len(sample.errors)} page(s) got no response, e.g. {failed}: {why}")
    write_profile(profile_path, site_dir, text)
    base_url = profile.base_url
    status, tail = run_baseline(site, profile_path.parent, site_dir.parent, base_url, args.settings)
    written = [shown_path(profile_path)]
    written += [shown_path(path) for path in sorted((site_dir / FIXTURES_DIR).glob("*/*.html"))]
    if status == 0:
        written.append(shown_path(site_dir / BASELINE_FILE))
    else:
        proposal.check.append(
            f"baseline not written ({tail}): fix the fixtures or threshold, then "
            f"`python -m fingerprints baseline {site}`"
        )
    print(report(proposal, verification, written))
    return 0 if status == 0 else 1


def check_arguments(site: str, url: str, pages: int, item_type: str | None) -> None:
    if not SITE_NAME.fullmatch(site):
        raise OperatorError(f"site name {site!r}: use a-z, 0-9 and _ only (e.g. acme_shop)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OperatorError(f"url {url!r}: expected an http(s) URL like https://www.example.com/")
    if pages < 3:
        raise OperatorError(f"--pages {pages}: sample at least 3 pages")
    known = sorted(registered_types())
    if item_type is not None and item_type not in known:
        raise OperatorError(f"--item-type {item_type!r}: expected one of {', '.join(known)}")


def check_reached(url: str, sample: Sample) -> None:
    start = [page for page in sample.pages if page.source == "start"]
    if not start or not start[0].html or start[0].status >= 400:
        if start and start[0].status:
            why = f"it answered {start[0].status}"
        else:
            why = sample.errors.get(url) or next(iter(sample.errors.values()), "no response")
        raise OperatorError(f"cannot sample {url}: {why}")
    if start[0].blocked:
        raise OperatorError(
            f"cannot sample {url}: the start page was refused ({start[0].blocked}); "
            "try -s settings for proxies or rendering"
        )


def check_detail_pages(
    url: str, sample: Sample, classification: Classification, item_type: str | None
) -> None:
    if classification.detail is not None:
        found = classification.item_type
        if found not in registered_types():
            raise OperatorError(
                f"the detail pages of {url} hold {found} items, an item type not declared "
                "in crawlers/items.py: declare it, or pass --item-type"
            )
        return
    seen = ", ".join(sorted({t for page in sample.pages for t in page.types})) or "none"
    wanted = f"of item type {item_type} " if item_type else ""
    raise OperatorError(
        f"no detail pages {wanted}found among {len(sample.pages)} sampled pages of {url} "
        f"(structured data types seen: {seen}): start from a page linking to items, "
        "or raise --pages"
    )


def write_profile(profile_path: Path, site_dir: Path, text: str) -> None:
    profile_path.parent.mkdir(parents=True, exist_ok=True)
    profile_path.write_text(text, encoding="utf-8")
    # A replaced site (--force) keeps nothing of its old page types: fixtures of a page
    # type no longer proposed would enter the baseline, an old baseline would outlive them.
    shutil.rmtree(site_dir / FIXTURES_DIR, ignore_errors=True)
    (site_dir / BASELINE_FILE).unlink(missing_ok=True)


def run_baseline(
    site: str,
    profiles_dir: Path,
    sites_dir: Path,
    base_url: str,
    settings: Sequence[tuple[str, str]],
) -> tuple[int, str]:
    """``python -m fingerprints baseline <site> --from-url <base_url>``: the fixtures of
    the new profile's sample paths and the baseline (a subprocess: the gate's layer is
    above this one). Its exit status and last line."""
    command = [
        sys.executable,
        "-m",
        "fingerprints",
        "--sites-dir",
        str(sites_dir),
        "--profiles-dir",
        str(profiles_dir),
        "baseline",
        site,
        "--from-url",
        base_url,
    ]
    for name, value in settings:
        command += ["-s", f"{name}={value}"]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return done.returncode, lines[-1] if lines else f"exit {done.returncode}"


if __name__ == "__main__":
    sys.exit(main())
