"""What choosing an item's shard costs the client, per item, in each version of the sharding
scheme (docs/sharding.md): version 1 (BLAKE2b, personalised) against version 2 (SHA-256 of a
prefix and the item), for the shard function alone and for ``Core.key_of`` (the bytes of the
item, then its shard's key), over URLs and over scrapy-redis fingerprints (40 hex digits).

No server: ``python bench/shard_hash.py`` from python/ with the package installed
(``target/pyvenv/bin/python``). Each figure is the best of ``--repeat`` runs over ``--items``
items, in nanoseconds per item; the runs alternate between the versions.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from redis_bf import FilterOptions
from redis_bf._core import Core
from redis_bf._shards import Manifest, shard_v1, shard_v2

SHARDS = 12


def best(calls: dict[int, Callable[[], Any]], items: int, repeat: int) -> dict[int, float]:
    """The fastest of ``repeat`` runs of each call, in nanoseconds per item; the runs alternate
    between the calls, so that a busy machine slows both alike, and are short, so that some run
    of each goes uninterrupted."""
    fastest = {version: float("inf") for version in calls}
    for _ in range(repeat):
        for version, call in calls.items():
            start = time.perf_counter()
            call()
            fastest[version] = min(fastest[version], time.perf_counter() - start)
    return {version: seconds / items * 1e9 for version, seconds in fastest.items()}


def shard_all(function: Callable[[bytes, int], int], data: list[bytes]) -> None:
    for item in data:
        function(item, SHARDS)


def key_all(filter_core: Core, items: list[str]) -> None:
    key_of = filter_core.key_of
    for item in items:
        key_of(item)


def core(version: int) -> Core:
    """A 12-shard Bloom filter's core, following a manifest of ``version``."""
    filter_core = Core(
        None,
        "crawl:seen",
        FilterOptions(1_000_000, 0.001),
        shards=SHARDS,
        batch_size=1000,
        pipeline_size=16,
        wait_for_replicas=0,
        wait_timeout=1.0,
    )
    filter_core.adopt(Manifest(version, "bloom", None, {}))
    return filter_core


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    sets = {
        "URLs": [f"https://example.com/catalogue/page-{i}.html" for i in range(args.items)],
        "fingerprints": [hashlib.sha1(str(i).encode()).hexdigest() for i in range(args.items)],
    }
    for name, items in sets.items():
        data = [item.encode() for item in items]
        functions = {1: shard_v1, 2: shard_v2}
        shard_only = {v: partial(shard_all, f, data) for v, f in functions.items()}
        key_of = {v: partial(key_all, core(v), items) for v in functions}
        for label, calls in (("shard function", shard_only), ("key_of", key_of)):
            ns = best(calls, len(items), args.repeat)
            print(
                f"{name:12} {label:14} v1 {ns[1]:5.0f} ns  v2 {ns[2]:5.0f} ns  "
                f"v2 - v1 {ns[2] - ns[1]:+4.0f} ns ({ns[2] / ns[1]:.2f}x)"
            )


if __name__ == "__main__":
    main()
