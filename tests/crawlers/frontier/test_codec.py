"""Queued requests are stored compactly and read back exactly: property-style over
thousands of varied requests (seeded), through the queue's own encode/decode."""

from __future__ import annotations

import datetime
import pickle
import random
from typing import Any

import pytest
import redis
from scrapy import Request, Spider
from scrapy.http import FormRequest, JsonRequest

from crawlers.frontier import codec
from crawlers.frontier.queue import LeasedQueue


class HotelSpider(Spider):
    name = "hotels"

    def parse_hotel(self, response: Any) -> None: ...

    def parse_listing(self, response: Any) -> None: ...

    def on_error(self, failure: Any) -> None: ...


@pytest.fixture
def queue() -> LeasedQueue:
    # No command is sent: encoding and decoding never touch Redis.
    return LeasedQueue(redis.Redis(port=1), HotelSpider(), worker_id="w", batch=1)


def scalar(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            False,
            rng.randint(-(2**70), 2**70),
            rng.randint(-3, 300),
            rng.uniform(-1e9, 1e9),
            float("inf"),
            "".join(rng.choice("aé€😀-_ /\x00") for _ in range(rng.randint(0, 12))),
            rng.randbytes(rng.randint(0, 20)),
            "job_id",  # a known string
            b"Accept",
        ]
    )


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth > 2 or kind < 0.55:
        return scalar(rng)
    if kind < 0.7:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind < 0.8:
        return tuple(value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    if kind < 0.95:
        keys = [rng.choice(["depth", "x", 3, b"k", ("t", 1), None]) for _ in range(3)]
        return {k: value(rng, depth + 1) for k in keys}
    return rng.choice([{1, 2, 3}, frozenset({"a"}), datetime.date(2026, 12, 7)])  # pickled


def random_request(rng: random.Random, spider: HotelSpider) -> Request:
    scheme = rng.choice(["https://", "http://", "ftp://", "HTTPS://"])
    path = "".join(rng.choice("abcdefgh-/é%20?=&") for _ in range(rng.randint(0, 60)))
    kwargs: dict[str, Any] = {"url": f"{scheme}www.hotel{rng.randint(0, 9)}.example/{path}"}
    if rng.random() < 0.7:
        kwargs["callback"] = rng.choice([spider.parse_hotel, spider.parse_listing])
    if rng.random() < 0.3:
        kwargs["errback"] = spider.on_error
    if rng.random() < 0.3:
        kwargs["method"] = rng.choice(["POST", "PUT", "HEAD"])
    if rng.random() < 0.4:
        names = rng.sample(["Accept", "Referer", "X-Custom", "Cookie", "Accept-Language"], 2)
        kwargs["headers"] = {n: rng.choice(["text/html", "é", "a, b"]) for n in names}
    if rng.random() < 0.3:
        kwargs["body"] = rng.randbytes(rng.randint(1, 40))
    if rng.random() < 0.8:
        kwargs["meta"] = {
            rng.choice(["job_id", "depth", "render", "custom", "download_slot"]): value(rng)
            for _ in range(rng.randint(1, 4))
        }
    if rng.random() < 0.5:
        kwargs["priority"] = rng.randint(-50, 50)
    if rng.random() < 0.3:
        kwargs["cb_kwargs"] = {"page": rng.randint(0, 9), "ref": value(rng)}
    if rng.random() < 0.3:
        kwargs["dont_filter"] = True
    if rng.random() < 0.3:
        kwargs["flags"] = rng.sample(["cached", "retry", "é"], rng.randint(1, 2))
    if rng.random() < 0.2:
        kwargs["cookies"] = rng.choice([{"sid": "1"}, [{"name": "a", "value": "b"}]])
    if rng.random() < 0.1:
        kwargs["encoding"] = "latin-1"
    cls = rng.choice([Request] * 8 + [FormRequest, JsonRequest])
    if cls is FormRequest and rng.random() < 0.5:
        kwargs.pop("body", None)
        kwargs["formdata"] = {"q": "berlin"}
    if cls is JsonRequest:
        kwargs.pop("body", None)
        kwargs["data"] = {"q": "berlin", "page": rng.randint(0, 9), "x": [None, 1.5]}
    return cls(**kwargs)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (a tuple is no list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


def test_every_request_reads_back_exactly(queue: LeasedQueue) -> None:
    rng = random.Random(45)
    spider = queue.spider
    for _ in range(3000):
        request = random_request(rng, spider)
        data, lease = queue.encode(request)
        assert lease is None and data[:1] == codec.VERSION
        back = queue.decode(data)
        assert type(back) is type(request)
        assert same(back.to_dict(spider=spider), request.to_dict(spider=spider)), request
        assert back.callback == request.callback and back.errback == request.errback
        for attr in ("url", "method", "body", "priority", "dont_filter", "flags", "encoding"):
            assert getattr(back, attr) == getattr(request, attr), attr
        assert same(back.meta, request.meta) and same(back.cb_kwargs, request.cb_kwargs)
        assert back.headers.to_unicode_dict() == request.headers.to_unicode_dict()


def test_defaults_are_not_stored_and_a_hotel_page_is_small(queue: LeasedQueue) -> None:
    spider = queue.spider
    plain = Request("https://www.example.com/")
    assert queue.encode(plain)[0] == b"\x01\x02\x10www.example.com/d\x00"
    hotel = Request(
        "https://www.hotels-example.com/hotel/es/gran-hotel-la-florida-barcelona.es.html"
        "?checkin=2026-12-07&checkout=2026-12-08",
        callback=spider.parse_hotel,
        meta={"job_id": "hotels-20261207T072100Z-3f9a1c", "depth": 2},
        priority=1,
    )
    data, _ = queue.encode(hotel)
    assert len(data) <= len(hotel.url) + 60, data
    assert len(data) < len(pickle.dumps(hotel.to_dict(spider=spider))) / 2


def test_bytes_of_another_format_are_refused_with_what_they_start_with() -> None:
    old = pickle.dumps({"url": "https://x/"})
    with pytest.raises(codec.EntryError, match="not a frontier entry of format"):
        codec.decode(old)
    good = codec.encode({"url": "https://x/", "meta": {"a": 1}})
    with pytest.raises(codec.EntryError, match="cut short"):
        codec.decode(good[:-1])
    with pytest.raises(codec.EntryError, match="bytes after the entry"):
        codec.decode(good + b"N")
