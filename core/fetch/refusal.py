"""Does the site refuse this client as a whole, and what should the operator change?

A crawl whose every page was refused has not "finished": it got nothing, and the useful
line says which defense is in the way and which of the platform's own traits it
probably objects to. Pure functions over a job's figures (the ledger's exact
``pages/*``, ``blocks/<kind>``, ``sessions/*`` of ``core.figures.ledger``, or one crawl's Scrapy
stats) and the block reasons seen (``blocks/reason/<rule>``), so the crawl, the flow and
the report say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

KINDS = ("blocked", "challenge", "captcha", "throttled")
# What each kind of refusal asks of the operator, given what the crawl presented. Every
# page refused means no request ever got through: a rate limit lets the first ones pass,
# so the client itself is the cause (its identity first), not its pace.
ADVICE = {
    "blocked": (
        "the site refuses this client as a whole (its identity, address or TLS "
        "fingerprint): {identity}"
    ),
    "challenge": "every page is a JavaScript challenge: {challenge}",
    "captcha": (
        "the site answers a CAPTCHA that needs a person from the first request on: it "
        "distrusts this client, not its pace: {identity}"
    ),
    "throttled": ("the site throttles every request, the first ones included: {throttled}"),
}
# The User-Agent words that announce a program (what bot defenses refuse on sight).
_ANNOUNCING = ("bot", "crawl", "spider", "scrapy", "python", "curl", "wget", "headless",
               "playwright", "puppeteer", "selenium", "scraping", "platform")  # fmt: skip
# What the browser ended on when it did not get past a challenge
# (crawlers.fetch.escalation's sessions/challenge_failed/<kind>).
_ENDED_ON = {
    "challenge": "still a challenge when SESSION_CHALLENGE_TIMEOUT ran out",
    "captcha": "a CAPTCHA",
    "blocked": "a block",
    "throttled": "a 429",
    "error": "a browser error or timeout",
}


@dataclass(frozen=True)
class Presented:
    """What the crawl showed the site (its settings), for the advice."""

    fetch_identity: str = "browser"  # FETCH_IDENTITY
    user_agent: str = ""  # what plain requests said
    sessions: bool = False  # SESSIONS_ENABLED
    proxies: int = 0
    pass_challenges: bool = True  # SESSION_PASS_CHALLENGES

    @property
    def announces_itself(self) -> bool:
        """Plain requests named a program in their User-Agent (the crawler identity's own;
        the browser identity sends the installed Chromium's)."""
        agent = self.user_agent.lower()
        return self.fetch_identity != "browser" and any(word in agent for word in _ANNOUNCING)

    def identity_advice(self) -> str:
        if self.fetch_identity != "browser":
            said = "announce a program" if self.announces_itself else "present Scrapy"
            return (
                f"plain requests {said} (User-Agent {self.user_agent!r}) over Scrapy's "
                "HTTP/1.1 TLS; set FETCH_IDENTITY=browser to present the installed "
                "Chromium's headers and TLS fingerprint"
            )
        advice = "the browser identity was refused"
        if not self.proxies:
            advice += "; the server's own address may be banned: configure PROXY_LIST"
        if not self.sessions:
            advice += "; SESSIONS_ENABLED=true gives each visitor its own cookies and budget"
        return advice

    def throttle_advice(self) -> str:
        if self.fetch_identity != "browser":
            return self.identity_advice()
        return (
            "lower SESSION_MAX_RATE or CONCURRENT_REQUESTS_PER_DOMAIN, raise DOWNLOAD_DELAY, "
            "or spread the crawl over more proxies"
        )

    def challenge_advice(self, figures: Mapping[str, int]) -> str:
        """What the browser really did with the challenges, from the counters the
        session layer keeps (each one named is in the figures)."""
        if not self.sessions:
            return (
                "set SESSIONS_ENABLED=true so Chromium passes it once per session and plain "
                "requests reuse its cookies"
            )
        passed = int(figures.get("sessions/challenges_passed", 0))
        failed = int(figures.get("sessions/challenge_failed", 0))
        if passed:
            return (
                f"Chromium passed it {passed} time(s) (sessions/challenges_passed), but the "
                "pages asked with its clearance were challenged again: the site binds it to "
                "something those requests do not share (User-Agent, address, TLS)"
            )
        if failed:
            ended = [
                f"{n} ended on {_ENDED_ON.get(kind, kind)} (sessions/challenge_failed/{kind})"
                for kind in _ENDED_ON
                if (n := int(figures.get(f"sessions/challenge_failed/{kind}", 0)))
            ]
            return (
                f"Chromium tried it {failed} time(s) and never got past it "
                f"(sessions/challenge_failed): {', '.join(ended) or 'no outcome recorded'}"
            )
        if not self.pass_challenges:
            return (
                "SESSION_PASS_CHALLENGES is off, so each challenged session is retired "
                "without a browser trying: set it on to pass the challenge in Chromium"
            )
        return (
            "Chromium did not get past it: no challenge was passed and no browser attempt "
            "came back (see the log's warnings)"
        )


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
        challenge=presented.challenge_advice(figures),
        throttled=presented.throttle_advice(),
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
