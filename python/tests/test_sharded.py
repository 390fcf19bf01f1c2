"""One filter over many keys (``shards=N``), on one server (test_cluster.py has the cluster), and
the asyncio client: the shards' keys and slots, the parameters kept at the key, the answers and
errors of a sharded batch in the caller's order, and the asyncio twin's answers equal to the
blocking class's."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from redis_bf import BloomFilter, BloomFilterError, FilterMismatchError, KeyTypeError
from redis_bf._core import shard_capacity
from redis_bf.asyncio import BloomFilter as AsyncBloomFilter

from conftest import info
from redis_server import RedisServer


def test_shard_keys_fall_in_evenly_spaced_slot_ranges() -> None:
    for count in (1, 3, 12, 100):
        bf = BloomFilter(redis.Redis(), "crawl", 1000, 0.01, shards=count)
        assert len(bf.keys) == count
        for index, key in enumerate(bf.keys):
            assert key.startswith(f"crawl:{index}/{count}{{") and key.endswith("}")
            low, high = index * 16384 / count, (index + 1) * 16384 / count
            assert low <= key_slot(key.encode()) < high
            assert key_slot(key.encode()) == (2 * index + 1) * 16384 // (2 * count)
    # Three primaries with evenly assigned slots (0-5460, 5461-10922, 10923-16383): four each.
    twelve = BloomFilter(redis.Redis(), "crawl", 1000, 0.01, shards=12).keys
    owners = [min(key_slot(key.encode()) // 5461, 2) for key in twelve]
    assert owners == [0] * 4 + [1] * 4 + [2] * 4


def test_an_items_shard_is_pinned() -> None:
    """The hash tags and the item's shard are part of the stored form: another process (or a
    later release) must find every item where this one put it. A new filter places items by
    version 2 of docs/sharding.md; a filter whose manifest says version 1 keeps version 1's
    places (docs/sharding-vectors.json pins both for many more items, test_vectors.py)."""
    bf = BloomFilter(redis.Redis(), "crawl", 1000, 0.01, shards=12)
    items = ("https://example.com/", b"\x00", 42, 1.5)
    assert [bf._core.key_of(item) for item in items] == [
        "crawl:5/12{4779}",
        "crawl:8/12{8459}",
        "crawl:0/12{18e}",
        "crawl:1/12{48576}",
    ]
    assert bf._core.key_of("42") == bf._core.key_of(42) == bf._core.key_of(b"42")
    v1 = (
        bf._core.manifest()
        .replace("filter manifest", "filter")
        .replace('"version": 2', '"version": 1')
    )
    bf._core.check_manifest(v1, claimed=False)
    assert [bf._core.key_of(item) for item in items] == [
        "crawl:8/12{8459}",
        "crawl:6/12{1a28}",
        "crawl:1/12{48576}",
        "crawl:10/12{b509}",
    ]
    assert bf._core.key_of("42") == bf._core.key_of(42) == bf._core.key_of(b"42")


def test_a_shard_is_made_for_its_share_plus_four_deviations() -> None:
    assert shard_capacity(1_000_000, 12) == math.ceil(1e6 / 12 + 4 * math.sqrt(1e6 / 12 * 11 / 12))
    assert shard_capacity(1_000_000, 12) == 84_439
    assert shard_capacity(1000, 1) == 1000  # one shard takes every item: no spread
    assert shard_capacity(1, 8) == 2


def test_refused_arguments() -> None:
    client = redis.Redis()
    with pytest.raises(ValueError, match="cannot hold a hash tag"):
        BloomFilter(client, "{crawl}:seen", 1000, 0.01, shards=4)
    for shards in (0, -1, 1025):
        with pytest.raises(ValueError, match="shards must be from 1 to 1024"):
            BloomFilter(client, "crawl", 1000, 0.01, shards=shards)
    with pytest.raises(TypeError, match="shards must be an int"):
        BloomFilter(client, "crawl", 1000, 0.01, shards="4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window must be whole seconds"):
        BloomFilter(client, "crawl", 1000, 0.01, window=timedelta(seconds=1.5))
    with pytest.raises(ValueError, match="window must be from 1"):
        BloomFilter(client, "crawl", 1000, 0.01, window=timedelta(seconds=-60))
    # 0 is no window, as None (and as for the dupefilter and redis-bf-migrate).
    for none in (0, timedelta(0), None):
        assert BloomFilter(client, "crawl", 1000, 0.01, window=none).options.window is None


def test_items_spread_over_the_shards_and_answer_in_order(r: redis.Redis) -> None:
    bf = BloomFilter(r, "seen", 3000, 0.001, shards=4, batch_size=50, pipeline_size=3)
    items = [f"item:{i}" for i in range(2000)]
    assert bf.add_many(items[:1000]) == [True] * 1000
    assert bf.add_many(items[500:1500]) == [False] * 500 + [True] * 500
    answers = bf.contains_many(items)
    assert answers[:1500] == [True] * 1500
    assert sum(answers[1500:]) <= 5  # 0.1% of 500 expected: 0.5
    assert bf.add("item:0") is False and bf.add("item:1999") is True
    assert ("item:0" in bf, bf.contains("item:1999"), bf.contains("absent")) == (True, True, False)
    assert bf.count() == 1501
    per_shard = [int(r.execute_command("BF.CARD", key)) for key in bf.keys]
    assert sum(per_shard) == 1501
    assert all(300 < count < 450 for count in per_shard), per_shard  # 375 each on average
    merged = bf.info()
    assert merged["Shards"] == 4
    assert merged["Capacity"] == 4 * shard_capacity(3000, 4)
    assert merged["Number of items inserted"] == 1501
    assert merged["Size"] == sum(info(r, key)["Size"] for key in bf.keys)
    assert info(r, bf.keys[0])["Capacity"] == shard_capacity(3000, 4)
    assert r.type("seen") == b"string"  # the parameters
    assert bf.delete() == 5
    assert r.dbsize() == 0
    assert bf.count() == 0


def test_a_second_process_finds_the_same_filter_and_a_mismatch_is_refused(
    server: RedisServer,
) -> None:
    first = BloomFilter(server.client(), "seen", 1000, 0.01, shards=3, window=60)
    assert first.create() is True
    assert first.create() is False
    assert first.add_many(["a", "b", "c"]) == [True, True, True]
    again = BloomFilter(server.client(), "seen", 1000, 0.01, shards=3, window=timedelta(minutes=1))
    assert again.add_many(["a", "b", "d"]) == [False, False, True]
    assert again.info()["Window"] == 60
    # Another capacity is the filter's own, as for one key: the shards keep the first one's.
    bigger = BloomFilter(server.client(), "seen", 50_000, 0.01, shards=3, window=60)
    assert bigger.add("e") is True
    assert {info(server.client(), key)["Capacity"] for key in bigger.keys} == {
        shard_capacity(1000, 3)
    }
    for shards, error_rate, window, message in (
        (4, 0.01, 60, "has shards 3, not 4"),
        (3, 0.001, 60, "error_rate 0.01, not 0.001"),
        (3, 0.01, None, "window 60, not None"),
    ):
        mismatched = BloomFilter(
            server.client(), "seen", 1000, error_rate, shards=shards, window=window
        )
        with pytest.raises(FilterMismatchError, match=message):
            mismatched.add("x")
        with pytest.raises(FilterMismatchError):
            mismatched.contains_many(["x"])
    assert first.count() == 5
    with pytest.raises(FilterMismatchError):
        BloomFilter(server.client(), "seen", 1000, 0.01, shards=4, window=60).count()
    with pytest.raises(FilterMismatchError):
        BloomFilter(server.client(), "seen", 1000, 0.01, shards=4, window=60).delete()
    assert first.count() == 5  # nothing was deleted
    # Deleted and made again by a process with another capacity: its own, this time.
    assert bigger.delete() == 4
    assert bigger.add("f") is True
    assert bigger.create() is True  # the add wrote the parameters; this reserves the other shards
    assert bigger.create() is False
    assert {info(server.client(), key)["Capacity"] for key in bigger.keys} == {
        shard_capacity(50_000, 3)
    }
    # One key where a sharded filter keeps its parameters is refused as such, and the reverse.
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        BloomFilter(server.client(), "seen", 1000, 0.01).add("x")
    server.client().execute_command("BF.ADD", "plain", "x")
    with pytest.raises(KeyTypeError, match="keeps its parameters at its key"):
        BloomFilter(server.client(), "plain", 1000, 0.01, shards=2).add("x")
    for text in ("hello", "123", "[1]", '"x"', "{}"):
        server.client().set("text", text)
        with pytest.raises(KeyTypeError, match="not a sharded filter's parameters"):
            BloomFilter(server.client(), "text", 1000, 0.01, shards=2).contains("x")


def test_an_items_shard_follows_the_clients_encoding(server: RedisServer) -> None:
    latin = server.client(encoding="latin-1")
    bf = BloomFilter(latin, "latin", 1000, 0.01, shards=8)
    assert bf.add("café") is True
    assert bf.add(b"caf\xe9") is False  # the same bytes on the wire: the same shard
    assert bf.contains_many([b"caf\xe9", "café"]) == [True, True]
    assert bf._core.key_of("café") == bf._core.key_of(b"caf\xe9")


def test_an_error_element_in_a_later_round_trip(r: redis.Redis) -> None:
    bf = BloomFilter(r, "seen", 1000, 0.01, shards=2, batch_size=2, pipeline_size=1)
    full = bf.keys[1]
    r.execute_command("BF.RESERVE", full, 0.01, 5, "NONSCALING")
    items = [f"item:{i}" for i in range(60)]
    into_full = [i for i, item in enumerate(items) if bf._core.key_of(item) == full]
    sixth = into_full[5]  # the first that does not fit
    with pytest.raises(BloomFilterError, match="non scaling filter is full") as raised:
        bf.add_many(items)
    assert raised.value.index == sixth
    assert len(raised.value.results) == sixth
    assert raised.value.results == [True] * sixth
    assert sixth >= 2  # past the first round trip (two items)


def test_a_failing_shard_fails_the_batch_at_its_first_item(r: redis.Redis) -> None:
    bf = BloomFilter(r, "seen", 1000, 0.01, shards=4, batch_size=2)
    items = [f"item:{i}" for i in range(40)]
    broken = bf.keys[2]
    r.set(broken, "not a filter")
    first = next(i for i, item in enumerate(items) if bf._core.key_of(item) == broken)
    with pytest.raises(BloomFilterError, match="WRONGTYPE") as raised:
        bf.add_many(items)
    assert raised.value.index == first
    assert raised.value.results == [True] * first
    with pytest.raises(KeyTypeError, match="holds a string"):
        bf.create()


def test_the_asyncio_client_answers_as_the_blocking_one(server: RedisServer, protocol: int) -> None:
    items = [f"item:{i}" for i in range(500)]

    async def run() -> list[object]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port, protocol=protocol)
        try:
            answers: list[object] = []
            for shards in (None, 4):
                bf = AsyncBloomFilter(
                    client, f"async{shards}", 1000, 0.001, shards=shards, batch_size=64
                )
                answers.append(await bf.create())
                answers.append(await bf.add_many(items[:300]))
                answers.append(await bf.add_many(items[200:]))
                answers.append(await bf.add("item:0"))
                answers.append(await bf.contains("item:499"))
                answers.append(await bf.contains("absent"))
                answers.append(await bf.contains_many(["item:1", "absent"]))
                answers.append(await bf.count())
                answers.append((await bf.info())["Number of items inserted"])
                answers.append(await bf.delete())
            return answers
        finally:
            await client.aclose()

    answers = asyncio.run(run())
    once = [True, [True] * 300, [False] * 100 + [True] * 200, False, True, False, [True, False]]
    assert answers == [*once, 500, 500, 1, *once, 500, 500, 5]
    blocking = BloomFilter(server.client(protocol), "blocking", 1000, 0.001, shards=4)
    assert blocking.add_many(items) == [True] * 500
    assert server.client().dbsize() == 5


def missing_shards_sequence(r: redis.Redis, key: str, window: int | None) -> None:
    """What ``info()``, ``create()`` and ``count()`` of a sharded filter answer while some of its
    shards are not created yet: each missing shard counts as the empty shard its first write
    creates (its capacity, no sub-filter, no item) and 0 bytes."""
    bf = BloomFilter(r, key, 1000, 0.01, shards=4, window=window)
    with pytest.raises(redis.ResponseError, match="^not found$"):
        bf.info()  # no filter at all, as for one key
    windowed = {} if window is None else {"Window": window}
    capacity = 4 * shard_capacity(1000, 4)
    assert bf.contains("absent") is False  # a lookup writes the parameters: the filter exists
    assert bf.info() == {
        "Capacity": capacity,
        "Size": 0,
        "Number of filters": 0,
        "Number of items inserted": 0,
        **windowed,
        "Shards": 4,
    }
    assert bf.add("x") is True
    shard = info(r, bf._core.key_of("x"))
    assert bf.count() == 1
    partial = {
        "Capacity": capacity,
        "Size": shard["Size"],
        "Number of filters": shard["Number of filters"],
        "Number of items inserted": 1,
        "Expansion rate": shard["Expansion rate"],
        **windowed,
        "Shards": 4,
    }
    assert bf.info() == partial
    # Another process, with another capacity: missing shards count with the stored one.
    assert BloomFilter(r, key, 50_000, 0.01, shards=4, window=window).info() == partial
    assert bf.create() is True  # it reserved the three missing shards
    sizes = [info(r, k)["Size"] for k in bf.keys]
    assert bf.info()["Size"] == sum(sizes) > shard["Size"]
    assert bf.create() is False  # nothing left to create
    r.delete(bf.keys[0] if bf._core.key_of("x") != bf.keys[0] else bf.keys[1])
    assert BloomFilter(r, key, 1000, 0.01, shards=4, window=window).create() is True


@pytest.mark.parametrize("window", [None, 60], ids=["plain", "windowed"])
def test_info_and_create_while_shards_are_missing(r: redis.Redis, window: int | None) -> None:
    missing_shards_sequence(r, "t:seen", window)
    assert r.dbsize() == 5


def test_info_and_create_while_shards_are_missing_asyncio(server: RedisServer) -> None:
    async def run() -> list[object]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port, protocol=3)
        try:
            bf = AsyncBloomFilter(client, "t:seen", 1000, 0.01, shards=4)
            answers: list[object] = []
            try:
                await bf.info()
            except redis.ResponseError as error:
                answers.append(str(error))
            answers.append(await bf.add("x"))
            answers.append(await bf.info())
            answers.append(await bf.create())
            answers.append((await bf.info())["Number of filters"])
            answers.append(await bf.create())
            return answers
        finally:
            await client.aclose()

    answers = asyncio.run(run())
    shard = info(
        server.client(), BloomFilter(redis.Redis(), "t:seen", 1, 0.5, shards=4)._core.key_of("x")
    )
    assert answers == [
        "not found",
        True,
        {
            "Capacity": 4 * shard_capacity(1000, 4),
            "Size": shard["Size"],
            "Number of filters": 1,
            "Number of items inserted": 1,
            "Expansion rate": 2,
            "Shards": 4,
        },
        True,
        4,
        False,
    ]
