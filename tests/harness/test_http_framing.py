"""The hop-by-hop rules every relaying server of the harness applies (``hop_by_hop``)."""

from __future__ import annotations

from harness.http_framing import HOP_BY_HOP, hop_by_hop


def test_rfc_9110s_hop_by_hop_headers_are_dropped_whatever_the_message() -> None:
    assert hop_by_hop([]) == HOP_BY_HOP
    assert {"connection", "keep-alive", "transfer-encoding", "te", "upgrade"} <= HOP_BY_HOP
    assert "content-type" not in hop_by_hop([("Content-Type", "text/html")])


def test_the_names_every_connection_header_lists_are_dropped_too() -> None:
    headers = [
        ("Host", "example.test"),
        ("Connection", "keep-alive, X-Session-Hint"),
        ("connection", " x-trace ,"),  # a second one, lowercase, an empty token
        ("X-Session-Hint", "a"),
    ]
    assert hop_by_hop(headers) == HOP_BY_HOP | {"x-session-hint", "x-trace"}


def test_a_relay_copying_chunked_bodies_verbatim_keeps_their_transfer_encoding() -> None:
    dropped = hop_by_hop([("Connection", "close")], keep_framing=True)
    assert "transfer-encoding" not in dropped
    assert dropped == (HOP_BY_HOP - {"transfer-encoding"}) | {"close"}
