"""One filter over a real Redis Cluster (three primaries, a replica each, harness/redis_cluster.py):
a million items through twelve shards, a primary killed under a stream of acknowledged and
replicated adds, the asyncio client, and a Scrapy crawl whose dupefilter lives on the cluster
while scrapy-redis's queue stays on its own server; a cuckoo filter sharded over it, its deletes
reaching each item's shard."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
import redis
from redis.crc import key_slot

from redis_bf import BloomFilter, CuckooFilter, NotReplicatedError
from redis_bf._core import cuckoo_info, info_dict, shard_capacity
from redis_bf.asyncio import BloomFilter as AsyncBloomFilter
from redis_bf.asyncio import CuckooFilter as AsyncCuckooFilter

from conftest import SERVERS, directory_name, run_crawl, server_binary
from redis_cluster import RedisCluster
from redis_server import RedisServer
from website import Site

T = TypeVar("T")


@pytest.fixture(params=list(SERVERS))
def any_cluster(request: pytest.FixtureRequest) -> Iterator[RedisCluster]:
    """The cluster of ``cluster``, on each server of ``SERVERS`` (skipped where not unpacked)."""
    instance = RedisCluster(directory_name(request), binary=server_binary(request)).start()
    try:
        yield instance
    finally:
        instance.stop()


def shards_per_master(cluster: RedisCluster, keys: tuple[str, ...]) -> list[int]:
    """How many of ``keys`` each primary holds (asked directly), primaries in slot order."""
    counts = []
    for master in cluster.masters():
        with master.client() as direct:
            counts.append(
                sum(int(direct.exists(key)) for key in keys if owns(cluster, master, key))
            )
    return counts


def owns(cluster: RedisCluster, master: RedisServer, key: str) -> bool:
    slot = key_slot(key.encode())
    return any(low <= slot <= high for low, high in cluster.slots_of(master))


def test_a_million_items_through_twelve_shards(cluster: RedisCluster) -> None:
    client = cluster.client()
    try:
        bf = BloomFilter(client, "crawl", 1_000_000, 0.001, shards=12)
        items = [f"https://example.com/page/{i}" for i in range(1_000_000)]
        added = bf.add_many(items)
        new = sum(added)
        assert new > 999_000  # an add answers "seen" only on a false positive
        assert bf.contains_many(items) == [True] * len(items)  # no false negative
        absent = [f"https://example.org/other/{i}" for i in range(200_000)]
        false_positives = sum(bf.contains_many(absent))
        assert false_positives <= 220, false_positives  # at most 0.11%
        count = bf.count()
        assert count == new
        assert abs(count - len(items)) <= len(items) // 1000  # within 0.1%
        info = bf.info()
        assert info["Shards"] == 12
        assert info["Number of items inserted"] == count
        assert info["Capacity"] == 12 * shard_capacity(1_000_000, 12)
        assert info["Number of filters"] == 12  # no shard had to grow
        assert shards_per_master(cluster, bf.keys) == [4, 4, 4]
        # Memory as one filter's: the shards' bits per item against one filter of the same
        # capacity and error rate.
        client.execute_command("BF.RESERVE", "one", 0.001, 1_000_000)
        one = int(client.execute_command("BF.INFO", "one", "SIZE")[0])
        assert 1.0 <= info["Size"] / one < 1.03, (info["Size"], one)
        print(f"\n12 shards: {new} new of 1,000,000, {false_positives} false positives of 200,000")
    finally:
        client.close()


def test_adds_acknowledged_and_replicated_survive_a_killed_primary(cluster: RedisCluster) -> None:
    client = cluster.client()
    bf = BloomFilter(
        client, "stream", 200_000, 0.001, shards=6, wait_for_replicas=1, wait_timeout=2
    )
    victim = cluster.masters()[1]
    failed_over = threading.Event()
    # The kill lands once the stream is going (a fixed delay raced a slow machine's first batch).
    streaming = threading.Event()

    problems: list[BaseException] = []

    def kill_then_wait() -> None:
        try:
            if not streaming.wait(60):
                raise AssertionError("the stream did not start within 60 s")
            cluster.kill(victim)
            cluster.wait_for_failover(victim)
            failed_over.set()
        except BaseException as problem:  # reported by the loop below
            problems.append(problem)

    killer = threading.Thread(target=kill_then_wait)
    acknowledged: list[str] = []
    refused: list[str] = []
    after = 0  # batches tried once the replica took over
    batch = 0
    killer.start()
    try:
        deadline = time.monotonic() + 60
        while after < 3:
            assert not problems, problems
            assert time.monotonic() < deadline, f"no failover within 60 s ({refused[-3:]})"
            items = [f"event:{batch}:{i}" for i in range(500)]
            batch += 1
            after += int(failed_over.is_set())
            try:
                bf.add_many(items)
            except redis.exceptions.RedisError as error:
                # Not acknowledged: some of its items may be in, some not.
                refused.append(type(error).__name__)
                time.sleep(0.1)
                continue
            acknowledged.extend(items)
            if len(acknowledged) >= 2000:
                streaming.set()
    finally:
        streaming.set()  # never leave the killer waiting
        killer.join()
        client.close()
    assert len(acknowledged) >= 2000, "the kill came before the stream"
    # While the primary is down its shards' writes fail; once its replica took over, it has no
    # replica of its own, so WAIT 1 cannot succeed there and the writes are refused as such.
    assert refused, "no add was refused: the kill did not land during the stream"
    assert refused[-3:] == ["NotReplicatedError"] * 3, refused
    fresh = cluster.client()
    try:
        again = BloomFilter(fresh, "stream", 200_000, 0.001, shards=6)
        assert again.contains_many(acknowledged) == [True] * len(acknowledged)
        assert victim not in cluster.masters()
    finally:
        fresh.close()
    print(f"\n{len(acknowledged)} items acknowledged in {batch} batches, refused: {refused}")


def test_the_asyncio_client_on_the_cluster(cluster: RedisCluster) -> None:
    items = [f"video:{i}" for i in range(100_000)]
    absent = [f"other:{i}" for i in range(20_000)]

    async def run() -> tuple[int, list[bool], int, int, dict[str, object], int]:
        client = cluster.async_client(protocol=3)
        try:
            bf = AsyncBloomFilter(client, "feed", 100_000, 0.001, shards=12, wait_for_replicas=1)
            # The first command of a fresh client waits for replicas: it must find the nodes.
            new = sum(await bf.add_many(items))
            assert await bf.create() is False
            held = await bf.contains_many(items)
            false_positives = sum(await bf.contains_many(absent))
            assert await bf.add(items[0]) is False
            assert await bf.contains(items[-1]) is True
            return new, held, false_positives, await bf.count(), await bf.info(), await bf.delete()
        finally:
            await client.aclose()

    new, held, false_positives, count, info, deleted = asyncio.run(run())
    assert new > 99_900
    assert held == [True] * len(items)
    assert false_positives <= 40  # 0.1% of 20,000 is 20
    assert count == new
    assert info["Shards"] == 12 and info["Number of items inserted"] == new
    assert deleted == 13  # the shards and the parameters
    assert shards_per_master(
        cluster, BloomFilter(redis.Redis(), "feed", 1, 0.5, shards=12).keys
    ) == [
        0,
        0,
        0,
    ]


def test_a_crawl_with_its_dupefilter_on_the_cluster(
    site: Site, server: RedisServer, cluster: RedisCluster
) -> None:
    crawl = run_crawl(
        site,
        server,
        SCHEDULER_PERSIST=True,
        BLOOMFILTER_CLUSTER_URL=cluster.url,
        BLOOMFILTER_SHARDS=6,
    )
    assert site.fetched() == Counter({path: 1 for path in site.paths})
    assert crawl["finish_reason"] == "finished"
    assert crawl["dupefilter/filtered"] == site.requests_per_crawl - len(site.paths)
    # The filter is on the cluster, in six shards over the three primaries; scrapy-redis's queue
    # server has only its own keys.
    client = cluster.client()
    try:
        bf = BloomFilter(client, "site:dupefilter", 100_000, 1e-6, shards=6)
        assert bf.count() == len(site.paths)
        assert shards_per_master(cluster, bf.keys) == [2, 2, 2]
    finally:
        client.close()
    with server.client() as queue_server:
        assert queue_server.exists("site:dupefilter") == 0
        assert not [key for key in queue_server.keys("site:dupefilter*")]


def test_one_key_through_cluster_clients(cluster: RedisCluster) -> None:
    """Without shards the filter is one key, on the primary of its slot, through either client."""
    client = cluster.client(protocol=3)
    try:
        bf = BloomFilter(client, "single", 10_000, 0.001, window=3600, batch_size=100)
        assert bf.create() is True
        items = [f"item:{i}" for i in range(1000)]
        assert bf.add_many(items) == [True] * 1000
        assert bf.add("item:0") is False
        assert ("item:999" in bf, bf.contains("absent")) == (True, False)
        assert bf.count() == 1000
        assert bf.info()["Window"] == 3600
        owner = cluster.master_of_slot(key_slot(b"single"))
        with owner.client() as direct:
            assert direct.execute_command("BF.CARD", "single") == 1000
    finally:
        client.close()

    async def run() -> tuple[list[bool], int, int]:
        async_client = cluster.async_client()
        try:
            bf = AsyncBloomFilter(
                async_client, "single", 10_000, 0.001, window=3600, wait_for_replicas=1
            )
            answers = await bf.add_many(["item:0", "new"])
            return answers, await bf.count(), await bf.delete()
        finally:
            await async_client.aclose()

    assert asyncio.run(run()) == ([False, True], 1001, 1)


@contextmanager
def stopped(node: RedisServer) -> Iterator[None]:
    """``node`` frozen (SIGSTOP): it reads and acknowledges nothing until the block ends."""
    os.kill(node.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(node.pid, signal.SIGCONT)


def eventually(call: Callable[[], T]) -> T:
    """``call()``, again while it raises ``NotReplicatedError`` (for 20 s at most): a WAIT of
    200 ms may time out on a busy machine although the replicas follow."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return call()
        except NotReplicatedError:
            if time.monotonic() > deadline:
                raise


def unconfirmed(port: int, answers: int) -> str:
    return (
        f"the writes were applied on the primary at 127.0.0.1:{port} (the {answers} answer(s) in "
        ".results stand there), but 0 of the 1 replica(s) asked confirmed them, and every write "
        "before them, within 200 ms (WAIT 1): they may be lost if that primary fails now"
    )


def test_an_add_that_finds_the_item_waits_on_its_node_for_the_write_that_put_it_there(
    any_cluster: RedisCluster,
) -> None:
    """As tests/test_replication.py, on each node of a cluster: the WAIT on the node that answers
    "seen" covers another client's write that put the item there, one key or sharded, blocking
    or asyncio; another node's confirmation does not stand in for it."""
    cluster = any_cluster
    mine_client = cluster.client(protocol=3)
    other_client = cluster.client()
    outcomes: list[Any] = []
    try:
        for key, shards in (("single", None), ("sharded", 6)):
            other = BloomFilter(other_client, key, 1000, 0.01, shards=shards)
            mine = BloomFilter(
                mine_client, key, 1000, 0.01, shards=shards, wait_for_replicas=1, wait_timeout=0.2
            )
            eventually(lambda mine=mine: mine.add("before"))  # type: ignore[misc]
            owner = cluster.master_of_slot(key_slot(mine._core.key_of("x").encode()))
            (replica,) = cluster.replicas_of(owner)
            # An item on another primary (sharded), or on the same key.
            elsewhere = next(
                item
                for item in (f"y{i}" for i in range(1000))
                if shards is None
                or cluster.master_of_slot(key_slot(mine._core.key_of(item).encode())) != owner
            )
            with stopped(replica):
                assert other.add("x") is True
                for items in (["x"], ["x", elsewhere]):
                    results = [False, True][: len(items)]
                    with pytest.raises(NotReplicatedError) as raised:
                        if items == ["x"]:
                            mine.add("x")
                        else:
                            mine.add_many(items)
                    assert raised.value.results == results
                    assert raised.value.address == f"127.0.0.1:{owner.port}"
                    assert str(raised.value) == unconfirmed(owner.port, len(results))
            patient = BloomFilter(
                cluster.client(), key, 1000, 0.01, shards=shards, wait_for_replicas=1,
                wait_timeout=10,
            )  # fmt: skip
            outcomes.append(patient.add_many(["x", elsewhere, "z"]))
            patient.client.close()

        async def run() -> list[Any]:
            client = cluster.async_client()
            try:
                mine = AsyncBloomFilter(
                    client, "async", 1000, 0.01, shards=6, wait_for_replicas=1, wait_timeout=0.2
                )
                other = BloomFilter(other_client, "async", 1000, 0.01, shards=6)
                other.add("before")
                await mine.contains("before")
                owner = cluster.master_of_slot(key_slot(mine._core.key_of("x").encode()))
                (replica,) = cluster.replicas_of(owner)
                deadline = time.monotonic() + 20
                while True:  # as ``eventually``: the parameters confirmed by the first write
                    try:
                        await mine.add("before")
                        break
                    except NotReplicatedError:
                        assert time.monotonic() < deadline
                found: list[Any] = []
                with stopped(replica):
                    found.append(other.add("x"))
                    with pytest.raises(NotReplicatedError) as raised:
                        await mine.add("x")
                    found.append((raised.value.results, str(raised.value)))
                return [owner.port, *found]
            finally:
                await client.aclose()

        port, *found = asyncio.run(run())
        assert found == [True, ([False], unconfirmed(port, 1))]
    finally:
        mine_client.close()
        other_client.close()
    # x and the other item were applied by the calls that raised: only z is new.
    assert outcomes == [[False, False, True], [False, False, True]]


def test_info_and_create_while_shards_are_missing(cluster: RedisCluster) -> None:
    """The case of the issue: twelve shards over three primaries, one item: ``info()`` counts
    the eleven shards not created yet as empty (their capacity, 0 bytes), and ``create()``
    answers True, having reserved them; blocking and asyncio."""
    client = cluster.client()
    try:
        bf = BloomFilter(client, "t:seen", capacity=1000, error_rate=0.01, shards=12)
        assert bf.add("x") is True
        shard = info_dict(client.execute_command("BF.INFO", bf._core.key_of("x")))
        assert bf.count() == 1
        expected = {
            "Capacity": 12 * shard_capacity(1000, 12),
            "Size": shard["Size"],
            "Number of filters": 1,
            "Number of items inserted": 1,
            "Expansion rate": 2,
            "Shards": 12,
        }
        assert bf.info() == expected
        assert bf.create() is True
        sizes = [info_dict(client.execute_command("BF.INFO", key))["Size"] for key in bf.keys]
        assert bf.info() == {**expected, "Size": sum(sizes), "Number of filters": 12}
        assert bf.create() is False
    finally:
        client.close()

    async def run() -> list[Any]:
        async_client = cluster.async_client(protocol=3)
        try:
            bf = AsyncBloomFilter(async_client, "t:async", 1000, 0.01, shards=12)
            answers: list[Any] = [await bf.add("x"), await bf.info()]
            answers += [
                await bf.create(),
                (await bf.info())["Number of filters"],
                await bf.create(),
            ]
            return answers
        finally:
            await async_client.aclose()

    added, partial, created, filters, again = asyncio.run(run())
    assert (added, created, filters, again) == (True, True, 12, False)
    assert partial == {**expected, "Size": partial["Size"]}
    assert partial["Size"] == shard["Size"]  # shards of the same capacity and error rate


def test_a_cuckoo_filter_sharded_over_the_cluster_deletes_on_each_items_shard(
    cluster: RedisCluster,
) -> None:
    """Twelve shards over three primaries: an item's delete goes to the shard its add went to
    (chosen by its bytes), asked of each primary directly; the asyncio client and
    ``wait_for_replicas`` alike; a delete that deletes nothing still waits on its own node."""
    client = cluster.client(protocol=3)
    try:
        cf = CuckooFilter(client, "cf", 100_000, 0.001, shards=12)
        items = [f"https://example.com/page/{i}" for i in range(50_000)]
        answers = cf.add_many(items, unique=True)
        assert answers.count(True) >= 49_950  # False only for a false positive (0.1%)
        added = [item for item, new in zip(items, answers, strict=True) if new]
        gone, kept = added[::2], added[1::2]
        assert cf.delete_many(gone) == [True] * len(gone)
        assert cf.contains_many(kept) == [True] * len(kept)
        assert sum(cf.contains_many(gone)) <= 50  # false positives only (0.1% of 25,000 is 25)
        assert cf.count() == len(kept)
        expected = Counter(cf._core.key_of(item) for item in gone)
        deleted = {}
        for key in cf.keys:
            with cluster.master_of_slot(key_slot(key.encode())).client() as direct:
                deleted[key] = cuckoo_info(direct.execute_command("CF.INFO", key))[
                    "Number of items deleted"
                ]
        assert deleted == dict(expected)
        assert shards_per_master(cluster, cf.keys) == [4, 4, 4]
        assert cf.info()["Number of items deleted"] == len(gone)
        # One key, through the cluster client: on the primary of its slot.
        single = CuckooFilter(client, "single", 1000)
        assert single.add_many(["a", "b"]) == [True, True] and single.delete("a") is True
        with cluster.master_of_slot(key_slot(b"single")).client() as direct:
            assert direct.execute_command("CF.MEXISTS", "single", "a", "b") == [0, 1]

        # A delete that deletes nothing waits for what its node wrote before it.
        owner = cluster.master_of_slot(key_slot(cf._core.key_of(kept[0]).encode()))
        (replica,) = cluster.replicas_of(owner)
        waiting = CuckooFilter(
            client, "cf", 100_000, 0.001, shards=12, wait_for_replicas=1, wait_timeout=0.2
        )
        eventually(lambda: waiting.add_unique(kept[0]))
        with stopped(replica):
            assert cf.delete(kept[0]) is True  # another client's write, held back
            with pytest.raises(NotReplicatedError) as raised:
                waiting.delete(kept[0])
            assert raised.value.results == [False]
            assert raised.value.address == f"127.0.0.1:{owner.port}"
    finally:
        client.close()

    async def run() -> list[Any]:
        async_client = cluster.async_client()
        try:
            acf = AsyncCuckooFilter(
                async_client, "cf", 100_000, 0.001, shards=12, wait_for_replicas=1, wait_timeout=5
            )
            return [
                await acf.contains_many(kept[1:4]),
                await acf.delete_many(kept[1:4]),
                await acf.contains_many(kept[1:4]),
                await acf.add_many(kept[1:4], unique=True),
                await acf.count(),
                await acf.drop(),
            ]
        finally:
            await async_client.aclose()

    assert asyncio.run(run()) == [
        [True] * 3,
        [True] * 3,
        [False] * 3,
        [True] * 3,
        len(kept) - 1,
        13,
    ]
