"""booking.com's AWS WAF challenge through the whole fetch stack: a real ``scrapy crawl``
of the booking.com replay through two loopback proxies, where the replay answers a hotel
page with the challenge (202) the first time it is asked and with the page afterwards.

The site's ban policy must call it a CAPTCHA (counted in the block rate), the proxy that
got it is banned and the retry leaves through the other one, and the challenge never
reaches the spider: no item from it, nothing dropped by validation.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness.loopback_proxy import LoopbackProxy
from harness.replay_site import SITES_DIR, ReplaySite
from tests.crawlers.fetch.support import STATS_PATH_SETTING
from tests.sites.support import crawl

SITE = "booking_com"
CHALLENGED = "/hotel/mx/casa-azul-tlaxcala.html"


def challenging_replay(tmp_path: Path) -> Path:
    """The committed booking.com replay, with the WAF challenge first on one hotel page."""
    sites = tmp_path / "sites"
    shutil.copytree(SITES_DIR / SITE, sites / SITE)
    manifest_path = sites / SITE / "replay.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    route = manifest["routes"][CHALLENGED]
    manifest["routes"][CHALLENGED] = {
        "file": route,
        "first": {"file": "blocked/aws-waf-challenge.html", "status": 202, "times": 1},
    }
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    return sites


def test_waf_challenge_without_sessions_is_retried_through_the_other_proxy_and_never_an_item(
    services: ExitStack,
    start_proxy: Callable[..., LoopbackProxy],
    tmp_path: Path,
) -> None:
    replay = services.enter_context(
        ReplaySite(SITE, run_dir=tmp_path / "run", sites_dir=challenging_replay(tmp_path))
    )
    proxies = {name: start_proxy(name) for name in ("a", "b")}
    stats_path = tmp_path / "stats.json"
    result = crawl(
        SITE,
        replay,
        tmp_path,
        *("-s", "RETRY_BACKOFF_BASE=0.05"),
        # The plain retry path (booking's profile passes challenges in sessions).
        *("-s", "SESSIONS_ENABLED=false"),
        *("-s", "STATS_CLASS=tests.crawlers.fetch.support.JsonStatsCollector"),
        *("-s", f"{STATS_PATH_SETTING}={stats_path}"),
        env={"PROXY_LIST": ",".join(p.url for p in proxies.values())},
    )
    assert result.returncode == 0, result.log[-3000:]
    stats = json.loads(stats_path.read_text())

    log = replay.access_log()
    assert {entry["client"] for entry in log} <= {"a", "b"}  # everything went through a proxy
    asked = [entry for entry in log if entry["path"].startswith(CHALLENGED)]
    assert [(e["status"], e.get("file")) for e in asked] == [
        (202, "blocked/aws-waf-challenge.html"),
        (200, "fixtures/hotel/casa-azul-tlaxcala.html"),
    ]
    challenged_via, retried_via = asked[0]["client"], asked[1]["client"]
    assert retried_via != challenged_via  # the retry left through the other proxy
    banned = f"127.0.0.1:{proxies[challenged_via].port}"
    assert stats[f"proxies/bans/{banned}"] == 1
    assert stats["bans/status/202"] == 1

    # Classified once as a challenge by the site's rules, counted in the block rate, retried
    # (without sessions there is no browser escalation: a plain retry elsewhere).
    assert stats["blocks/challenge"] == stats["blocks/total"] == 1
    assert stats["blocks/reason/aws_waf_challenge"] == 1
    assert stats["fetch/retry/challenge"] == 1
    assert stats["responses/classified"] == len(log)
    assert stats["blocks/rate"] == round(1 / len(log), 4)
    kinds = "blocked 0, challenge 1, captcha 0, throttled 0"
    assert f"1 blocks ({kinds}), block rate {100 / len(log):.2f}%" in result.log

    # No item from the challenge: the hotel once, from its page; nothing dropped.
    names = [item["name"] for item in result.items]
    assert len(names) == len(set(names)) == 6
    casa_azul = next(item for item in result.items if item["hotel_id"] == "9100001")
    assert (casa_azul["amenities"], casa_azul["incomplete"]) == (
        ["Free WiFi", "Free parking", "Restaurant", "Garden"],
        None,
    )
    assert stats["validation/valid/hotel"] == 6
    assert [k for k in stats if k.startswith(("validation/dropped", "validation/invalid"))] == []
    assert stats["booking_com/hotel_page_failed"] == 1  # the replay's 404, not the WAF
