"""redis_bf.BloomFilter against a real server, in RESP2 and RESP3 (the ``r`` fixture runs each
test in both): answers as bools, batches, creation, and errors raised, never read as answers."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import redis
from clocks import MS, expiries, timed
from redis.exceptions import ResponseError

from redis_bf import BloomFilter, BloomFilterError, FilterOptions, KeyTypeError
from redis_bf.bloom import as_bool, as_bools, info_dict

from conftest import commandstats, info, layout


def reference_size(client: redis.Redis, error_rate: float, capacity: int) -> int:
    """Size of a filter reserved explicitly with these parameters, on the same server."""
    client.execute_command("BF.RESERVE", "reference", error_rate, capacity)
    size = int(info(client, "reference")["Size"])
    client.delete("reference")
    return size


def test_add_answers_new_then_seen(r: redis.Redis) -> None:
    bf = BloomFilter(r, "urls", 1000, 0.001)
    assert bf.add("https://example.com/") is True
    assert bf.add("https://example.com/") is False
    assert bf.add(b"https://example.com/") is False  # str is sent as UTF-8: the same item
    assert bf.add(42) is True
    assert bf.add("42") is False
    assert ("https://example.com/" in bf) is True
    assert ("https://example.org/" in bf) is False
    assert bf.count() == 2


def test_the_first_write_creates_the_filter_as_asked(r: redis.Redis) -> None:
    bf = BloomFilter(r, "urls", 1000, 0.001)
    assert r.exists("urls") == 0
    assert bf.add("a") is True
    assert info(r, "urls") == {
        "Capacity": 1000,
        "Size": reference_size(r, 0.001, 1000),
        "Number of filters": 1,
        "Number of items inserted": 1,
        "Expansion rate": 2,
    }
    # The server's default filter (capacity 100 at 1%) would differ on both counts.
    assert reference_size(r, 0.01, 100) != info(r, "urls")["Size"]

    r.delete("urls")
    assert bf.add_many(["a", "b"]) == [True, True]
    assert info(r, "urls")["Capacity"] == 1000


def test_create_reserves_a_missing_key_and_leaves_a_filter_alone(r: redis.Redis) -> None:
    bf = BloomFilter(r, "urls", 5000, 0.0001)
    assert bf.create() is True
    assert info(r, "urls")["Size"] == reference_size(r, 0.0001, 5000)
    assert bf.create() is False

    r.execute_command("BF.RESERVE", "old", 0.01, 50)
    r.execute_command("BF.ADD", "old", "kept")
    before = info(r, "old")
    old = BloomFilter(r, "old", 5000, 0.0001)
    assert old.create() is False
    assert info(r, "old") == before
    assert old.add("kept") is False
    assert info(r, "old")["Capacity"] == 50


def test_add_many_batches_in_order(server: object, r: redis.Redis) -> None:
    bf = BloomFilter(r, "k", 1000, 0.001, batch_size=3, pipeline_size=2)
    items = ["a", "b", "c", "a", "d", "e", "b", "f", "g", "h", "a"]
    assert bf.add_many(items) == [
        True,
        True,
        True,
        False,
        True,
        True,
        False,
        True,
        True,
        True,
        False,
    ]
    assert bf.add_many([]) == []
    assert bf.add_many(iter(["h", "i"])) == [False, True]
    assert bf.count() == 9
    # 11 items in batches of 3: 4 commands, and 1 for the last call.
    assert commandstats(r)["bf.insert"] == 5


def test_contains_many(r: redis.Redis) -> None:
    bf = BloomFilter(r, "k", 1000, 0.001, batch_size=2)
    assert bf.contains_many(["a", "b"]) == [False, False]  # a missing key holds nothing
    assert r.exists("k") == 0  # and a lookup does not create it
    bf.add_many(["a", "c", "e"])
    assert bf.contains_many(["a", "b", "c", "d", "e"]) == [True, False, True, False, True]


def test_info(r: redis.Redis) -> None:
    bf = BloomFilter(r, "k", 200, 0.01)
    with pytest.raises(ResponseError, match="not found"):
        bf.info()
    bf.add_many(range(250))
    assert bf.info() == {
        "Capacity": 600,
        "Size": info(r, "k")["Size"],
        "Number of filters": 2,
        "Number of items inserted": 250,
        "Expansion rate": 2,
    }


def test_a_full_nonscaling_filter_raises_with_the_answers_before(r: redis.Redis) -> None:
    r.execute_command("BF.RESERVE", "full", 0.01, 3, "NONSCALING")
    bf = BloomFilter(r, "full", 3, 0.01, batch_size=2)
    with pytest.raises(BloomFilterError, match="non scaling filter is full") as raised:
        bf.add_many(["a", "b", "a", "c", "d", "e"])
    assert raised.value.results == [True, True, False, True]
    assert raised.value.index == 4
    assert bf.count() == 3
    with pytest.raises(BloomFilterError, match="non scaling filter is full"):
        bf.add("new")
    assert bf.add("a") is False  # an item it holds still answers
    assert bf.contains_many(["a", "new"]) == [True, False]


def test_a_key_of_another_type_raises(r: redis.Redis) -> None:
    r.set("text", "v")
    bf = BloomFilter(r, "text", 1000, 0.01)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        bf.add("x")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        bf.add_many(["x", "y"])
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        _ = "x" in bf
    with pytest.raises(KeyTypeError, match="'text' holds a string, not a Bloom filter") as raised:
        bf.create()
    assert raised.value.key_type == "string"
    r.rpush("queue", "x")
    with pytest.raises(KeyTypeError) as raised:
        BloomFilter(r, "queue", 1000, 0.01).create()
    assert raised.value.key_type == "list"
    assert r.get("text") == b"v"


def test_a_client_that_decodes_responses(server: object, protocol: int) -> None:
    client = server.client(protocol, decode_responses=True)  # type: ignore[attr-defined]
    bf = BloomFilter(client, "k", 1000, 0.01)
    assert bf.create() is True
    assert bf.create() is False
    assert bf.add_many(["a", "a"]) == [True, False]
    assert bf.info()["Number of items inserted"] == 1


def test_replies_are_read_strictly() -> None:
    assert as_bool(True) is True and as_bool(False) is False
    assert as_bool(1) is True and as_bool(0) is False
    for reply in (2, -1, b"1", "1", None, [1]):
        with pytest.raises(BloomFilterError, match="unexpected reply"):
            as_bool(reply)
    with pytest.raises(BloomFilterError, match="non scaling filter is full") as raised:
        as_bools([1, 0, ResponseError("non scaling filter is full")], offset=10)
    assert raised.value.results == [True, False]
    assert raised.value.index == 12
    with pytest.raises(BloomFilterError, match="not an array"):
        as_bools(1)
    assert info_dict([b"Capacity", 5, b"Expansion rate", None]) == {
        "Capacity": 5,
        "Expansion rate": None,
    }
    assert info_dict({"Capacity": 5}) == {"Capacity": 5}


def test_options_are_checked_before_any_command() -> None:
    for capacity, error_rate in ((0, 0.01), (-1, 0.01), (10, 0.0), (10, 1.0), (10, 1.5)):
        with pytest.raises(ValueError):
            FilterOptions(capacity, error_rate)
    with pytest.raises(TypeError):
        FilterOptions("10", 0.01)  # type: ignore[arg-type]
    assert FilterOptions(10, 0.01).reserve_args() == [0.01, 10]
    assert FilterOptions(10, 0.01).insert_args() == ["CAPACITY", 10, "ERROR", 0.01]
    for window in (-5, 315_576_001, timedelta(seconds=-1)):
        with pytest.raises(ValueError) as raised:
            FilterOptions(10, 0.01, window)
        assert str(raised.value) == (
            "window must be from 1 to 315576000 seconds (ten years), or 0 or None for none, "
            f"not {window!r}"
        )
    # 0 is no window, as None: as BLOOMFILTER_WINDOW = 0 and redis-bf-migrate --window 0.
    for none in (0, timedelta(0), None):
        assert FilterOptions(10, 0.01, none).window is None
        assert FilterOptions(10, 0.01, none).insert_args() == ["CAPACITY", 10, "ERROR", 0.01]
    for bad in (2.5, "60", True):
        with pytest.raises(TypeError, match="window must be an int"):
            FilterOptions(10, 0.01, bad)  # type: ignore[arg-type]
    windowed = FilterOptions(10, 0.01, 3600)
    assert windowed.reserve_args() == [0.01, 10, "WINDOW", 3600]
    assert windowed.insert_args() == ["CAPACITY", 10, "ERROR", 0.01, "WINDOW", 3600]


def test_the_layout_is_given_at_creation(r: redis.Redis) -> None:
    blocked = BloomFilter(r, "blocked", 1000, 0.01, layout="blocked")
    assert repr(blocked) == (
        "BloomFilter(key='blocked', capacity=1000, error_rate=0.01, layout='blocked')"
    )
    assert blocked.options.reserve_args() == [0.01, 1000, "LAYOUT", "BLOCKED"]
    assert blocked.options.insert_args() == [
        *("CAPACITY", 1000, "ERROR", 0.01, "LAYOUT", "BLOCKED")
    ]
    # The first write creates it so, as create() does.
    assert blocked.add("a") is True
    assert layout(r, "blocked") == b"blocked"
    # "classic" where the server's bf.layout says blocked; None takes the server's.
    r.config_set("bf.layout", "blocked")
    classic = BloomFilter(r, "classic", 1000, 0.01, layout="classic")
    assert classic.create() is True
    assert layout(r, "classic") == b"classic"
    assert BloomFilter(r, "server's", 1000, 0.01).add_many(["a", "b"]) == [True, True]
    assert layout(r, "server's") == b"blocked"
    # Windowed and sharded filters take it too: every shard is made so.
    windowed = BloomFilter(r, "feed", 1000, 0.01, window=60, layout="classic")
    assert windowed.add("a") is True
    assert layout(r, "feed") == b"classic"
    sharded = BloomFilter(r, "sharded", 3000, 0.01, layout="classic", shards=3)
    assert sharded.create() is True
    for key in sharded.keys:
        assert layout(r, key) == b"classic"
    # Only at creation: an existing filter keeps its own.
    assert BloomFilter(r, "blocked", 1000, 0.01, layout="classic").add("b") is True
    assert layout(r, "blocked") == b"blocked"
    for bad in ("BLOCKED", "compact", ""):
        with pytest.raises(ValueError, match="layout must be 'classic' or 'blocked'"):
            BloomFilter(r, "bad", 1000, 0.01, layout=bad)


def test_a_windowed_filter_forgets_an_item_after_its_window(r: redis.Redis) -> None:
    bf = BloomFilter(r, "feed", 1000, 0.01, window=1)
    assert repr(bf) == "BloomFilter(key='feed', capacity=1000, error_rate=0.01, window=1)"
    # Each check is judged by the expiries the filter reports (BF.DEBUG) and by when its request
    # went and its reply came back, never by a margin. The checks that need the item held are
    # answered before its part can have expired, or taken again on a fresh filter.
    for _ in range(5):
        (added, now), sent, answered = timed(lambda: (bf.add("video:1"), expiries(r, "feed")))
        assert added is True
        if not now:
            r.delete("feed")  # so slow that its part expired before BF.DEBUG was answered
            continue
        # Its one part expires a window after its last item, which the server added between the
        # request and its reply (later if video:2 goes into the same part).
        first = now[0]
        assert sent + 1.0 - MS <= first <= answered + 1.0 + MS, (sent, first, answered)
        held, _, answered = timed(
            lambda: (
                bf.add("video:1"),  # held: not shown twice within the window
                bf.add_many(["video:1", "video:2"]),
                info(r, "feed")["Size"],
                expiries(r, "feed"),
            )
        )
        if answered + MS < first:
            break
        r.delete("feed")  # too slow for the window: video:1 may have been forgotten on the way
    else:
        pytest.fail("five attempts, each too slow for a window of 1 s")
    again, seen, size, parts = held
    assert (again, seen) == (False, [False, True])
    assert info(r, "feed")["Window"] == 1
    assert info(r, "feed")["Capacity"] == 1000
    assert r.pttl("feed") == -1  # the key stays; the server frees what expires, no client action
    # video:1 is in the oldest part, video:2 in it or a newer one. Held in a lookup answered
    # before its part expires, forgotten in one sent after every part has, either in between.
    first, last = parts[0], parts[-1]
    while True:
        found, sent, answered = timed(lambda: "video:1" in bf)
        if answered + MS < first:
            assert found, f"forgotten at {answered}, its part expiring at {first}"
        if sent > last + MS:
            assert not found, f"still held at {sent}, the last part expiring at {last}"
        if not found:
            break
        time.sleep(0.02)
    # Its part is swept within a second of expiring (the sweep looks at most a second after a part
    # is due): a read sent two seconds after finds its memory returned.
    while True:
        sent = time.time()
        if info(r, "feed")["Size"] < size:
            break
        assert sent <= first + 2.0, f"not swept 2 s after its part's expiry ({sent - first:.3f} s)"
        time.sleep(0.05)
    # A read sent after every part's expiry counts no item.
    while time.time() <= last + MS:
        time.sleep(0.01)
    assert info(r, "feed")["Number of items inserted"] == 0
    # New again after the window, and held by a read answered within a window of its add.
    added, sent, _ = timed(lambda: bf.add("video:1"))
    assert added is True
    found, _, answered = timed(lambda: bf.contains_many(["video:1", "video:3"]))
    if answered + MS < sent + 1.0:
        assert found == [True, False]
    else:
        assert found[1] is False


def test_a_window_of_0_is_no_window(r: redis.Redis) -> None:
    bf = BloomFilter(r, "plain", 1000, 0.01, window=0)
    assert repr(bf) == "BloomFilter(key='plain', capacity=1000, error_rate=0.01)"
    assert bf.add("a") is True
    assert "Window" not in info(r, "plain")
    assert info(r, "plain")["Capacity"] == 1000
