"""The Python package's side of the cross-language tests (node/test/cross.test.js): runs operations
of a ``redis_bf.BloomFilter`` or ``CuckooFilter`` and prints their answers, so that a Node test can
check that each package reads and writes the other's filters.

The request is one JSON object on standard input::

    {"url": "redis://127.0.0.1:7000", "cluster": true, "kind": "bloom", "key": "crawl",
     "options": {"capacity": 1000, "error_rate": 0.01, "shards": 12, "window": null},
     "ops": [{"op": "add_many", "items": [{"str": "a"}, {"int": "42"}, {"bytes_hex": "00"}]}]}

Items are spelled as in docs/sharding-vectors.json (``str``, ``int``, ``float``, ``bytes_hex``).
The answer is a JSON array, one entry per operation: its result (a bool, a list of bools, a
number, an object), or ``{"error": <class name>, "message": <text>}`` for one that raised, after
which the rest are not run.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import redis
from redis.cluster import RedisCluster

from redis_bf import BloomFilter, CuckooFilter


def item(spelled: dict[str, Any]) -> Any:
    ((kind, value),) = spelled.items()
    return {
        "str": lambda: value,
        "int": lambda: int(value),
        "float": lambda: float(value),
        "bytes_hex": lambda: bytes.fromhex(value),
    }[kind]()


def main() -> None:
    request = json.load(sys.stdin)
    client: Any = (
        RedisCluster.from_url(request["url"])
        if request["cluster"]
        else redis.Redis.from_url(request["url"])
    )
    options = dict(request["options"])
    capacity = options.pop("capacity")
    if request["kind"] == "bloom":
        error_rate = options.pop("error_rate")
        bf: Any = BloomFilter(client, request["key"], capacity, error_rate, **options)
    else:
        bf = CuckooFilter(client, request["key"], capacity, **options)
    answers: list[Any] = []
    try:
        for step in request["ops"]:
            args = [[item(spelled) for spelled in step["items"]]] if "items" in step else []
            if "item" in step:
                args = [item(step["item"])]
            kwargs = step.get("kwargs", {})
            answers.append(getattr(bf, step["op"])(*args, **kwargs))
    except Exception as error:  # reported to the Node side, which checks it
        answers.append({"error": type(error).__name__, "message": str(error)})
    finally:
        client.close()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
