"""The one registry of Redis key names (``SiteKeys``, ``PlatformKeys``) and the Redis errors
we ride out."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS as SLOTS
from redis.crc import key_slot

# Errors that mean "Redis is unreachable or not ready right now": retried or buffered by
# callers, never treated as a verdict about the data.
REDIS_ERRORS = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.BusyLoadingError,
    # On a Redis Cluster also a master down (CLUSTERDOWN until it is back) and a slot being
    # migrated (TRYAGAIN).
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
)


@dataclass(frozen=True)
class SiteKeys:
    """Every Redis key of one site, named ``{<site>}:<what>``: the one key registry.

    Frontier, worker registry, job stats, drain, dedup state and the store's spill all
    take their key names from here; no other module spells a key.
    """

    site: str

    @property
    def tag(self) -> str:
        """``{site}``: a Redis Cluster hash tag, so every key of a site is in one slot and
        each Lua script (which may touch only one slot) works on a cluster as on one Redis."""
        return "{" + self.site + "}"

    # -- the frontier (core.frontier.queue): split into partitions, each in its own slot ------
    @property
    def frontier_partitions(self) -> str:
        """String: how many partitions the site's frontier has (absent: 1), recorded by
        the producer or the first worker (``core.frontier.queue.RedisFrontier.adopt``)."""
        return f"{self.tag}:frontier_partitions"

    @property
    def previous_frontier(self) -> tuple[str, str]:
        """The queue and lease table of the frontier's previous format (pickled requests
        in one sorted set): refused, never read (docs/frontier.md, "Upgrading")."""
        return f"{self.tag}:requests", f"{self.tag}:leases"

    def partition(self, index: int, count: int) -> FrontierKeys:
        """Partition ``index`` of ``count``: the site's own ``{site}`` slot when the
        frontier has one partition, else a tag of its own whose slot is in the
        ``index``-th of ``count`` equal ranges of the 16,384 slots (a cluster's masters
        hold contiguous ranges, so ``count`` a multiple of the masters spreads evenly)."""
        if not 0 <= index < count:
            raise ValueError(f"partition {index} of {count}")
        return FrontierKeys(self.tag if count == 1 else _spread_tag(self.site, index, count))

    @property
    def worker_prefix(self) -> str:
        """Prefix of each worker's heartbeat key (``<prefix><worker id>``)."""
        return f"{self.tag}:worker:"

    @property
    def workers(self) -> str:
        return f"{self.tag}:workers"

    @property
    def worker_deadlines(self) -> str:
        """Sorted set: worker id -> deadline (epoch ms on Redis' clock) after which the
        worker is dead and its leases (in every partition) go back to the queue."""
        return f"{self.tag}:worker_deadlines"

    def stats(self, job_id: str) -> str:
        return f"{self.tag}:job:{job_id}:stats"

    @property
    def current_job(self) -> str:
        return f"{self.tag}:current_job"

    @property
    def jobs(self) -> str:
        return f"{self.tag}:jobs"

    def drain_probe(self, job_id: str) -> str:
        """Hash: digest of the job's counters/queues and since when it has been stable."""
        return f"{self.tag}:job:{job_id}:drain_probe"

    # -- item pipelines (core.dedup.detector, core.store) -------------------------------------
    @property
    def item_hashes(self) -> str:
        """Hash: item key -> content hash of its last stored version."""
        return f"{self.tag}:item_hashes"

    @property
    def item_first_seen(self) -> str:
        """Hash: item key -> epoch ms it was first seen."""
        return f"{self.tag}:item_first_seen"

    @property
    def item_last_changed(self) -> str:
        """Hash: item key -> epoch ms its content last changed."""
        return f"{self.tag}:item_last_changed"

    def job_verdicts(self, job_id: str) -> str:
        """Hash: item key -> new | changed | unchanged, for one job."""
        return f"{self.tag}:job:{job_id}:verdicts"

    def job_new(self, job_id: str) -> str:
        """Set: keys of the job's new items (for the LLM step and alerts)."""
        return f"{self.tag}:job:{job_id}:new"

    def job_changed(self, job_id: str) -> str:
        """Set: keys of the job's changed items."""
        return f"{self.tag}:job:{job_id}:changed"

    # -- the job's ledger (core.figures.ledger): idempotent records the report's figures count ---
    def job_stored(self, job_id: str) -> str:
        """Set: keys of the job's items Elasticsearch has accepted (or holds newer)."""
        return f"{self.tag}:job:{job_id}:stored"

    def job_invalid(self, job_id: str) -> str:
        """Hash: reference of each item validation dropped (its key, else URL) -> reason."""
        return f"{self.tag}:job:{job_id}:invalid"

    def job_incomplete(self, job_id: str) -> str:
        """Hash: item key -> the parts it was stored without (comma-separated)."""
        return f"{self.tag}:job:{job_id}:incomplete"

    def job_responses(self, job_id: str) -> str:
        """Hash: ``<request fingerprint>:<attempt>`` -> the response's verdict kind (``ok``,
        ``error``, ``blocked``, ``challenge``, ...), ``:r`` appended when a browser rendered
        it: every response the job's fetch layer classified."""
        return f"{self.tag}:job:{job_id}:responses"

    def job_sessions(self, job_id: str) -> str:
        """Hash: what became of fetch sessions in the job: ``created:<id>``,
        ``passed:<id>:<generation>`` (a challenge passed in the browser), ``retired:<id>``
        -> its reason."""
        return f"{self.tag}:job:{job_id}:sessions"

    def job_dropped(self, job_id: str) -> str:
        """Hash: request fingerprint -> the named reason a leased request of the job was
        dropped (robots, offsite_redirect, redirect_loop, ...: crawlers.frontier.fates)."""
        return f"{self.tag}:job:{job_id}:dropped"

    def job_budget(self, job_id: str) -> str:
        """Hash: ``reason`` (``pages`` or ``time``) and ``limit`` once the job's budget
        ended it (core.frontier.budget); absent while it runs."""
        return f"{self.tag}:job:{job_id}:budget"

    def job_budget_pages(self, job_id: str) -> str:
        """Counter: pages the job's workers got, against its page budget (core.frontier.budget)."""
        return f"{self.tag}:job:{job_id}:budget_pages"

    @property
    def store_spill(self) -> str:
        """List: store actions not yet accepted by Elasticsearch (JSON)."""
        return f"{self.tag}:store:spill"

    @property
    def store_spill_lock(self) -> str:
        return f"{self.tag}:store:spill_lock"

    @property
    def store_dead_letters(self) -> str:
        """List: store actions Elasticsearch rejected for good, with the error (JSON)."""
        return f"{self.tag}:store:dead_letters"

    # -- fetch sessions (core.sessions.store): shared by every worker of the site -------------
    @property
    def sessions(self) -> str:
        """Sorted set: session id -> epoch ms (Redis' clock) it may next be used."""
        return f"{self.tag}:sessions"

    @property
    def session_proxies(self) -> str:
        """Hash: proxy (host:port, "" = direct) -> sessions in the pool using it."""
        return f"{self.tag}:sessions:proxies"

    @property
    def session_prefix(self) -> str:
        """Prefix of each session's hash (``<prefix><id>``; its cookie jar ``...:cookies``)."""
        return f"{self.tag}:session:"

    @property
    def session_defense(self) -> str:
        """String: the first block the site answered a request without a session with
        (its kind and rule); while absent, ``SESSIONS_ENGAGE = "defense"`` sends requests
        without sessions. Expires (core.sessions.store.DEFENSE_TTL)."""
        return f"{self.tag}:sessions:defense"

    @property
    def render_choice(self) -> str:
        """Hash: ``<callback>:mode|agree|disagree|probes`` -> whether a page type needs a
        browser (core.fetch.render_choice, under RENDER_MODE=auto)."""
        return f"{self.tag}:render_choice"

    @property
    def render_probes(self) -> str:
        """Hash: request fingerprint -> JSON summary of what the callback made of the page
        fetched one way, waiting for the other way's (crawlers.fetch.adaptive)."""
        return f"{self.tag}:render_probes"

    # -- re-crawls, conditional requests (crawlers.fetch.conditional) -----------------
    @property
    def page_validators(self) -> str:
        """Hash: item page URL -> compact JSON ``{etag, last_modified, key, item_type}``
        of its last complete, durable 200 (sent back as If-None-Match / If-Modified-Since)."""
        return f"{self.tag}:page_validators"

    # -- re-crawls: listing cards (core.recrawl.cards, issue 19 part "cards") ------------------
    @property
    def card_state(self) -> str:
        """Hash: item key -> ``<card hash>:<epoch ms>:<run>:L<layout>`` of its last full
        fetch (``<layout>``: the accepted baseline it was recorded under, core.recrawl.layouts)."""
        return f"{self.tag}:cards"

    def job_layout(self, job_id: str) -> str:
        """String: the id of the site's accepted fingerprint baseline when the job started
        (core.recrawl.layouts; set by the producer): the layout its re-crawl records belong to."""
        return f"{self.tag}:job:{job_id}:layout"

    def job_skipped(self, job_id: str, callback: str) -> str:
        """Hash: item key -> the page (JSON: url, errback) of each listing card the job
        skipped for ``callback``, fetched after all if the job stops skipping it
        (``:taken`` appended: the ones a worker took to fetch)."""
        return f"{self.tag}:job:{job_id}:skipped:{callback}"

    def job_unparsed(self, job_id: str) -> str:
        """Set: spider callbacks of item pages the job fetched and could not parse: it
        skips none of their pages for the rest of the job (crawlers.recrawl.unparsed)."""
        return f"{self.tag}:job:{job_id}:unparsed"

    @property
    def job_seq(self) -> str:
        """Counter: the site's last run sequence number (one per job)."""
        return f"{self.tag}:job_seq"

    @property
    def job_seq_of(self) -> str:
        """Hash: job id -> its run sequence number, assigned once per job."""
        return f"{self.tag}:job_seq_of"

    # -- change history (issue 19, part 4: core.recrawl.history) -------------------------------
    @property
    def history_values(self) -> str:
        """Hash: item key -> compact JSON of its last stored history fields."""
        return f"{self.tag}:history:values"

    def job_history_old(self, job_id: str) -> str:
        """Hash: item key -> its history fields before the job (JSON; '' when none were
        known), kept from the job's first delivery so a re-delivery diffs the same."""
        return f"{self.tag}:job:{job_id}:history_old"

    # -- removed items (issue 19, item 3: core.recrawl.removals) --------------------------------
    @property
    def removal_misses(self) -> str:
        """Hash: item key -> ``<consecutive complete jobs without it>:<last job counted>``."""
        return f"{self.tag}:removal:misses"

    @property
    def removed(self) -> str:
        """Hash: item key -> epoch ms (Redis' clock) it was marked removed."""
        return f"{self.tag}:removal:removed"

    @property
    def removal_pending(self) -> str:
        """Hash: item key -> removed | restored, not yet applied to Elasticsearch."""
        return f"{self.tag}:removal:pending"

    @property
    def removal_jobs(self) -> str:
        """Hash: job id -> its mark-removed result (JSON): the jobs already applied."""
        return f"{self.tag}:removal:jobs"

    @property
    def removal_last(self) -> str:
        """Hash: ``job`` and ``started_ms`` of the last job whose misses were applied."""
        return f"{self.tag}:removal:last"

    def job_removed(self, job_id: str) -> str:
        """Set: keys the job marked removed."""
        return f"{self.tag}:job:{job_id}:removed"

    def job_restored(self, job_id: str) -> str:
        """Set: removed keys the job saw again (restored; the LLM step chunks them)."""
        return f"{self.tag}:job:{job_id}:restored"


@dataclass(frozen=True)
class FrontierKeys:
    """The keys of one partition of a site's frontier, all in the slot of ``tag``: each
    frontier script touches the keys of one partition only."""

    tag: str

    @property
    def start_urls(self) -> str:
        """List: the producer's start entries (JSON)."""
        return f"{self.tag}:start_urls"

    @property
    def priorities(self) -> str:
        """Sorted set: each priority with queued entries (member) -> minus it (score)."""
        return f"{self.tag}:priorities"

    @property
    def queue_prefix(self) -> str:
        """Prefix of each priority's list of encoded requests (``<prefix><priority>``)."""
        return f"{self.tag}:queue:"

    def queue(self, priority: int) -> str:
        return f"{self.queue_prefix}{priority}"

    @property
    def leases(self) -> str:
        """Hash: lease id -> the leased entry."""
        return f"{self.tag}:leased"

    @property
    def lease_priorities(self) -> str:
        """Hash: lease id -> its entry's priority (the start marker for start entries)."""
        return f"{self.tag}:leased_priority"

    @property
    def lease_owners(self) -> str:
        """Hash: lease id -> the worker holding it."""
        return f"{self.tag}:leased_owner"

    @property
    def lease_seq(self) -> str:
        return f"{self.tag}:lease_seq"

    @property
    def worker_leases_prefix(self) -> str:
        """Prefix of each worker's set of lease ids in this partition."""
        return f"{self.tag}:leased_by:"

    def worker_leases(self, worker_id: str) -> str:
        return self.worker_leases_prefix + worker_id

    def seen(self, job_id: str, bucket: str) -> str:
        """Hash: the job's seen request fingerprints whose first bytes are ``bucket``
        (hex): the rest of each raw digest -> '' (small hashes stay compact listpacks)."""
        return f"{self.tag}:job:{job_id}:seen:{bucket}"


@lru_cache(maxsize=1024)
def _spread_tag(site: str, index: int, count: int) -> str:
    """``{<site>/<index>.<n>}``: the first ``n`` whose slot is in the ``index``-th range."""
    low, high = index * SLOTS // count, (index + 1) * SLOTS // count
    n = 0
    while not low <= key_slot(f"{site}/{index}.{n}".encode()) < high:
        n += 1
    return "{" + f"{site}/{index}.{n}" + "}"


class PlatformKeys:
    """Keys of the platform as a whole, not of one site: ``platform:<what>``.

    None of them ends like a ``SiteKeys`` name, so even a site named ``platform`` cannot
    collide with them.
    """

    # List: alert deliveries that failed (JSON: time, template, error class, site, job),
    # reported and then cleared by the daily health check.
    alerts_failed = "platform:alerts:failed"
