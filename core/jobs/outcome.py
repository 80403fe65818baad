"""How a crawl or a job ended: one close reason and one line saying why.

Pure functions over a crawl's Scrapy stats or a job's counters (the workers' sums with the
ledger's exact figures, ``core.jobs.index.job_counters``). The crawl writes the reason into
``finish_reason`` (``crawlers.runtime.outcome``), ``scrapy crawl`` logs the line last and
exits with ``exit_code(reason)``, the jobs document carries both, so the flow reads the
same word. Zero items stored is never success, unless a spider counted a page listing
none (``NONE_LISTED``). The reasons, their exit statuses and when each is decided:
docs/pipelines.md, "How a crawl ends".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.fetch.refusal import refusal as refusal_line
from core.figures.stats import unparsed_pages
from core.frontier.budget import reached_text
from core.recrawl.removals import failed_requests

FINISHED = "finished"
REFUSED = "refused"
NOTHING_STORED = "nothing_stored"
STORE_FAILED = "store_failed"
AUTH_FAILED = "elasticsearch_auth"  # core.es_access.AUTH_REASON
SHUTDOWN = "shutdown"
# Stopped before it could close (a second SIGTERM/SIGINT: Scrapy's forced stop).
SHUTDOWN_FORCED = "shutdown_forced"

# ``scrapy crawl``'s exit status per reason; any other reason stands only with items
# stored, and exits 0. 1 is Scrapy's own (the crawler could not start).
EXIT_CODES = {
    FINISHED: 0,
    AUTH_FAILED: 2,
    REFUSED: 3,
    NOTHING_STORED: 4,
    STORE_FAILED: 5,
    SHUTDOWN_FORCED: 6,
}
# Reasons this module decides: judged again from the figures, never taken as given.
JUDGED = (NOTHING_STORED, STORE_FAILED)

STORED = "items/stored"
LEDGER_PAGES = "pages/total"  # a job's ledger: pages fetched, exact (core.figures.ledger)
SCRAPED = "item_scraped_count"  # items through every pipeline (Scrapy's count)
ITEM_ERRORS = "item_error_count"  # items that failed in a pipeline (item_error)
NONE_LISTED = "items/none_listed"
# Stats (strings) a crawl's components leave for the line: the store's give-up line.
STORE_FAILURE = "store/failure"
# The workers' own verdicts, counted into a job's counters (one per worker close).
WORKER_REASONS = "workers/finish_reason/"

# Words for the download errors of a site that never answered.
_NETWORK_WORDS = (
    ("ConnectionRefused", "connection refused"),
    ("DNSLookup", "DNS lookup failed"),
    ("TimedOut", "timed out"),
    ("Timeout", "timed out"),
    ("NoRoute", "no route to host"),
    ("ConnectionLost", "connection lost"),
    ("ResponseNeverReceived", "no response"),
    ("SSL", "TLS handshake failed"),
    ("TLS", "TLS handshake failed"),
)


@dataclass(frozen=True)
class Outcome:
    """A run's final word: its close reason and the one line that says why."""

    reason: str
    line: str

    @property
    def exit_code(self) -> int:
        return exit_code(self.reason)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def text(self) -> str:
        """The log's last line: ``finish_reason nothing_stored: 0 of 20 items stored: ...``."""
        return f"finish_reason {self.reason}: {self.line}"


def exit_code(reason: str) -> int:
    return EXIT_CODES.get(reason, 0)


def judge(
    counters: Mapping[str, object],
    *,
    reason: str = FINISHED,
    stored: int | None = None,
    spill_remaining: int | None = None,
    refusal: str | None = None,
) -> Outcome:
    """The outcome of a crawl (``reason``: Scrapy's) or a job (``job_reason``).

    ``stored``: items stored when known from elsewhere (a worker: its job's ledger), else
    ``items/stored`` or, without a store, ``item_scraped_count``. ``refusal``: the line
    of a crawl every page of which was refused (``core.fetch.refusal``, with its advice for
    what the crawl presented); None: judged from ``counters`` here."""
    n = _Numbers(counters)
    own = n.stored()
    stored = own if stored is None else stored
    base = FINISHED if reason in JUDGED else reason
    extracted = n.extracted()
    if base == AUTH_FAILED or (not stored and n.get(WORKER_REASONS + AUTH_FAILED)):
        waiting = f"; {spill_remaining:,} wait in the spill" if spill_remaining else ""
        return Outcome(
            AUTH_FAILED,
            f"{_of(stored, extracted)}: Elasticsearch refused the crawl's credentials{waiting}",
        )
    if refusal is None:
        refusal = refusal_line(n.ints)
    if refusal or base == REFUSED:
        return Outcome(REFUSED, refusal or f"{_of(stored, extracted)}: the site refused the crawl")
    failed = _store_failure(n, stored, extracted, counters)
    if failed is not None:
        return Outcome(STORE_FAILED, failed)
    if stored:
        line = _stored_line(n, stored, extracted, spill_remaining)
        if stored != own:  # a worker: its job's figure
            line += f" (by the job's workers; this one stored {own:,})"
        return Outcome(base, line)
    if n.get(NONE_LISTED) and not extracted and not n.unparsed() and n.pages_read():
        return Outcome(
            FINISHED,
            f"0 items: the site lists none ({_count(n.pages_read(), 'page')} read, "
            f"{n.get(NONE_LISTED):,} of them listing no items)",
        )
    return Outcome(NOTHING_STORED, _nothing_line(n, extracted, spill_remaining, base))


def job_reason(counters: Mapping[str, object]) -> str:
    """A job's reason before judging: the budget that ended it, else ``finished``."""
    for budget in ("pages", "time"):
        if _Numbers(counters).get(f"budget/reached/{budget}"):
            return f"budget_{budget}"
    return FINISHED


def _store_failure(
    n: _Numbers, stored: int, extracted: int, counters: Mapping[str, object]
) -> str | None:
    unsaved, dead = n.get("store/unsaved"), n.get("store/dead_letter")
    why = counters.get(STORE_FAILURE)
    detail = f": {why}" if isinstance(why, str) and why else ""
    if unsaved:
        return f"{_of(stored, extracted)}: {unsaved:,} neither stored nor spilled{detail}"
    if dead and not stored:
        return (
            f"{_of(stored, extracted)}: {dead:,} rejected by Elasticsearch for good "
            f"(dead letters){detail}"
        )
    if not stored and n.get(WORKER_REASONS + STORE_FAILED):
        return f"{_of(stored, extracted)}: the store failed (see the workers' logs)"
    return None


def _stored_line(n: _Numbers, stored: int, extracted: int, spill_remaining: int | None) -> str:
    notes = []
    dropped = n.dropped()
    if dropped:
        notes.append(f"{dropped:,} dropped by validation ({n.top_invalid()})")
    if n.get("store/dead_letter"):
        notes.append(f"{n.get('store/dead_letter'):,} rejected by Elasticsearch (dead letters)")
    if spill_remaining:
        notes.append(f"{spill_remaining:,} wait in the spill")
    unparsed = n.unparsed()
    if unparsed:
        notes.append(f"{_count(unparsed, 'page')} could not be parsed")
    if STORED not in n.ints:
        notes.append("no store (ELASTICSEARCH_URL): the items went to the feed exports only")
    line = _of(stored, extracted)
    return f"{line}; {'; '.join(notes)}" if notes else line


def _nothing_line(n: _Numbers, extracted: int, spill_remaining: int | None, reason: str) -> str:
    if extracted:
        parts = []
        dropped = n.dropped()
        if dropped >= extracted:
            parts.append(f"all dropped by validation ({n.top_invalid()})")
        elif dropped:
            parts.append(f"{dropped:,} dropped ({n.top_invalid()})")
        if spill_remaining:
            parts.append(f"{spill_remaining:,} wait in the spill for Elasticsearch")
        failed = n.failed()
        if failed:
            parts.append(f"{failed:,} failed in the pipelines (item_error, see the log)")
        line = f"0 of {extracted:,} items stored: " + ("; ".join(parts) or "none reached the store")
    elif n.failed():
        line = f"0 items stored: {n.failed():,} failed in the pipelines (item_error, see the log)"
    else:
        line = f"0 items: {_no_items(n)}"
    if reason not in (FINISHED, NOTHING_STORED):
        line += f"; the crawl ended early ({reason})"
    budgets = reached_text(n.ints)
    if budgets:
        line += f"; crawl budget reached: {budgets}"
    return line


def _no_items(n: _Numbers) -> str:
    """Why a crawl extracted no item: pages read, errors only, or a site that never
    answered."""
    pages = n.pages_read()
    if pages:
        unparsed = n.unparsed()
        if unparsed:
            where = ", ".join(f"{name} {count}" for name, count in unparsed_pages(n.ints).items())
            return (
                f"{_count(pages, 'page')} read, no item extracted; {unparsed:,} could not be "
                f"parsed ({where}): did the site's layout change?"
            )
        if reached_text(n.ints):
            # Pages were left unread: the budget, not the selectors, is the likely cause.
            return f"{_count(pages, 'page')} read, no item extracted before the budget stopped it"
        return f"{_count(pages, 'page')} read, no item extracted (selectors matched nothing?)"
    statuses = n.error_statuses()
    if statuses:
        return f"the site answered errors only ({statuses})"
    requests = n.get("downloader/request_count")
    network = n.network_errors()
    if network:
        return f"site down ({network} on every request, {_count(requests, 'request')})"
    if requests:
        return f"no page answered ({_count(requests, 'request')})"
    failed = failed_requests(n.ints)
    if failed:
        return f"no page was fetched ({_count(failed, 'request')} failed for good)"
    return "no request was made (no start URL, or nothing enqueued for the job?)"


def _of(stored: int, extracted: int) -> str:
    if stored < extracted:
        return f"{stored:,} of {extracted:,} items stored"
    return f"{_count(stored, 'item')} stored"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


class _Numbers:
    """The integer counters of a run, with the figures the judgement reads."""

    def __init__(self, counters: Mapping[str, object]) -> None:
        self.ints = {
            name: int(value)
            for name, value in counters.items()
            if isinstance(value, int) and not isinstance(value, bool)
        }

    def get(self, name: str) -> int:
        return self.ints.get(name, 0)

    def sum(self, prefix: str) -> int:
        return sum(value for name, value in self.ints.items() if name.startswith(prefix))

    def stored(self) -> int:
        if STORED in self.ints:
            return self.ints[STORED]
        return self.get(SCRAPED)  # no store: what the feed exports got

    def dropped(self) -> int:
        """Items validation dropped (the ledger's exact count for a job, when higher)."""
        return max(self.sum("validation/dropped/"), self.get("items/invalid"))

    def extracted(self) -> int:
        """Items the spider yielded: validated (passed or dropped) and seen unchanged."""
        validated = self.sum("validation/valid/") + self.sum("validation/dropped/")
        validated += self.sum("recrawl/seen/")
        if not validated:
            validated = self.get("item_scraped_count") + self.get("item_dropped_count")
        # A job's ledger: items past dedup plus those validation dropped.
        return max(validated, self.get("items/scraped") + self.get("items/invalid"))

    def failed(self) -> int:
        """Item errors in the pipelines (``ITEM_ERRORS``: every one, re-deliveries too)."""
        return self.get(ITEM_ERRORS) or self.get("dedup/failed")

    def unparsed(self) -> int:
        return sum(unparsed_pages(self.ints).values())

    def pages_read(self) -> int:
        """Answers that were pages (not errors, blocks or robots.txt); a job's ledger
        figure (``pages/total`` less ``pages/refused``) when there is one: it is exact."""
        if LEDGER_PAGES in self.ints:
            return max(0, self.get(LEDGER_PAGES) - self.get("pages/refused"))
        if "responses/classified" not in self.ints:
            return self.get("response_received_count")
        robots = self.get("responses/robots_txt") - self.get("responses/robots_txt_missing")
        ok = self.get("responses/ok")
        return max(0, ok - min(ok, max(0, robots)))

    def error_statuses(self) -> str:
        prefix = "responses/error_status/"
        counts = {
            name.removeprefix(prefix): v for name, v in self.ints.items() if name.startswith(prefix)
        }
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
        return ", ".join(f"HTTP {status} x {count:,}" for status, count in ranked)

    def network_errors(self) -> str:
        prefix = "downloader/exception_type_count/"
        counts: dict[str, int] = {}
        for name, value in self.ints.items():
            if name.startswith(prefix):
                cls = name.removeprefix(prefix).rsplit(".", 1)[-1]
                word = next((w for key, w in _NETWORK_WORDS if key in cls), cls)
                counts[word] = counts.get(word, 0) + value
        return ", ".join(sorted(counts, key=lambda word: -counts[word])[:2])

    def top_invalid(self, limit: int = 3) -> str:
        """``name missing`` or ``name missing 20, price float_type 3``: validation's most
        frequent field errors (``validation/invalid/<type>/<field>/<reason>``)."""
        prefix = "validation/invalid/"
        counts: dict[str, int] = {}
        for name, value in self.ints.items():
            if name.startswith(prefix) and name.count("/") >= 4:
                _, _, _, rest = name.split("/", 3)
                field, _, why = rest.rpartition("/")
                key = f"{field} {why}"
                counts[key] = counts.get(key, 0) + value
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
        if not ranked:
            unknown = self.sum("validation/dropped/_unknown/")
            return "undeclared item classes" if unknown else "see the log's Dropped: lines"
        if len(ranked) == 1:
            return ranked[0][0]
        return ", ".join(f"{key} {count:,}" for key, count in ranked)
