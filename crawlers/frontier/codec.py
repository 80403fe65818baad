"""How a queued request is stored in the frontier: compact, and read back exactly.

An entry is a version byte, the URL (its ``https://`` / ``http://`` folded into a byte),
then only the request's attributes that differ from a fresh ``Request``'s (callback and
errback by name, method, headers that were set, body, meta, priority, cb_kwargs,
dont_filter, flags, encoding, any attribute of a ``Request`` subclass), each value in a
small tagged binary form. Names Scrapy and this project put in ``meta`` are one byte
each (``KNOWN``). A value of a type the form does not cover is pickled on its own; the
entry as a whole is never a pickled dict (docs/frontier.md, "Memory": 469 bytes per
queued URL in Redis before, 143 after, measured by bench.frontier_memory).
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

VERSION = b"\x01"

# Strings stored as one byte (``K`` + index): append only, the index is the format.
KNOWN: tuple[str | bytes, ...] = (
    "callback", "errback", "method", "headers", "body", "cookies", "meta", "encoding",
    "priority", "dont_filter", "flags", "cb_kwargs", "_class",
    "job_id", "depth", "download_slot", "download_timeout", "download_latency",
    "retry_times", "max_retry_times", "redirect_times", "redirect_ttl", "redirect_urls",
    "redirect_reasons", "dont_redirect", "dont_retry", "handle_httpstatus_list",
    "handle_httpstatus_all", "dont_cache", "dont_obey_robotstxt", "dont_merge_cookies",
    "cookiejar", "proxy", "bindaddress", "is_start_request", "referrer_policy",
    "frontier_item_retries", "budget_chain", "render", "render_sample", "render_probe",
    "fetch_dest", "identity", "fetch_session", "session", "ledger_suffix",
    "proxy_exclude", "rotated_proxy", "challenge_passed", "item_type", "page_type",
    "listing", "card", "card_hash", "item_key", "GET", "POST", "utf-8",
    b"Accept", b"Accept-Language", b"Content-Type", b"Referer", b"User-Agent", b"Cookie",
    b"If-None-Match", b"If-Modified-Since", b"application/json",
    "parse", "parse_item", "parse_listing", "parse_detail", "parse_product", "parse_hotel",
)  # fmt: skip
_KNOWN_INDEX: dict[tuple[type, str | bytes], int] = {(type(s), s): i for i, s in enumerate(KNOWN)}

# What a fresh ``Request`` has: attributes equal to these are not stored.
DEFAULTS: dict[str, Any] = {
    "callback": None,
    "errback": None,
    "method": "GET",
    "headers": {},
    "body": b"",
    "cookies": {},
    "meta": {},
    "encoding": "utf-8",
    "priority": 0,
    "dont_filter": False,
    "flags": [],
    "cb_kwargs": {},
}
_SCHEMES = {b"\x02": "https://", b"\x03": "http://"}


class EntryError(ValueError):
    """Bytes that are no frontier entry of this format."""


def encode(request: dict[str, Any]) -> bytes:
    """The entry for ``request`` (``Request.to_dict``'s form)."""
    url: str = request["url"]
    out = bytearray(VERSION)
    for tag, scheme in _SCHEMES.items():
        if url.startswith(scheme):
            out += tag
            url = url[len(scheme) :]
            break
    else:
        out += b"\x01"
    _bytes(out, url.encode())
    rest = {k: v for k, v in request.items() if k != "url" and not (k in DEFAULTS and _same(v, k))}
    _value(out, rest)
    return bytes(out)


def decode(data: bytes) -> dict[str, Any]:
    """``encode``'s ``request`` back, defaults filled in (for ``request_from_dict``)."""
    if data[:1] != VERSION or data[1:2] not in (b"\x01", *_SCHEMES):
        raise EntryError(f"not a frontier entry of format {VERSION!r}: starts {data[:2]!r}")
    reader = _Reader(data, 2)
    url = _SCHEMES.get(data[1:2], "") + reader.raw().decode()
    rest = reader.value()
    if reader.pos != len(data):
        raise EntryError(f"{len(data) - reader.pos} bytes after the entry")
    out = {"url": url, **{k: _fresh(v) for k, v in DEFAULTS.items()}}
    out.update(rest)
    return out


def _same(value: Any, key: str) -> bool:
    default = DEFAULTS[key]
    return type(value) is type(default) and value == default


def _fresh(value: Any) -> Any:
    return type(value)() if isinstance(value, dict | list) else value


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _bytes(out: bytearray, raw: bytes) -> None:
    _varint(out, len(raw))
    out += raw


def _value(out: bytearray, v: Any) -> None:
    """Tagged: N None, T/F bools, i int (zigzag), f float, K known, s str, b bytes,
    l list, t tuple, d dict, P anything else (pickled alone)."""
    kind = type(v)
    if v is None:
        out += b"N"
    elif kind is bool:
        out += b"T" if v else b"F"
    elif kind is int:
        out += b"i"
        _varint(out, v * 2 if v >= 0 else -v * 2 - 1)
    elif kind is float:
        out += b"f" + struct.pack(">d", v)
    elif kind in (str, bytes) and (kind, v) in _KNOWN_INDEX:
        out += b"K" + bytes([_KNOWN_INDEX[(kind, v)]])
    elif kind is str:
        out += b"s"
        _bytes(out, v.encode("utf-8", "surrogatepass"))
    elif kind is bytes:
        out += b"b"
        _bytes(out, v)
    elif kind in (list, tuple):
        out += b"l" if kind is list else b"t"
        _varint(out, len(v))
        for item in v:
            _value(out, item)
    elif kind is dict:
        out += b"d"
        _varint(out, len(v))
        for key, item in v.items():
            _value(out, key)
            _value(out, item)
    else:
        out += b"P"
        _bytes(out, pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL))


class _Reader:
    """Reads by index into the entry (no slice per byte: it runs for every leased request)."""

    __slots__ = ("data", "pos", "size")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos
        self.size = len(data)

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > self.size:
            raise EntryError("entry cut short")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        if self.pos >= self.size:
            raise EntryError("entry cut short")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        n = shift = 0
        while True:
            byte = self.byte()
            n |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return n

    def raw(self) -> bytes:
        return self.take(self.varint())

    def value(self) -> Any:
        tag = self.byte()
        if tag in _SIMPLE:
            return _SIMPLE[tag]
        if tag == _K:
            return KNOWN[self.byte()]
        if tag == _S:
            return self.raw().decode("utf-8", "surrogatepass")
        if tag == _I:
            n = self.varint()
            return n // 2 if not n & 1 else -(n + 1) // 2
        if tag == _D:
            return {self.value(): self.value() for _ in range(self.varint())}
        if tag == _F:
            return struct.unpack(">d", self.take(8))[0]
        if tag == _B:
            return self.raw()
        if tag in (_L, _T):
            items = [self.value() for _ in range(self.varint())]
            return items if tag == _L else tuple(items)
        if tag == _P:
            return pickle.loads(self.raw())  # noqa: S301 - our own entries, as scrapy-redis'
        raise EntryError(f"unknown value tag {bytes([tag])!r} at byte {self.pos - 1}")


# The tags as the reader meets them (ints: indexing bytes gives ints).
_SIMPLE: dict[int, Any] = {ord("N"): None, ord("T"): True, ord("F"): False}
_I, _F, _K, _S, _B, _L, _T, _D, _P = (ord(tag) for tag in "ifKsbltdP")
