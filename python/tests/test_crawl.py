"""Real Scrapy crawls of a generated site (harness/website.py, a few hundred pages, 24 links a
page) through scrapy-redis's scheduler with redis_bf.scrapy.RFPDupeFilter and no BLOOMFILTER_*
settings: every page fetched exactly once, the stats, one command per request, a stopped crawl
resumed, in RESP3 (redis-py 8's default) and RESP2. With BLOOMFILTER_KIND = "cuckoo": the same,
and pages that fail once are forgotten and fetched again (RetryForgetMiddleware, or a spider's
errback calling redis_bf.scrapy.forget), where a Bloom filter loses them."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from clocks import MS, expiries

from conftest import PAGES, commandstats, info, run_crawl
from website import Site

# Commands a dupefilter may use; ours must only send BF.INSERT (one per request).
DEDUP_COMMANDS = {
    "sadd",
    "sismember",
    "getbit",
    "setbit",
    "bf.add",
    "bf.madd",
    "bf.exists",
    "bf.mexists",
}


def every_page_once(site) -> Counter[str]:  # type: ignore[no-untyped-def]
    return Counter({path: 1 for path in site.paths})


def test_a_crawl_with_no_settings_fetches_every_page_once(site, server) -> None:  # type: ignore[no-untyped-def]
    crawl = run_crawl(site, server, SCHEDULER_PERSIST=True)
    checks = site.requests_per_crawl  # the start request and every link
    assert site.fetched() == every_page_once(site)
    assert crawl["finish_reason"] == "finished"
    assert crawl["harness/resp"] == 3  # redis-py 8 speaks RESP3 unless told otherwise
    assert crawl["harness/pages"] == PAGES
    assert crawl["harness/requests"] + 1 == checks
    assert crawl["scheduler/enqueued/redis"] == PAGES
    assert crawl["dupefilter/filtered"] == checks - PAGES
    assert (
        "Bloom filter dupefilter: created site:dupefilter (capacity 100000, error rate 1e-06"
        in crawl.log
    )

    r = server.client()
    calls = commandstats(r)
    assert calls["bf.insert"] == checks  # one command per request
    assert calls["bf.reserve"] == 1
    assert not DEDUP_COMMANDS & calls.keys()
    filter_info = info(r, "site:dupefilter")
    assert filter_info["Capacity"] == 100_000
    assert filter_info["Number of filters"] == 1
    assert filter_info["Number of items inserted"] == PAGES


def test_resp2(site, server) -> None:  # type: ignore[no-untyped-def]
    crawl = run_crawl(site, server, REDIS_PARAMS={"protocol": 2})
    assert crawl["harness/resp"] == 2
    assert site.fetched() == every_page_once(site)
    assert crawl["harness/pages"] == PAGES
    assert crawl["dupefilter/filtered"] == site.requests_per_crawl - PAGES
    assert commandstats(server.client())["bf.insert"] == site.requests_per_crawl
    # SCHEDULER_PERSIST is False: scrapy-redis clears the queue and the dupefilter at the end.
    assert server.client().keys("*") == []


def test_a_stopped_crawl_resumes_where_it_was(site, server) -> None:  # type: ignore[no-untyped-def]
    r = server.client()
    first = run_crawl(site, server, SCHEDULER_PERSIST=True, CLOSESPIDER_PAGECOUNT=PAGES // 3)
    assert first["finish_reason"] == "closespider_pagecount"
    fetched = sum(site.fetched().values())
    assert PAGES // 3 <= fetched < PAGES
    assert first["harness/pages"] == fetched
    queued = r.zcard("site:requests")
    seen = info(r, "site:dupefilter")["Number of items inserted"]
    # Every request the filter took in was either fetched or is waiting in the queue.
    assert seen == fetched + queued

    second = run_crawl(site, server, SCHEDULER_PERSIST=True)
    assert second["finish_reason"] == "finished"
    assert (
        f"Bloom filter dupefilter: resuming with site:dupefilter ({seen} requests seen"
        in second.log
    )
    assert site.fetched() == every_page_once(site)
    assert first["harness/pages"] + second["harness/pages"] == PAGES
    checks = 2 + first["harness/requests"] + second["harness/requests"]  # two start requests
    assert first["dupefilter/filtered"] + second["dupefilter/filtered"] == checks - PAGES
    assert info(r, "site:dupefilter")["Number of items inserted"] == PAGES
    assert r.zcard("site:requests") == 0


def test_a_full_filter_makes_errors_not_skipped_pages(site, server) -> None:  # type: ignore[no-untyped-def]
    # A filter someone reserved NONSCALING for 50 requests: once full, every new request is an
    # error reply. Each must surface as an error in the crawl, none as a duplicate.
    server.client().execute_command("BF.RESERVE", "site:dupefilter", 0.01, 50, "NONSCALING")
    crawl = run_crawl(site, server, SCHEDULER_PERSIST=True)
    checks = 1 + crawl["harness/requests"]
    assert crawl["harness/pages"] == crawl["scheduler/enqueued/redis"] == 50
    # FilterFullError: the BloomFilterError of a filter with no room for the item.
    assert "redis_bf.FilterFullError: non scaling filter is full" in crawl.log
    # Every check is accounted for: new (enqueued), seen (filtered), or an error.
    errors = crawl["log_count/ERROR"]
    assert errors > 0
    assert crawl["scheduler/enqueued/redis"] + crawl["dupefilter/filtered"] + errors == checks


def test_a_crawl_on_a_scrapy_redis_set_does_not_start(site, server) -> None:  # type: ignore[no-untyped-def]
    server.client().sadd("site:dupefilter", "0" * 40)
    crawl = run_crawl(site, server, SCHEDULER_PERSIST=True)
    assert sum(site.fetched().values()) == 0
    # One error line says why and what to do; no traceback buries it.
    assert (
        "[redis_bf.scrapy] ERROR: 'site:dupefilter' holds a set, not a Bloom filter: it is a "
        "scrapy-redis fingerprint set: convert it with `python -m redis_bf.migrate --url "
        f"{server.url}/0 site:dupefilter`, or delete it to start the crawl afresh\n" in crawl.log
    )
    assert "Traceback" not in crawl.log and crawl.log.count("ERROR") == 1
    assert "Spider closed (dupefilter key holds another type)" in crawl.log
    assert server.client().smembers("site:dupefilter") == {b"0" * 40}


def test_with_a_window_a_crawl_refetches_pages_only_after_it(server) -> None:  # type: ignore[no-untyped-def]
    # A small site: a crawl takes a few seconds, well within the window. Whether it was is judged
    # by the expiries the filter reports and by when each crawl started and ended (the server's
    # clock is this machine's), never by a margin: on a machine too slow for the window, the
    # checks that need it are left out, and the rest hold however slow it is.
    window = 25
    r = server.client()
    with Site(30) as site:
        started = time.time()
        first = run_crawl(site, server, SCHEDULER_PERSIST=True, BLOOMFILTER_WINDOW=window)
        assert info(r, "site:dupefilter")["Window"] == window
        held = expiries(r, "site:dupefilter")
        # Every request went in after the crawl started: no part expires before a window after
        # that. Read before then, the filter lists every part the crawl made, and the crawl
        # fetched each page once.
        whole = time.time() + MS < started + window
        if whole:
            assert first["harness/pages"] == 30
            assert site.fetched() == every_page_once(site)
        else:
            assert set(site.fetched()) == set(site.paths)

        # Within the window (the second crawl ended before the first part the first one made
        # expired): the start request is a duplicate, nothing is fetched.
        before = site.fetched()
        again = run_crawl(site, server, SCHEDULER_PERSIST=True, BLOOMFILTER_WINDOW=window)
        if whole and time.time() + MS < held[0]:
            assert again["harness/pages"] in (None, 0)
            assert site.fetched() == before

        # Once the filter has forgotten every request (it says so: no live item; a read sent
        # after the last part's expiry must find it so): each page once more.
        last = max(expiries(r, "site:dupefilter"), default=0.0)
        while True:
            sent = time.time()
            if r.execute_command("BF.CARD", "site:dupefilter") == 0:
                break
            assert sent <= last + MS, "still held after the last part's expiry"
            time.sleep(0.2)
        before = site.fetched()
        started = time.time()
        later = run_crawl(site, server, SCHEDULER_PERSIST=True, BLOOMFILTER_WINDOW=window)
        if time.time() + MS < started + window:
            assert later["harness/pages"] == 30
            assert site.fetched() == before + every_page_once(site)
        else:
            assert all(site.fetched()[path] > before[path] for path in site.paths)


def test_a_crawl_on_a_cuckoo_filter_fetches_every_page_once(site, server) -> None:  # type: ignore[no-untyped-def]
    crawl = run_crawl(site, server, SCHEDULER_PERSIST=True, BLOOMFILTER_KIND="cuckoo")
    checks = site.requests_per_crawl
    assert site.fetched() == every_page_once(site)
    assert crawl["finish_reason"] == "finished"
    assert crawl["dupefilter/filtered"] == checks - PAGES
    assert (
        "Cuckoo filter dupefilter: created site:dupefilter (capacity 100000, error rate 1e-06"
        in crawl.log
    )
    r = server.client()
    calls = commandstats(r)
    assert calls["cf.insertnx"] == checks  # one command per request
    assert calls["cf.reserve"] == 1
    assert not (DEDUP_COMMANDS | {"bf.insert", "cf.add", "cf.insert"}) & calls.keys()
    held = r.execute_command("CF.INFO", "site:dupefilter")
    assert held[held.index(b"Number of items inserted") + 1] == PAGES


# Pages whose first request answers HTTP 500 (30 of the 240); never the start page.
FAILING = [page for page in range(PAGES) if page % 8 == 5]
# Scrapy's own retries off, as if they had been used up: what is left is the dupefilter's.
FAILING_SETTINGS: dict[str, Any] = {
    "SCHEDULER_PERSIST": True,
    "RETRY_ENABLED": False,
    "DOWNLOADER_MIDDLEWARES": {"redis_bf.scrapy.RetryForgetMiddleware": 540},
}


@pytest.mark.parametrize(
    ("backing", "settings"),
    [
        ("bloom", {}),
        ("cuckoo", {"BLOOMFILTER_KIND": "cuckoo", "REDIS_PARAMS": {"protocol": 2}}),
        (
            "cuckoo-errback",
            {
                "BLOOMFILTER_KIND": "cuckoo",
                "HARNESS_ERRBACK_FORGET": True,
                "DOWNLOADER_MIDDLEWARES": {},
            },
        ),
    ],
)
def test_pages_that_fail_once_are_fetched_again_only_with_a_cuckoo_filter(
    server: Any, backing: str, settings: dict[str, Any]
) -> None:
    """Thirty pages answer 500 the first time. With the cuckoo backing each is forgotten and
    fetched again (by RetryForgetMiddleware, or by the spider's errback through
    ``redis_bf.scrapy.forget``): every page answers 200 once and none is fetched after that;
    with the Bloom backing the failed pages stay seen, and lost."""
    with Site(PAGES, fail_once=FAILING) as site:
        crawl = run_crawl(site, server, **{**FAILING_SETTINGS, **settings})
        fetched, ok, failed = site.fetched(), site.served(200), site.served(500)
    failing = {f"/p/{page}" for page in FAILING}
    assert set(failed) == failing and set(failed.values()) == {1}  # each failed once
    assert crawl["finish_reason"] == "finished"
    if backing == "bloom":
        assert set(ok) == set(site.paths) - failing  # the failed pages were never fetched again
        assert set(ok.values()) == {1}
        assert crawl["harness/pages"] == PAGES - len(FAILING)
        assert (
            "Disabled redis_bf.scrapy.RetryForgetMiddleware: the dupefilter keeps a Bloom filter, "
            "which cannot forget requests: failed requests stay seen (set BLOOMFILTER_KIND = "
            '"cuckoo")' in crawl.log
        )
    else:
        assert ok == every_page_once(site)  # every page in the end, each once
        # A failed page twice (its 500, then its 200), every other one once: none after its 200.
        assert fetched == Counter({path: 2 if path in failing else 1 for path in site.paths})
        assert crawl["harness/pages"] == PAGES
        assert crawl["dupefilter/forgotten"] == len(FAILING)
        if backing == "cuckoo":
            assert crawl["forget_retry/count"] == len(FAILING)
            assert crawl["forget_retry/max_reached"] is None
        else:
            assert (crawl["harness/failed"], crawl["harness/resent"]) == (30, 30)
        # Each page's fingerprint is held once: the forgotten ones were added again.
        r = server.client()
        held = r.execute_command("CF.INFO", "site:dupefilter")
        assert held[held.index(b"Number of items inserted") + 1] == PAGES
        assert held[held.index(b"Number of items deleted") + 1] == len(FAILING)
    print(
        f"\n{backing}: {len(ok)} of {PAGES} pages fetched, {sum(failed.values())} answered 500 "
        f"first, {crawl['forget_retry/count'] or crawl['harness/resent'] or 0} sent again, "
        f"{sum(fetched.values()) - sum(ok.values()) - sum(failed.values())} other fetches, "
        f"{sum(n - 1 for n in ok.values())} fetched twice after a 200"
    )
