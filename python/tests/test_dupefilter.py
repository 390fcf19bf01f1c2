"""redis_bf.scrapy.RFPDupeFilter in process, against a real server: key naming, fingerprints,
creation and resumption, errors that must never read as "seen", logging and the stat; the cuckoo
kind, forgetting a request, and RetryForgetMiddleware. (Whole crawls are in test_crawl.py.)"""

from __future__ import annotations

import logging
import re
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from clocks import MS, expiries, timed
from redis.exceptions import ResponseError
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from scrapy_redis.dupefilter import RFPDupeFilter as SetDupeFilter
from scrapy_redis.scheduler import Scheduler

from redis_bf import BloomFilterError, CuckooFilter, FilterMismatchError, KeyTypeError
from redis_bf._core import cuckoo_info
from redis_bf.scrapy import RetryForgetMiddleware, RFPDupeFilter, forget

from conftest import commandstats, info, layout

URL = "http://shop.example/item?b=2&a=1"


def make_spider(server: Any, protocol: int = 2, **settings: Any) -> Spider:
    crawler = get_crawler(
        Spider,
        {"REDIS_URL": server.url, "REDIS_PARAMS": {"protocol": protocol}, **settings},
    )
    return Spider.from_crawler(crawler, name="shop")


def refusal(spider: Spider) -> str:
    """Why the dupefilter of a crawl refused its key: it stops the crawl at its start (one error
    line, no exception out of the scheduler), and schedules nothing meanwhile."""
    dupefilter = RFPDupeFilter.from_spider(spider)
    assert isinstance(dupefilter.refused, KeyTypeError)
    assert dupefilter.request_seen(Request(URL)) is True
    return str(dupefilter.refused)


def reference_size(client: redis.Redis, error_rate: float, capacity: int) -> int:
    client.execute_command("BF.RESERVE", "reference", error_rate, capacity)
    size = int(info(client, "reference")["Size"])
    client.delete("reference")
    return size


def test_defaults_reserve_the_spider_key(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    df = RFPDupeFilter.from_spider(make_spider(server))
    r = server.client()
    assert df.key == "shop:dupefilter"
    assert info(r, "shop:dupefilter") == {
        "Capacity": 100_000,
        "Size": reference_size(r, 1e-6, 100_000),
        "Number of filters": 1,
        "Number of items inserted": 0,
        "Expansion rate": 2,
    }
    size = info(r, "shop:dupefilter")["Size"]
    assert (
        f"Bloom filter dupefilter: created shop:dupefilter (capacity 100000, error rate 1e-06, "
        f"{size} bytes)" in caplog.messages
    )


def test_settings(server: Any) -> None:
    spider = make_spider(
        server,
        BLOOMFILTER_CAPACITY=5000,
        BLOOMFILTER_ERROR_RATE=0.001,
        SCHEDULER_DUPEFILTER_KEY="crawl:%(spider)s:seen",
    )
    df = RFPDupeFilter.from_spider(spider)
    r = server.client()
    assert df.key == "crawl:shop:seen"
    assert r.keys("*") == [b"crawl:shop:seen"]
    assert info(r, "crawl:shop:seen")["Capacity"] == 5000
    assert info(r, "crawl:shop:seen")["Size"] == reference_size(r, 0.001, 5000)


def test_the_layout_setting(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_LAYOUT="blocked"))
    r = server.client()
    assert layout(r, "shop:dupefilter") == b"blocked"
    size = info(r, "shop:dupefilter")["Size"]
    assert (
        f"Bloom filter dupefilter: created shop:dupefilter (capacity 100000, error rate 1e-06, "
        f"layout blocked, {size} bytes)" in caplog.messages
    )
    with pytest.raises(ValueError, match="layout must be 'classic' or 'blocked'"):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_LAYOUT="fast"))
    with pytest.raises(ValueError, match="BLOOMFILTER_LAYOUT goes with a Bloom filter"):
        RFPDupeFilter.from_spider(
            make_spider(server, BLOOMFILTER_KIND="cuckoo", BLOOMFILTER_LAYOUT="blocked")
        )


def test_bad_settings_fail_at_start(server: Any) -> None:
    with pytest.raises(ValueError, match="error_rate must be strictly between 0 and 1"):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_ERROR_RATE=1))
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_CAPACITY=0))
    assert server.client().keys("*") == []


def test_a_window_setting_makes_requests_new_again_after_it(
    server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    df = RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_WINDOW="1"))
    r = server.client()
    assert df.filter.options.window == 1
    assert info(r, "shop:dupefilter")["Window"] == 1
    size = info(r, "shop:dupefilter")["Size"]
    assert (
        "Bloom filter dupefilter: created shop:dupefilter (capacity 100000, error rate 1e-06, "
        f"window 1 s, {size} bytes)" in caplog.messages
    )
    # Each check is judged by the expiry the filter reports (BF.DEBUG) and by when its request went
    # and its reply came back, never by a margin. The check that needs the request held is
    # answered before its part can have expired, or taken again on a fresh filter.
    for _ in range(5):
        (new, parts), sent, answered = timed(
            lambda: (df.request_seen(Request(URL)), expiries(r, "shop:dupefilter"))
        )
        assert new is False
        if parts:
            # Its one part expires a window after the request was recorded, which the server
            # did between the request and its reply.
            (expiry,) = set(parts)
            assert sent + 1.0 - MS <= expiry <= answered + 1.0 + MS, (sent, expiry, answered)
            seen, _, answered = timed(lambda: df.request_seen(Request(URL)))
            if answered + MS < expiry:
                break
        r.delete("shop:dupefilter")  # too slow for the window: forgotten on the way, perhaps
    else:
        pytest.fail("five attempts, each too slow for a window of 1 s")
    assert seen is True
    # Seen in a check answered before its part expires, new in one sent after it, either in
    # between.
    while True:
        seen, sent, answered = timed(lambda: df.request_seen(Request(URL)))
        if answered + MS < expiry:
            assert seen, f"new at {answered}, its part expiring at {expiry}"
        if sent > expiry + MS:
            assert not seen, f"still seen at {sent}, its part expiring at {expiry}"
        if not seen:
            break
        time.sleep(0.05)
    # Forgotten after the window, and just recorded again by the check that found it new: seen by
    # a check answered within a window of that one.
    seen, _, answered = timed(lambda: df.request_seen(Request(URL)))
    assert seen is True or answered + MS >= sent + 1.0


def test_window_settings(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    for value, window in (
        (None, None),
        ("", None),
        (0, None),
        ("0", None),
        ("0.0", None),
        (3600, 3600),
        ("3600", 3600),
        (86400.0, 86400),
        (timedelta(days=7), 604800),
    ):
        df = RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_WINDOW=value))
        assert df.filter.options.window == window
        assert info(server.client(), "shop:dupefilter").get("Window") == window
        server.client().delete("shop:dupefilter")
    for bad, message in (
        ("week", "a number of seconds"),
        (True, "a number of seconds"),
        (1.5, "whole seconds"),
    ):
        with pytest.raises(ValueError, match=f"BLOOMFILTER_WINDOW must be {message}"):
            RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_WINDOW=bad))
    with pytest.raises(ValueError, match="window must be from 1 to 315576000"):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_WINDOW=-1))

    # An existing filter is used as it is, with a warning when its window is not the setting's.
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    server.client().execute_command("BF.RESERVE", "shop:dupefilter", 0.01, 1000)
    RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_WINDOW=60))
    assert (
        "Bloom filter dupefilter: shop:dupefilter exists with no window, not the window of 60 s "
        "of BLOOMFILTER_WINDOW: it is used as it is (delete it to start one with the window)"
        in caplog.messages
    )
    assert "Window" not in info(server.client(), "shop:dupefilter")
    # Without the setting, any existing filter is used as it is, without a word.
    server.client().delete("shop:dupefilter")
    server.client().execute_command("BF.RESERVE", "shop:dupefilter", 0.01, 1000, "WINDOW", 60)
    caplog.clear()
    RFPDupeFilter.from_spider(make_spider(server))
    assert not [m for m in caplog.messages if "BLOOMFILTER_WINDOW" in m]


def test_requests_seen_by_scrapy_redis_fingerprint(server: Any, protocol: int) -> None:
    df = RFPDupeFilter.from_spider(make_spider(server, protocol))
    assert df.server.connection_pool.connection_kwargs["protocol"] == protocol
    assert df.request_seen(Request(URL)) is False
    assert df.request_seen(Request(URL)) is True
    assert df.request_seen(Request("http://shop.example/item?a=1&b=2#reviews")) is True  # canonical
    assert df.request_seen(Request(URL, method="POST")) is False
    assert df.request_seen(Request(URL, method="POST", body=b"q=1")) is False
    assert df.request_seen(Request(URL, method="POST", body=b"q=1")) is True

    # What the filter holds is scrapy-redis's fingerprint, as its set would.
    fingerprint = SetDupeFilter(None, "unused").request_fingerprint(Request(URL))
    assert re.fullmatch(r"[0-9a-f]{40}", fingerprint)
    r = server.client(protocol)
    assert r.execute_command("BF.MEXISTS", "shop:dupefilter", fingerprint, URL) in (
        [1, 0],
        [True, False],
    )
    assert r.execute_command("BF.CARD", "shop:dupefilter") == 3


def test_an_existing_filter_is_left_alone(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    r = server.client()
    r.execute_command("BF.RESERVE", "shop:dupefilter", 0.01, 1000)
    fingerprint = SetDupeFilter(None, "unused").request_fingerprint(Request(URL))
    r.execute_command("BF.ADD", "shop:dupefilter", fingerprint)
    before = info(r, "shop:dupefilter")

    df = RFPDupeFilter.from_spider(make_spider(server))
    assert info(r, "shop:dupefilter") == before
    assert (
        "Bloom filter dupefilter: resuming with shop:dupefilter (1 requests seen, capacity 1000, "
        f"{before['Size']} bytes)" in caplog.messages
    )
    assert df.request_seen(Request(URL)) is True
    assert df.request_seen(Request(URL + "&c=3")) is False
    assert info(r, "shop:dupefilter")["Capacity"] == 1000


def test_a_scrapy_redis_set_is_refused_with_the_migration_command(server: Any) -> None:
    r = server.client()
    r.sadd("shop:dupefilter", "0" * 40)
    assert refusal(make_spider(server)) == (
        "'shop:dupefilter' holds a set, not a Bloom filter: it is a scrapy-redis fingerprint "
        f"set: convert it with `python -m redis_bf.migrate --url {server.url}/0 shop:dupefilter`, "
        "or delete it to start the crawl afresh"
    )
    assert r.smembers("shop:dupefilter") == {b"0" * 40}


def test_a_bit_string_is_refused(server: Any) -> None:
    r = server.client()
    r.setbit("shop:dupefilter", 1 << 20, 1)
    assert "scrapy-redis-bloomfilter keep; it cannot be converted" in refusal(make_spider(server))
    assert r.strlen("shop:dupefilter") == (1 << 17) + 1


def test_errors_are_raised_never_read_as_seen(server: Any, protocol: int) -> None:
    r = server.client(protocol)
    r.execute_command("BF.RESERVE", "shop:dupefilter", 0.01, 1, "NONSCALING")
    df = RFPDupeFilter.from_spider(make_spider(server, protocol))
    assert df.request_seen(Request(URL)) is False  # fills it
    with pytest.raises(BloomFilterError, match="non scaling filter is full"):
        df.request_seen(Request(URL + "&page=2"))
    assert df.request_seen(Request(URL)) is True

    # The key replaced under a running crawl.
    r.delete("shop:dupefilter")
    r.set("shop:dupefilter", "x")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        df.request_seen(Request(URL))


def test_a_deleted_key_is_recreated_with_the_settings(server: Any) -> None:
    # SCHEDULER_FLUSH_ON_START deletes the key after the dupefilter opened; so may another
    # spider's flush. The next request must not get the server's 100-item default filter.
    spider = make_spider(
        server,
        DUPEFILTER_CLASS="redis_bf.scrapy.RFPDupeFilter",
        BLOOMFILTER_CAPACITY=7000,
        SCHEDULER_FLUSH_ON_START=True,
    )
    scheduler = Scheduler.from_crawler(spider.crawler)
    scheduler.open(spider)
    r = server.client()
    assert r.exists("shop:dupefilter") == 0
    assert scheduler.enqueue_request(Request(URL)) is True
    assert scheduler.enqueue_request(Request(URL)) is False
    assert info(r, "shop:dupefilter")["Capacity"] == 7000
    assert info(r, "shop:dupefilter")["Number of items inserted"] == 1
    assert spider.crawler.stats.get_value("dupefilter/filtered") == 1
    scheduler.close("finished")  # SCHEDULER_PERSIST is False: the key goes, as with scrapy-redis
    assert r.exists("shop:dupefilter") == 0


def test_logging_and_the_filtered_stat(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="redis_bf.scrapy")
    spider = make_spider(server)
    df = RFPDupeFilter.from_spider(spider)
    caplog.clear()
    first, second = Request(URL), Request(URL + "&x=1", headers={"Referer": "http://shop.example/"})
    df.log(first, spider)
    df.log(second, spider)
    assert caplog.messages == [
        f"Filtered duplicate request: {first} - no more duplicates will be shown "
        "(see DUPEFILTER_DEBUG to show all duplicates)"
    ]
    assert spider.crawler.stats.get_value("dupefilter/filtered") == 2

    spider = make_spider(server, DUPEFILTER_DEBUG=True)
    df = RFPDupeFilter.from_spider(spider)
    caplog.clear()
    df.log(first, spider)
    df.log(second, spider)
    assert caplog.messages == [
        f"Filtered duplicate request: {first} (referer: None)",
        f"Filtered duplicate request: {second} (referer: http://shop.example/)",
    ]
    assert spider.crawler.stats.get_value("dupefilter/filtered") == 2


def test_scrapy_redis_bloomfilter_settings_are_named(
    server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_BIT=30))
    assert (
        "BLOOMFILTER_BIT is a scrapy-redis-bloomfilter setting: redis_bf ignores it "
        "(set BLOOMFILTER_CAPACITY and BLOOMFILTER_ERROR_RATE)" in caplog.messages
    )


def test_with_scrapys_own_scheduler(server: Any) -> None:
    # Scrapy's scheduler builds the dupefilter from the crawler, opens and closes it.
    spider = make_spider(server, BLOOMFILTER_CAPACITY=3000)
    df = RFPDupeFilter.from_crawler(spider.crawler)
    assert re.fullmatch(r"dupefilter:\d+", df.key)
    r = server.client()
    assert r.exists(df.key) == 0
    df.open()
    assert info(r, df.key)["Capacity"] == 3000
    assert df.request_seen(Request(URL)) is False
    assert df.request_seen(Request(URL)) is True
    df.close("finished")
    assert r.exists(df.key) == 0


def test_a_sharded_filter_on_the_same_server(server: Any) -> None:
    spider = make_spider(server, BLOOMFILTER_SHARDS=4, BLOOMFILTER_CAPACITY=4000)
    df = RFPDupeFilter.from_spider(spider)
    r = server.client()
    assert df.filter.shards == 4
    assert sorted(r.keys("shop:dupefilter*")) == sorted(
        [b"shop:dupefilter", *(key.encode() for key in df.filter.keys)]
    )
    # A quarter of 4,000 plus four deviations: 1000 + 4 * sqrt(1000 * 3/4), rounded up.
    assert {info(r, key)["Capacity"] for key in df.filter.keys} == {1110}
    requests = [Request(f"http://shop.example/item/{i}") for i in range(100)]
    assert [df.request_seen(request) for request in requests] == [False] * 100
    assert [df.request_seen(request) for request in requests] == [True] * 100
    assert df.filter.count() == 100
    # Another shard count for the same key is refused when the spider opens.
    with pytest.raises(FilterMismatchError, match="has shards 4, not 2"):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_SHARDS=2))
    df.clear()  # what a flush does: every shard and the parameters go
    assert r.keys("*") == []


def test_the_cluster_setting_makes_a_cluster_client(server: Any) -> None:
    settings = get_crawler(Spider, {"BLOOMFILTER_CLUSTER_URL": server.url}).settings
    with pytest.raises(redis.exceptions.RedisClusterException, match="Cluster mode"):
        RFPDupeFilter.filter_settings(settings)


def test_the_cuckoo_kind_keeps_fingerprints_it_can_forget(
    server: Any, protocol: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")
    df = RFPDupeFilter.from_spider(make_spider(server, protocol, BLOOMFILTER_KIND="cuckoo"))
    r = server.client(protocol)
    assert isinstance(df.filter, CuckooFilter) and df.can_forget
    assert r.type("shop:dupefilter") == b"MBbloomCF"
    r.execute_command("CF.RESERVE", "reference", 100_000, "ERROR", 1e-6)
    assert r.execute_command("CF.DEBUG", "shop:dupefilter") == r.execute_command(
        "CF.DEBUG", "reference"
    )
    size = cuckoo_info(r.execute_command("CF.INFO", "shop:dupefilter"))["Size"]
    assert (
        f"Cuckoo filter dupefilter: created shop:dupefilter (capacity 100000, error rate 1e-06, "
        f"{size} bytes)" in caplog.messages
    )
    page = Request(URL)
    assert df.request_seen(page) is False
    assert df.request_seen(page) is True
    assert df.request_seen(Request(URL + "#reviews")) is True  # the same fingerprint
    assert df.forget(page) is True
    assert df.forget(page) is False  # not held any more: nothing changes
    assert df.request_seen(page) is False  # new again: scheduled again
    assert df.request_seen(page) is True
    fingerprint = SetDupeFilter(None, "unused").request_fingerprint(page)
    assert r.execute_command("CF.COUNT", "shop:dupefilter", fingerprint) == 1  # one copy
    calls = commandstats(r)
    assert calls["cf.insertnx"] == 5  # one command per request
    assert (calls["cf.del"], calls["cf.reserve"]) == (2, 2)  # the reference's and the filter's

    caplog.clear()
    RFPDupeFilter.from_spider(make_spider(server, protocol, BLOOMFILTER_KIND="cuckoo"))
    size = cuckoo_info(r.execute_command("CF.INFO", "shop:dupefilter"))["Size"]
    assert caplog.messages == [
        f"Cuckoo filter dupefilter: resuming with shop:dupefilter (1 requests seen, {size} bytes)"
    ]
    df.clear()
    assert r.exists("shop:dupefilter") == 0


def test_the_kind_setting(server: Any) -> None:
    for value, kind in ((None, "bloom"), ("", "bloom"), ("Bloom", "bloom"), (" CUCKOO ", "cuckoo")):
        df = RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_KIND=value))
        assert df.kind == kind
        df.clear()
    with pytest.raises(ValueError, match='BLOOMFILTER_KIND must be "bloom" or "cuckoo", not'):
        RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_KIND="quotient"))
    with pytest.raises(ValueError, match="BLOOMFILTER_WINDOW goes with a Bloom filter"):
        RFPDupeFilter.from_spider(
            make_spider(server, BLOOMFILTER_KIND="cuckoo", BLOOMFILTER_WINDOW=60)
        )
    assert server.client().keys("*") == []
    # A filter of the other kind at the key stops the spider, saying how to resume with it.
    bloom = RFPDupeFilter.from_spider(make_spider(server))
    assert not bloom.can_forget
    with pytest.raises(NotImplementedError, match="a Bloom filter, which cannot forget"):
        bloom.forget(Request(URL))
    assert refusal(make_spider(server, BLOOMFILTER_KIND="cuckoo")) == (
        "'shop:dupefilter' holds a Bloom filter, not a cuckoo filter: set BLOOMFILTER_KIND = "
        '"bloom" to resume with it (a filter cannot be turned into the other kind: neither can '
        "list what it holds), or use another SCHEDULER_DUPEFILTER_KEY, or delete it to start the "
        "crawl afresh"
    )
    bloom.clear()
    RFPDupeFilter.from_spider(make_spider(server, BLOOMFILTER_KIND="cuckoo"))
    assert "holds a cuckoo filter, not a Bloom filter: set " in refusal(make_spider(server))
    server.client().delete("shop:dupefilter")
    server.client().sadd("shop:dupefilter", "0" * 40)
    spider = make_spider(server, BLOOMFILTER_KIND="cuckoo")
    assert "--kind cuckoo shop:dupefilter`" in refusal(spider)


def running(spider: Spider, df: Any, slot: bool = False) -> Crawler:
    """The spider's crawler with an engine whose scheduler holds ``df`` (Scrapy 2.19's
    ``engine.scheduler``, or an older Scrapy's ``engine.slot.scheduler``)."""
    scheduler = SimpleNamespace(df=df)
    crawler = spider.crawler
    crawler.engine = (  # type: ignore[assignment]
        SimpleNamespace(scheduler=None, slot=SimpleNamespace(scheduler=scheduler))
        if slot
        else SimpleNamespace(scheduler=scheduler)
    )
    return crawler


def test_forget_finds_the_running_crawls_dupefilter(server: Any) -> None:
    spider = make_spider(server, BLOOMFILTER_KIND="cuckoo")
    with pytest.raises(RuntimeError, match="no scheduler with a dupefilter yet"):
        forget(spider, Request(URL))
    df = RFPDupeFilter.from_spider(spider)
    for slot in (False, True):
        running(spider, df, slot)
        assert df.request_seen(Request(URL)) is False
        assert forget(spider, Request(URL)) is True
        assert forget(spider.crawler, Request(URL)) is False
    assert spider.crawler.stats.get_value("dupefilter/forgotten") == 2
    running(spider, SetDupeFilter(server.client(), "set"))
    with pytest.raises(TypeError, match="scrapy_redis.dupefilter.RFPDupeFilter, which cannot"):
        forget(spider, Request(URL))


def test_the_retry_forget_middleware(server: Any) -> None:
    for settings, reason in (
        ({"DUPEFILTER_CLASS": RFPDupeFilter},
         "the dupefilter keeps a Bloom filter, which cannot forget requests"),
        ({"BLOOMFILTER_KIND": "cuckoo", "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter"},
         "the dupefilter is scrapy.dupefilters.RFPDupeFilter, not redis_bf.scrapy.RFPDupeFilter"),
    ):  # fmt: skip
        spider = make_spider(server, **settings)
        with pytest.raises(NotConfigured, match=reason):
            RetryForgetMiddleware.from_crawler(spider.crawler)

    spider = make_spider(
        server,
        BLOOMFILTER_KIND="cuckoo",
        DUPEFILTER_CLASS="redis_bf.scrapy.RFPDupeFilter",
        FORGET_RETRY_TIMES=2,
    )
    df = RFPDupeFilter.from_spider(spider)
    middleware = RetryForgetMiddleware.from_crawler(running(spider, df))
    request = Request(URL, priority=5)
    assert df.request_seen(request) is False
    ok = Response(URL, status=200, request=request)
    assert middleware.process_response(request, ok) is ok
    assert df.request_seen(request) is True  # a success is not forgotten
    tries = []
    failed = request
    for _ in range(3):  # two tries, then the failure goes on
        out = middleware.process_response(failed, Response(URL, status=503, request=failed))
        assert df.request_seen(request) is False  # forgotten: new again (and recorded again)
        tries.append(out)
        if isinstance(out, Request):
            failed = out
    first, second, last = tries
    assert isinstance(first, Request) and isinstance(second, Request)
    assert (first.dont_filter, first.meta["forget_retry_times"], first.priority) == (False, 1, 4)
    assert (second.meta["forget_retry_times"], second.priority) == (2, 3)
    assert isinstance(last, Response) and last.status == 503
    assert middleware.process_response(request, Response(URL, status=404)).status == 404
    out = middleware.process_exception(request, TimeoutError())
    assert isinstance(out, Request) and out.meta["forget_retry_times"] == 1
    assert middleware.process_exception(request, IgnoreRequest()) is None
    stats = spider.crawler.stats
    assert stats.get_value("forget_retry/count") == 3
    assert stats.get_value("forget_retry/max_reached") == 1
    assert stats.get_value("dupefilter/forgotten") == 4
