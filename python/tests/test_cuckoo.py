"""redis_bf.CuckooFilter (and its asyncio twin) against a real server, in RESP2 and RESP3 (the
``r`` fixture runs each test in both): adds, lookups and deletes as bools, every write creating a
missing key as asked (never with the server's ``bf.cf-*`` defaults), errors raised and never read
as answers, one filter sharded over several keys with its deletes reaching the right shard.
(The cluster: test_cluster.py; replicas: test_replication.py; a crawl: test_crawl.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.exceptions import ResponseError

from redis_bf import (
    BloomFilter,
    BloomFilterError,
    CuckooFilter,
    CuckooOptions,
    ErrorRateUnsupportedError,
    FilterFullError,
    FilterMismatchError,
    KeyTypeError,
)
from redis_bf._core import cuckoo_info, shard_capacity
from redis_bf.asyncio import BloomFilter as AsyncBloomFilter
from redis_bf.asyncio import CuckooFilter as AsyncCuckooFilter

from conftest import commandstats
from redis_server import RedisServer


def debug(client: redis.Redis, key: str) -> str:
    """CF.DEBUG: the filter's shape in one line (bucket size, buckets, items, deletes, filters,
    max iterations, expansion; error rate and slot widths for a bounded filter)."""
    reply = client.execute_command("CF.DEBUG", key)
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def info(client: redis.Redis, key: str) -> dict[str, Any]:
    return cuckoo_info(client.execute_command("CF.INFO", key))


def servers_defaults_changed(client: redis.Redis) -> None:
    """Other defaults for the filters the server makes on its own (CF.ADD on a missing key): a
    filter made with them would show it."""
    for name, value in (
        ("bf.cf-initial-size", "40"),
        ("bf.cf-bucket-size", "3"),
        ("bf.cf-max-iterations", "9"),
        ("bf.cf-expansion-factor", "8"),
    ):
        assert client.config_set(name, value)


def test_adds_lookups_deletes_and_counts(r: redis.Redis) -> None:
    cf = CuckooFilter(r, "emails", 1000)
    assert repr(cf) == "CuckooFilter(key='emails', capacity=1000, error_rate=0.01)"
    assert cf.add("alice@example.com") is True
    assert cf.add("alice@example.com") is True  # a second copy
    assert cf.count("alice@example.com") == 2
    assert cf.add_unique("alice@example.com") is False  # held: not added
    assert cf.add_unique(b"bob@example.com") is True
    assert cf.add_unique("bob@example.com") is False  # str is sent as UTF-8: the same item
    assert ("alice@example.com" in cf, cf.contains("carol@example.com")) == (True, False)
    assert cf.count() == 3  # items held: three copies
    assert cf.delete("alice@example.com") is True
    assert "alice@example.com" in cf  # one copy left
    assert cf.delete("alice@example.com") is True
    assert "alice@example.com" not in cf
    assert cf.delete("alice@example.com") is False  # not held: nothing deleted
    assert cf.count() == 1
    assert cf.info()["Number of items deleted"] == 2
    assert cf.add_many(["a", "b", "a"]) == [True, True, True]
    assert cf.add_many(["a", "c", "c"], unique=True) == [False, True, False]
    assert cf.contains_many(["a", "b", "c", "d"]) == [True, True, True, False]
    assert cf.delete_many(["a", "a", "a", "d"]) == [True, True, False, False]
    assert cf.count() == 3  # bob, b, c
    assert cf.drop() == 1
    assert r.exists("emails") == 0


def test_deleting_from_a_missing_key_answers_false(r: redis.Redis) -> None:
    cf = CuckooFilter(r, "none", 1000)
    assert cf.delete("x") is False  # CF.DEL answers "Not found": nothing was deleted
    assert cf.delete_many(["x", "y"]) == [False, False]
    assert (cf.contains("x"), cf.contains_many(["x"]), cf.count(), cf.count("x")) == (
        False,
        [False],
        0,
        0,
    )
    assert r.exists("none") == 0  # and nothing created it
    with pytest.raises(ResponseError, match="^not found$"):
        cf.info()


def test_every_write_creates_a_missing_key_as_asked(r: redis.Redis) -> None:
    servers_defaults_changed(r)
    cf = CuckooFilter(r, "seen", 1000, 0.001)
    bounded = "bktsize:4 buckets:256 items:{} deletes:0 filters:1 max_iterations:500 expansion:2"
    writes = (
        lambda: cf.add("x"),
        lambda: cf.add_unique("x"),
        lambda: cf.add_many(["x"]),
        lambda: cf.add_many(["x"], unique=True),
    )
    for write in writes:
        r.delete("seen")  # a flush, an eviction, another process's delete
        assert write() is not None
        assert debug(r, "seen") == bounded.format(1) + " error:0.001 bits:16"
        assert info(r, "seen")["Error rate"] == 0.001
    # One command each: CF.INSERT key CAPACITY 1000 ERROR 0.001 ITEMS x (CF.INSERTNX).
    calls = commandstats(r)
    assert (calls["cf.insert"], calls["cf.insertnx"]) == (2, 2)
    assert "cf.reserve" not in calls and "cf.add" not in calls

    # RedisBloom's kind: CF.INSERT cannot say its parameters, so a CF.RESERVE that spells them
    # out comes first, in the same round trip, and the insert has NOCREATE.
    plain = CuckooFilter(r, "plain", 1000, None, bucket_size=3, max_iterations=7, expansion=3)
    assert repr(plain) == (
        "CuckooFilter(key='plain', capacity=1000, error_rate=None, bucket_size=3, "
        "max_iterations=7, expansion=4)"
    )
    for write in (lambda: plain.add("x"), lambda: plain.add_many(["x", "y"], unique=True)):
        r.delete("plain")
        write()
        assert debug(r, "plain").startswith("bktsize:3 buckets:512 items:")
        assert debug(r, "plain").endswith(" max_iterations:7 expansion:4")
    # RedisBloom's defaults, spelled out: not the server's (bucket size 3 and so on, set above).
    defaults = CuckooFilter(r, "defaults", 1000, None)
    assert defaults.add("x") is True
    assert debug(r, "defaults") == (
        "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    )
    # A bounded filter with its own max iterations or expansion needs the reserve too.
    grown = CuckooFilter(r, "grown", 1000, max_iterations=50, expansion=4)
    assert grown.add_many(["x"]) == [True]
    assert debug(r, "grown") == (
        "bktsize:4 buckets:256 items:1 deletes:0 filters:1 max_iterations:50 expansion:4 "
        "error:0.01 bits:12"
    )
    # An existing filter is used as it is: the options apply only to a creation.
    assert CuckooFilter(r, "grown", 50_000, 0.001).add_unique("y") is True
    assert debug(r, "grown").startswith("bktsize:4 buckets:256 items:2 ")


def test_create_reserves_a_missing_key_and_leaves_a_filter_alone(r: redis.Redis) -> None:
    cf = CuckooFilter(r, "k", 5000, 0.0001)
    assert cf.create() is True
    r.execute_command("CF.RESERVE", "reference", 5000, "ERROR", 0.0001)
    assert debug(r, "k") == debug(r, "reference")
    assert debug(r, "k").startswith(
        "bktsize:4 buckets:2048 items:0 deletes:0 filters:1 max_iterations:500 expansion:2 "
        "error:0.0001 bits:"
    )
    assert cf.create() is False
    assert cf.key_type() == "MBbloomCF"
    r.execute_command("CF.RESERVE", "old", 100)
    assert CuckooFilter(r, "old", 5000).create() is False
    assert debug(r, "old").startswith("bktsize:2 buckets:64 ")
    # Another type at the key, a Bloom filter included.
    r.execute_command("BF.ADD", "bloom", "x")
    with pytest.raises(KeyTypeError) as raised:
        CuckooFilter(r, "bloom", 1000).create()
    assert str(raised.value) == "'bloom' holds a Bloom filter, not a cuckoo filter"
    assert (raised.value.key_type, raised.value.expected) == ("MBbloom--", "cuckoo filter")
    with pytest.raises(KeyTypeError, match="'k' holds a cuckoo filter, not a Bloom filter"):
        BloomFilter(r, "k", 1000, 0.01).create()
    r.set("text", "v")
    with pytest.raises(KeyTypeError, match="'text' holds a string, not a cuckoo filter"):
        CuckooFilter(r, "text", 1000).create()


def test_a_key_of_another_type_raises(r: redis.Redis) -> None:
    r.set("text", "v")
    cf = CuckooFilter(r, "text", 1000)
    for call in (
        lambda: cf.add("x"),
        lambda: cf.add_unique("x"),
        lambda: cf.contains("x"),
        lambda: cf.delete("x"),
        lambda: cf.count("x"),
        cf.count,
        cf.info,
    ):
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            call()
    for batch in (cf.add_many, cf.contains_many, cf.delete_many):
        with pytest.raises(BloomFilterError, match="WRONGTYPE") as raised:
            batch(["x", "y"])
        assert (raised.value.index, raised.value.results) == (0, [])
    plain = CuckooFilter(r, "text", 1000, None)  # its reserve meets the string first
    with pytest.raises(BloomFilterError, match="WRONGTYPE"):
        plain.add("x")
    assert r.get("text") == b"v"


def test_an_item_that_finds_no_room_raises_filter_full(r: redis.Redis) -> None:
    # RedisBloom's kind that cannot grow: 8 slots (four buckets of two), 1 eviction, expansion 0.
    cf = CuckooFilter(r, "full", 8, None, max_iterations=1, expansion=0, batch_size=100)
    items = [f"item:{i}" for i in range(40)]
    with pytest.raises(FilterFullError) as raised:
        cf.add_many(items)
    first = raised.value.index
    assert 0 < first < 9
    assert raised.value.results == [True] * first
    assert str(raised.value).startswith("the cuckoo filter has no room for the item")
    assert isinstance(raised.value, BloomFilterError)  # caught as any filter error
    held = cf.count()
    assert held <= 8
    with pytest.raises(FilterFullError):
        for item in items:
            cf.add(f"more:{item}")
    with pytest.raises(FilterFullError):
        for item in items:
            cf.add_unique(f"other:{item}")
    assert cf.count() <= 8
    assert cf.delete(items[0]) is True  # deleting makes room
    assert cf.add_unique(items[0]) is True

    # The same item again and again: its two buckets of four hold eight copies, then no more.
    bounded = CuckooFilter(r, "copies", 1000)
    assert bounded.add_many(["same"] * 8) == [True] * 8
    with pytest.raises(FilterFullError) as raised:
        bounded.add_many(["other", "same"])
    assert (raised.value.index, raised.value.results) == (1, [True])
    with pytest.raises(FilterFullError):
        bounded.add("same")
    assert bounded.add_unique("same") is False  # held: nothing to add
    assert bounded.count("same") == 8


def test_info(r: redis.Redis) -> None:
    cf = CuckooFilter(r, "k", 1000)
    cf.add_many(range(5000), unique=True)
    got = cf.info()
    assert got == info(r, "k")
    assert got["Number of filters"] == 3  # grew twice, at the same error rate
    assert (got["Bucket size"], got["Expansion rate"], got["Max iterations"]) == (4, 2, 500)
    assert got["Error rate"] == 0.01
    # An add answers False only for a false positive: the bound holds as it grows.
    assert got["Number of items inserted"] >= 5000 * 0.99
    plain = CuckooFilter(r, "plain", 1000, None)
    plain.add("x")
    assert "Error rate" not in plain.info()


def test_options_are_checked_before_any_command() -> None:
    client = redis.Redis(port=1)  # nothing is sent
    for args, kwargs, error, message in (
        ((0,), {}, ValueError, "capacity must be from 8 to"),
        ((7,), {}, ValueError, "capacity must be from 8 to"),
        ((3, None), {}, ValueError, "capacity must be from 4 to"),
        ((10, None), {"bucket_size": 6}, ValueError, "capacity must be from 12 to"),
        (("10",), {}, TypeError, "capacity must be an int"),
        ((100, 0.0), {}, ValueError, "error_rate must be from 1e-12 up to, not including, 1"),
        ((100, 1.0), {}, ValueError, "error_rate must be from 1e-12"),
        ((100, "0.01"), {}, TypeError, "error_rate must be a float"),
        ((100,), {"bucket_size": 2}, ValueError, "bucket_size goes with error_rate=None"),
        ((100, None), {"bucket_size": 0}, ValueError, "bucket_size must be from 1 to 255"),
        ((100,), {"max_iterations": 0}, ValueError, "max_iterations must be from 1 to 65535"),
        ((100,), {"expansion": 32769}, ValueError, "expansion must be from 0 to 32768"),
    ):
        with pytest.raises(error, match=message):
            CuckooFilter(client, "k", *args, **kwargs)
    with pytest.raises(ValueError, match="batch_size and pipeline_size must be at least 1"):
        CuckooFilter(client, "k", 100, batch_size=0)
    assert CuckooOptions(100).reserve_args() == [
        100,
        "MAXITERATIONS",
        500,
        "EXPANSION",
        2,
        "ERROR",
        0.01,
    ]
    assert CuckooOptions(100).insert_args() == ["CAPACITY", 100, "ERROR", 0.01]
    plain = CuckooOptions(100, None, expansion=0)
    assert plain.reserve_args() == [100, "BUCKETSIZE", 2, "MAXITERATIONS", 20, "EXPANSION", 0]
    assert plain.insert_args() is None  # CF.INSERT cannot carry them: a reserve goes first


def test_a_client_that_decodes_responses(server: RedisServer, protocol: int) -> None:
    client = server.client(protocol, decode_responses=True)
    cf = CuckooFilter(client, "k", 1000)
    assert cf.create() is True
    assert cf.add_many(["a", "a"], unique=True) == [True, False]
    assert cf.delete("a") is True
    assert cf.info()["Error rate"] == 0.01
    assert cf.count() == 0


def test_sharded_deletes_reach_the_shard_that_holds_the_item(r: redis.Redis) -> None:
    """An item's shard is chosen by its bytes, so its delete goes where its add went: every
    item deleted is gone from its own shard, and only from it."""
    cf = CuckooFilter(r, "seen", 4000, 0.001, shards=4, batch_size=50, pipeline_size=3)
    items = [f"item:{i}" for i in range(2000)]
    answers = cf.add_many(items, unique=True)
    assert answers.count(True) >= 1990  # False only for a false positive (0.1%)
    # Delete only what was added: deleting an item that was not may delete another one.
    added = [item for item, new in zip(items, answers, strict=True) if new]
    gone, kept = added[::2], added[1::2]
    assert cf.delete_many(gone) == [True] * len(gone)
    per_shard = {key: 0 for key in cf.keys}
    for item in gone:
        per_shard[cf._core.key_of(item)] += 1
    assert {key: info(r, key)["Number of items deleted"] for key in cf.keys} == per_shard
    assert cf.contains_many(kept) == [True] * len(kept)  # no false negative after deletes
    assert sum(cf.contains_many(gone)) <= 10  # only false positives (0.1% is 1 of 1,000)
    assert cf.count() == len(kept)
    # The bytes redis-py sends pick the shard: str and its UTF-8 bytes are one item.
    assert cf._core.key_of("café") == cf._core.key_of("café".encode())
    assert cf.add("café") is True and cf.delete(b"caf\xc3\xa9") is True
    merged = cf.info()
    assert merged["Shards"] == 4
    assert merged["Number of items inserted"] == len(kept)
    assert merged["Number of items deleted"] == len(gone) + 1
    # The shards' parameters are kept at the key: a second process finds the same filter.
    again = CuckooFilter(r, "seen", 50_000, 0.001, shards=4)
    assert again.contains_many(kept[:10]) == [True] * 10
    # Each shard made for its share plus four deviations: 1,110 items, 278 buckets, up to 512.
    assert shard_capacity(4000, 4) == 1110
    assert {debug(r, key).split(" ")[1] for key in cf.keys} == {"buckets:512"}
    assert cf.drop() == 5
    assert r.dbsize() == 0


def test_a_sharded_filter_of_the_other_kind_or_parameters_is_refused(server: RedisServer) -> None:
    client = server.client()
    assert BloomFilter(client, "bloom", 1000, 0.01, shards=3).add("x") is True
    with pytest.raises(FilterMismatchError, match="is a Bloom filter, not a cuckoo filter"):
        CuckooFilter(client, "bloom", 1000, 0.01, shards=3).add("x")
    assert CuckooFilter(client, "cuckoo", 1000, 0.01, shards=3).add("x") is True
    with pytest.raises(FilterMismatchError, match="is a cuckoo filter, not a Bloom filter"):
        BloomFilter(client, "cuckoo", 1000, 0.01, shards=3).contains("x")
    for kwargs, message in (
        ({"shards": 4}, "has shards 3, not 4"),
        ({"shards": 3, "error_rate": 0.001}, "error_rate 0.01, not 0.001"),
        ({"shards": 3, "error_rate": None}, "error_rate 0.01, not None"),
        ({"shards": 3, "expansion": 4}, "expansion 2, not 4"),
    ):
        with pytest.raises(FilterMismatchError, match=message):
            CuckooFilter(client, "cuckoo", 1000, **kwargs).delete("x")
    assert CuckooFilter(client, "cuckoo", 50_000, 0.01, shards=3).delete("x") is True


def test_a_sharded_filter_counts_missing_shards_as_empty(r: redis.Redis) -> None:
    cf = CuckooFilter(r, "t", 1000, shards=4)
    with pytest.raises(ResponseError, match="^not found$"):
        cf.info()
    assert cf.contains("absent") is False  # the parameters are written: the filter exists
    buckets = 4 * 128  # each shard: 1000/4 + 4 deviations = 305 items, 76 buckets, up to 128
    assert cf.info() == {
        "Size": 0,
        "Number of buckets": buckets,
        "Number of filters": 0,
        "Number of items inserted": 0,
        "Number of items deleted": 0,
        "Bucket size": 4,
        "Expansion rate": 2,
        "Max iterations": 500,
        "Error rate": 0.01,
        "Shards": 4,
    }
    assert cf.add("x") is True
    shard = info(r, cf._core.key_of("x"))
    assert cf.info() == {
        **shard,
        "Number of buckets": buckets,
        "Shards": 4,
    }
    assert cf.create() is True  # the three missing shards
    assert cf.info()["Number of filters"] == 4
    assert cf.info()["Size"] == 4 * shard["Size"]
    assert cf.create() is False


def test_the_asyncio_class_answers_as_the_blocking_one(server: RedisServer, protocol: int) -> None:
    items = [f"item:{i}" for i in range(300)]

    async def run() -> list[object]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port, protocol=protocol)
        try:
            answers: list[object] = []
            for shards in (None, 4):
                cf = AsyncCuckooFilter(client, f"async{shards}", 1000, shards=shards, batch_size=64)
                answers.append(await cf.create())
                answers.append(await cf.add_many(items[:200], unique=True))
                answers.append(await cf.add_many(items[100:], unique=True))
                answers.append(await cf.add("item:0"))
                answers.append(await cf.add_unique("item:0"))
                answers.append(await cf.contains("item:299"))
                answers.append(await cf.contains_many(["item:1", "absent"]))
                answers.append(await cf.count("item:0"))
                answers.append(await cf.delete("item:0"))
                answers.append(await cf.delete_many(["item:0", "item:0", "absent"]))
                answers.append(await cf.count())
                answers.append((await cf.info())["Number of items deleted"])
                answers.append(await cf.drop())
            return answers
        finally:
            await client.aclose()

    answers = asyncio.run(run())
    once = [
        True,
        [True] * 200,
        [False] * 100 + [True] * 100,
        True,
        False,
        True,
        [True, False],
        2,
        True,
        [True, False, False],
        299,
        2,
    ]
    assert answers == [*once, 1, *once, 5]
    blocking = CuckooFilter(server.client(protocol), "blocking", 1000, shards=4)
    assert blocking.add_many(items, unique=True) == [True] * 300
    assert blocking.delete_many(items[:3]) == [True] * 3
    assert blocking.count() == 297


def test_in_on_an_asyncio_filter_says_to_await_contains() -> None:
    """``item in f`` cannot wait for the server: it raises a TypeError naming what to write
    (nothing is sent)."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=1)
    for filter_class in (AsyncCuckooFilter, AsyncBloomFilter):
        live: Any = filter_class(client, "live", 1000, 0.01)
        with pytest.raises(TypeError) as raised:
            "s:42" in live  # noqa: B015
        assert str(raised.value) == (
            f"`item in f` cannot be awaited on redis_bf.asyncio.{filter_class.__name__}: use "
            "`await f.contains(item)`"
        )


# RedisBloom 2.4's answer to CF.INSERT and CF.INSERTNX with an option it does not know (ERROR).
UNKNOWN_ARGUMENT = "Unknown argument received"


def refused_by_redisbloom(args: tuple[Any, ...]) -> bool:
    """What RedisBloom refuses of what a bounded CuckooFilter sends: its inserts' ``ERROR``
    (its ``CF.RESERVE`` ignores the word, and makes a filter of its own kind)."""
    command = args[0].upper() if isinstance(args[0], str) else args[0]
    return command in ("CF.INSERT", "CF.INSERTNX") and "ERROR" in args


class RedisBloomLike:
    """A client of a server that answers a cuckoo insert with ``ERROR`` as RedisBloom does (CI
    has no RedisBloom); every other command goes to the real server behind it."""

    def __init__(self, client: Any):
        self.client = client
        self.connection_pool = client.connection_pool

    def get_encoder(self) -> Any:
        return self.client.get_encoder()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if refused_by_redisbloom(args):
            raise ResponseError(UNKNOWN_ARGUMENT)
        return self.client.execute_command(*args, **options)

    def pipeline(self, transaction: bool = True) -> RedisBloomLikePipeline:
        return RedisBloomLikePipeline(self)


class RedisBloomLikePipeline:
    def __init__(self, client: RedisBloomLike):
        self.client = client
        self.commands: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any) -> None:
        self.commands.append(args)

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        replies: list[Any] = []
        for command in self.commands:
            try:
                replies.append(self.client.execute_command(*command))
            except ResponseError as error:
                replies.append(error)
        return replies


def test_a_bounded_filter_on_redisbloom_says_to_use_error_rate_none(server: RedisServer) -> None:
    """RedisBloom has no ``ERROR``: every insert of the default (bounded) filter raises an error
    that names ``error_rate=None``, with the answers before the failing item; RedisBloom's kind
    works there."""
    client: Any = RedisBloomLike(server.client())
    expected = (
        f"the Redis server at 127.0.0.1:{server.port} refused the cuckoo filter's error rate (it "
        "answered: Unknown argument received): it has RedisBloom's cuckoo filters, which take no "
        "ERROR; use CuckooFilter(client, key, capacity, error_rate=None) for RedisBloom's kind "
        "(its false-positive rate grows with each sub-filter), or a server with redis-bf for a "
        "bounded one"
    )
    live = CuckooFilter(client, "sessions:live", 1000)
    calls = (
        lambda: live.add("s:42"),
        lambda: live.add_unique("s:42"),
        lambda: live.add_many(["s:1", "s:2"]),
        lambda: live.add_many(["s:1", "s:2"], unique=True),
    )
    for call in calls:
        with pytest.raises(ErrorRateUnsupportedError) as raised:
            call()
        assert str(raised.value) == expected
        assert isinstance(raised.value, ResponseError)
        assert (raised.value.results, raised.value.index) == ([], 0)
    assert live.contains("s:42") is False  # lookups carry no ERROR
    plain = CuckooFilter(client, "sessions:plain", 1000, error_rate=None)
    assert plain.add_many(["s:1", "s:2"]) == [True, True]
    assert plain.add("s:42") is True
    assert "s:42" in plain


class AsyncRedisBloomLike(RedisBloomLike):
    """``RedisBloomLike`` for asyncio."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if refused_by_redisbloom(args):
            raise ResponseError(UNKNOWN_ARGUMENT)
        return await self.client.execute_command(*args, **options)

    def pipeline(self, transaction: bool = True) -> Any:
        return AsyncRedisBloomLikePipeline(self)


class AsyncRedisBloomLikePipeline(RedisBloomLikePipeline):
    async def execute(self, raise_on_error: bool = True) -> Any:
        replies: list[Any] = []
        for command in self.commands:
            try:
                replies.append(await self.client.execute_command(*command))
            except ResponseError as error:
                replies.append(error)
        return replies


def test_the_asyncio_class_on_redisbloom_says_it_too(server: RedisServer) -> None:
    async def run() -> list[BaseException]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            live = AsyncCuckooFilter(AsyncRedisBloomLike(client), "live", 1000)
            raised = []
            for call in (lambda: live.add("a"), lambda: live.add_many(["a", "b"])):
                with pytest.raises(ErrorRateUnsupportedError) as error:
                    await call()
                raised.append(error.value)
            return raised
        finally:
            await client.aclose()

    for error in asyncio.run(run()):
        assert str(error).startswith(
            f"the Redis server at 127.0.0.1:{server.port} refused the cuckoo filter's error rate"
        )
        assert "use CuckooFilter(client, key, capacity, error_rate=None)" in str(error)
