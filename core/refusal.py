"""Does the site refuse this client as a whole, and what should the operator change?

A crawl whose every page was refused has not "finished": it got nothing, and the useful
line says which defense is in the way and which of the platform's own traits it
probably objects to. Pure functions over a job's figures (the ledger's exact
``pages/*``, ``blocks/<kind>``, ``sessions/*`` of ``core.ledger``, or one crawl's Scrapy
stats) and the block reasons seen (``blocks/reason/<rule>``), so the crawl, the flow and
the report say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

KINDS = ("blocked", "challenge", "captcha", "throttled")
# What each kind of refusal asks of the operator, given what the crawl presented.
ADVICE = {
    "blocked": (
        "the site refuses this client as a whole (its identity, address or TLS "
        "fingerprint): {identity}"
    ),
    "challenge": ("every page is a JavaScript challenge: {challenge}"),
    "captcha": (
        "the site answers a CAPTCHA that needs a person: the platform goes too fast or "
        "looks automated to it; lower SESSION_MAX_RATE, use more sessions or proxies"
    ),
    "throttled": (
        "the site throttles every request: lower SESSION_MAX_RATE or "
        "CONCURRENT_REQUESTS_PER_DOMAIN, or raise DOWNLOAD_DELAY"
    ),
}


@dataclass(frozen=True)
class Presented:
    """What the crawl showed the site (its settings), for the advice."""

    fetch_identity: str = "browser"  # FETCH_IDENTITY
    user_agent: str = ""  # what plain requests said
    sessions: bool = False  # SESSIONS_ENABLED
    proxies: int = 0

    def identity_advice(self) -> str:
        if self.fetch_identity != "browser":
            return (
                f"plain requests announce the platform (User-Agent {self.user_agent!r}) over "
                "Scrapy's HTTP/1.1 TLS; set FETCH_IDENTITY=browser to present the "
                "installed Chromium's headers and TLS fingerprint"
            )
        advice = "the browser identity was refused"
        if not self.proxies:
            advice += "; the server's own address may be banned: configure PROXY_LIST"
        if not self.sessions:
            advice += "; SESSIONS_ENABLED=true gives each visitor its own cookies and budget"
        return advice

    def challenge_advice(self, passed: int) -> str:
        if not self.sessions:
            return (
                "set SESSIONS_ENABLED=true so Chromium passes it once per session and plain "
                "requests reuse its cookies"
            )
        if passed:
            return f"{passed} passed in the browser, but its clearance was not accepted after"
        return "Chromium did not get past it (see sessions/challenge_failed and the log)"


def refused_requests(figures: Mapping[str, int]) -> tuple[int, int, str]:
    """(refused, asked, unit): requests by the ledger's ``pages/refused`` and
    ``pages/requests`` when there, else a crawl's responses (classified vs blocks)."""
    if "pages/requests" in figures:
        return int(figures.get("pages/refused", 0)), int(figures["pages/requests"]), "requests"
    classified = int(figures.get("responses/classified", 0))
    classified -= int(figures.get("responses/robots_txt", 0))  # not a page of the site's
    good = classified - int(figures.get("blocks/total", 0))
    return (classified if classified and good <= 0 else 0), classified, "responses"


def refusal(
    figures: Mapping[str, int],
    presented: Presented | None = None,
) -> str | None:
    """One line when every page the crawl asked for was refused (None otherwise): how
    many, by which kinds and rules, and what to change."""
    refused, asked, unit = refused_requests(figures)
    if not asked or refused < asked:
        return None
    presented = presented or Presented()
    kinds = {kind: int(figures.get(f"blocks/{kind}", 0)) for kind in KINDS}
    main = max(kinds, key=lambda kind: kinds[kind]) if any(kinds.values()) else "blocked"
    seen = ", ".join(f"{kind} {n}" for kind, n in kinds.items() if n)
    reasons = top_reasons(figures)
    advice = ADVICE[main].format(
        identity=presented.identity_advice(),
        challenge=presented.challenge_advice(int(figures.get("sessions/challenges_passed", 0))),
    )
    why = f" ({reasons})" if reasons else ""
    return (
        f"every page was refused: {refused} of {asked} {unit} were blocks "
        f"[{seen or 'blocked'}]{why}; {advice}"
    )


def top_reasons(figures: Mapping[str, int], limit: int = 3) -> str:
    """``cloudflare block 8, http 403 2``: the rules that matched most."""
    counts = {
        name.removeprefix("blocks/reason/").replace("_", " "): int(value)
        for name, value in figures.items()
        if name.startswith("blocks/reason/")
    }
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return ", ".join(f"{name} {n}" for name, n in ranked)
