"""The sharded filter's row of the benchmark: items a second through ``BloomFilter(...,
shards=12)`` on a three-primary cluster (harness/redis_cluster.py) against one key on one server,
batches of 1,000 (``add_many`` and ``contains_many``, 16 batches to a round trip), and the memory
per item of each (MEMORY USAGE of every key the filter has, asked on the node that holds it).

Both run from this one Python process: the client's own work (hashing each item to its shard,
building the commands) is part of the figure, as it is for a user.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from redis.crc import key_slot

from redis_bf import BloomFilter

from redis_cluster import RedisCluster
from redis_server import RedisServer

ERROR_RATE = 0.001
SHARDS = 12


def timed(call: Callable[[], Any], items: int) -> float:
    """Items a second through ``call``."""
    start = time.perf_counter()
    call()
    return items / (time.perf_counter() - start)


def measure(bf: BloomFilter, items: list[str], memory: Callable[[], int]) -> tuple[float, ...]:
    adds = timed(lambda: bf.add_many(items), len(items))
    lookups = timed(lambda: bf.contains_many(items), len(items))
    return adds, lookups, memory() / len(items)


def memory_on_cluster(cluster: RedisCluster, keys: tuple[str, ...]) -> int:
    total = 0
    for master in cluster.masters():
        ranges = cluster.slots_of(master)
        with master.client() as direct:
            for key in keys:
                slot = key_slot(key.encode())
                if any(low <= slot <= high for low, high in ranges):
                    total += int(direct.memory_usage(key, samples=0) or 0)
    return total


def table(count: int) -> str:
    """The row of the one key and of the sharded filter, ``count`` items each."""
    items = [f"https://example.com/page/{i}" for i in range(count)]
    with RedisServer("bench-one-key") as server:
        client = server.client(socket_timeout=None)
        one = BloomFilter(client, "one", count, ERROR_RATE)
        single = measure(one, items, lambda: int(client.memory_usage("one", samples=0) or 0))
    with RedisCluster("bench-cluster") as cluster:
        client = cluster.client(socket_timeout=None)
        sharded = BloomFilter(client, "sharded", count, ERROR_RATE, shards=SHARDS)
        spread = measure(sharded, items, lambda: memory_on_cluster(cluster, sharded.keys))
        client.close()
    rows = [
        f"{count:,} items at {ERROR_RATE:g}, batches of 1,000 from one Python process:",
        "",
        "| filter | add_many, items/s | contains_many, items/s | memory per item |",
        "|---|---|---|---|",
        f"| one key on one server | {single[0]:,.0f} | {single[1]:,.0f} | {single[2]:.3f} bytes |",
        f"| {SHARDS} shards on a 3-primary cluster | {spread[0]:,.0f} "
        f"({spread[0] / single[0]:.2f}x) | {spread[1]:,.0f} ({spread[1] / single[1]:.2f}x) | "
        f"{spread[2]:.3f} bytes ({spread[2] / single[2]:.3f}x) |",
    ]
    return "\n".join(rows)
