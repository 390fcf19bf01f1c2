"""The versions of the sharding scheme (docs/sharding.md) on a real server: a new sharded filter is
version 2 (SHA-256) and says so in its manifest; a filter made by version 1 (the package before
it: BLAKE2b) keeps working, its items found, added and deleted where version 1 put them; a version
this client cannot read is refused before anything is written.

The version 1 filters here are made as the package made them before version 2: the same commands
(``SET key <manifest> NX GET``, then ``BF.INSERT`` or ``CF.INSERT`` to each item's shard), the
shard chosen by version 1's function written out below from the spec, not the package's."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict

import pytest
import redis
import redis.asyncio

from redis_bf import BloomFilter, CuckooFilter, FilterMismatchError
from redis_bf._core import shard_capacity
from redis_bf.asyncio import BloomFilter as AsyncBloomFilter

from redis_server import RedisServer

SHARDS = 4


def v1_shard(item: str) -> int:
    """Version 1: the item's 8-byte BLAKE2b digest personalised "redis-bf", little endian, times
    the shard count, over 2^64."""
    digest = hashlib.blake2b(item.encode(), digest_size=8, person=b"redis-bf").digest()
    return (int.from_bytes(digest, "little") * SHARDS) >> 64


def v1_manifest(capacity: int, parameters: dict[str, object], kind: str | None = None) -> str:
    """A manifest as version 1 wrote it."""
    fields = {"format": "redis-bf sharded filter", "version": 1, "shards": SHARDS}
    fields.update(capacity=capacity, **parameters, **({"kind": kind} if kind else {}))
    return json.dumps(fields, sort_keys=True)


def make_v1(
    client: redis.Redis,
    key: str,
    keys: tuple[str, ...],
    items: list[str],
    insert: list[object],
    manifest: str,
) -> None:
    """Writes ``items`` as version 1 did: the manifest, then each shard's items."""
    assert client.execute_command("SET", key, manifest, "NX", "GET") is None
    by_shard: dict[int, list[str]] = defaultdict(list)
    for item in items:
        by_shard[v1_shard(item)].append(item)
    for shard, members in by_shard.items():
        client.execute_command(insert[0], keys[shard], *insert[1:], "ITEMS", *members)


def test_a_new_sharded_filter_is_version_2(server: RedisServer) -> None:
    client = server.client()
    bf = BloomFilter(client, "seen", 10_000, 0.001, shards=SHARDS)
    assert bf.add_many([f"item:{i}" for i in range(100)]) == [True] * 100
    stored = json.loads(client.get("seen"))
    assert stored == {
        "format": "redis-bf sharded filter manifest",
        "version": 2,
        "kind": "bloom",
        "shards": SHARDS,
        "capacity": 10_000,
        "error_rate": 0.001,
        "window": None,
    }
    # A client of version 1 checked the format string, not the version: it refuses this one
    # (KeyTypeError, "not a sharded filter's parameters") instead of misplacing its items.
    assert stored["format"] != "redis-bf sharded filter"


def test_a_version_1_bloom_filter_keeps_working(server: RedisServer) -> None:
    client = server.client()
    keys = BloomFilter(redis.Redis(), "seen", 1, 0.5, shards=SHARDS).keys  # the same names
    old = [f"https://example.com/{i}" for i in range(2000)]
    capacity = shard_capacity(5000, SHARDS)
    manifest = v1_manifest(5000, {"error_rate": 0.001, "window": None})
    make_v1(
        client, "seen", keys, old, ["BF.INSERT", "CAPACITY", capacity, "ERROR", 0.001], manifest
    )

    bf = BloomFilter(client, "seen", 5000, 0.001, shards=SHARDS)
    assert all(bf.contains_many(old))
    assert bf._core.version == 1
    assert bf.add_many(old[:500]) == [False] * 500  # found where version 1 put them
    new = [f"https://example.com/new/{i}" for i in range(500)]
    assert bf.add_many(new) == [True] * 500
    assert bf.add("https://example.com/one") is True
    for item in [*new, "https://example.com/one"]:  # each in its version 1 shard
        assert client.execute_command("BF.EXISTS", keys[v1_shard(item)], item) in (1, True)
    assert bf.count() == 2501
    assert bf.info()["Shards"] == SHARDS
    assert client.get("seen").decode() == manifest  # left as it was
    # Another process, the asyncio class, a lookup before anything else: the same answers.
    assert BloomFilter(client, "seen", 5000, 0.001, shards=SHARDS).contains(old[7])

    async def lookups() -> list[bool]:
        async_client = redis.asyncio.Redis(port=server.port)
        try:
            seen = AsyncBloomFilter(async_client, "seen", 5000, 0.001, shards=SHARDS)
            return await seen.contains_many(old[:100] + new[:100])
        finally:
            await async_client.aclose()

    assert asyncio.run(lookups()) == [True] * 200
    # Deleted, the key makes a filter of version 2 the next time.
    assert bf.delete() == SHARDS + 1
    assert bf.add("x") is True
    assert json.loads(client.get("seen"))["version"] == 2


def test_a_version_1_cuckoo_filter_deletes_where_it_added(server: RedisServer) -> None:
    client = server.client()
    keys = CuckooFilter(redis.Redis(), "live", 8, shards=SHARDS).keys
    items = [f"session:{i}" for i in range(1000)]
    capacity = shard_capacity(2000, SHARDS)
    parameters = {"error_rate": 0.01, "bucket_size": 4, "max_iterations": 500, "expansion": 2}
    manifest = v1_manifest(2000, parameters, kind="cuckoo")
    make_v1(
        client, "live", keys, items, ["CF.INSERT", "CAPACITY", capacity, "ERROR", 0.01], manifest
    )

    cf = CuckooFilter(client, "live", 2000, shards=SHARDS)
    assert cf.count() == 1000
    assert all(cf.delete_many(items[:400]))  # every delete reaches the shard of its add
    assert cf.delete(items[400]) is True
    assert cf.count() == 599
    assert all(cf.contains_many(items[401:]))
    assert cf.add_unique(items[500]) is False
    assert cf.add_unique("session:new") is True
    assert client.execute_command("CF.EXISTS", keys[v1_shard("session:new")], "session:new")


def test_a_version_this_client_cannot_read_is_refused(server: RedisServer) -> None:
    client = server.client()
    newer = BloomFilter(redis.Redis(), "seen", 1000, 0.01, shards=SHARDS)._core.manifest()
    client.set("seen", newer.replace('"version": 2', '"version": 3'))
    bf = BloomFilter(client, "seen", 1000, 0.01, shards=SHARDS)
    for call in (lambda: bf.add("x"), lambda: bf.contains("x"), bf.count, bf.info, bf.delete):
        with pytest.raises(FilterMismatchError, match="version 3, which this client cannot read"):
            call()
    assert client.dbsize() == 1  # nothing written, nothing deleted
