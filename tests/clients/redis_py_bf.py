"""Drives redis-bf through redis-py's `r.bf()` API, the way applications use it.

Usage: redis_py_bf.py PORT PROTOCOL   (PROTOCOL is 2 or 3)
Exits non-zero, with the failing assertion, if any answer is not what RedisBloom would give.
"""

import sys

import redis

port, protocol = int(sys.argv[1]), int(sys.argv[2])
r = redis.Redis(host="127.0.0.1", port=port, protocol=protocol)
assert r.connection_pool.get_connection().protocol in (protocol, str(protocol))
bf = r.bf()


def yes(value):
    """RESP3 answers booleans, RESP2 integers."""
    return value is True if protocol == 3 else value == 1 and not isinstance(value, bool)


def no(value):
    return value is False if protocol == 3 else value == 0 and not isinstance(value, bool)


def info(key):
    """BF.INFO as a dict, whether redis-py parsed it into a BFInfo or left it a map."""
    reply = bf.info(key)
    if isinstance(reply, dict):
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in reply.items()}
    return {
        "Capacity": reply.capacity,
        "Size": reply.size,
        "Number of filters": reply.filterNum,
        "Number of items inserted": reply.insertedNum,
        "Expansion rate": reply.expansionRate,
    }


r.flushall()

# create (BF.RESERVE) in its three forms
assert bf.create("urls", 0.01, 1000) is True
assert bf.create("wide", 0.001, 100, expansion=4) is True
assert bf.create("fixed", 0.01, 2, noScale=True) is True
try:
    bf.create("urls", 0.01, 1000)
    raise AssertionError("a second create must fail")
except redis.ResponseError as err:
    assert str(err) == "item exists", err

# add / madd
assert yes(bf.add("urls", "https://example.com/"))
assert no(bf.add("urls", "https://example.com/"))
answers = bf.madd("urls", "a", "b", "a")
assert [yes(answers[0]), yes(answers[1]), no(answers[2])] == [True, True, True], answers

# a full non-scaling filter: the error is the last element
answers = bf.madd("fixed", "x", "y", "z")
assert yes(answers[0]) and yes(answers[1]), answers
assert isinstance(answers[2], redis.ResponseError), answers
assert str(answers[2]) == "non scaling filter is full", answers

# insert, with options in redis-py's own order, and NOCREATE
answers = bf.insert("inserted", ["p", "q"], capacity=500, error=0.001, expansion=3)
assert all(yes(a) for a in answers), answers
answers = bf.insert("inserted-fixed", ["p"], capacity=10, noScale=True)
assert all(yes(a) for a in answers), answers
try:
    bf.insert("nowhere", ["p"], noCreate=True)
    raise AssertionError("NOCREATE on a missing key must fail")
except redis.ResponseError as err:
    assert str(err) == "not found", err

# exists / mexists
assert yes(bf.exists("urls", "https://example.com/"))
assert no(bf.exists("urls", "https://example.org/"))
assert no(bf.exists("missing", "a"))
answers = bf.mexists("urls", "a", "zzz", "b")
assert yes(answers[0]) and no(answers[1]) and yes(answers[2]), answers

# info and card
urls = info("urls")
assert urls["Capacity"] == 1000, urls
assert urls["Number of filters"] == 1, urls
assert urls["Number of items inserted"] == 3, urls
assert urls["Expansion rate"] == 2, urls
assert urls["Size"] > 1000 * 11 // 8, urls
assert info("wide")["Expansion rate"] == 4
assert info("fixed")["Expansion rate"] is None
assert info("inserted")["Capacity"] == 500
assert info("inserted")["Expansion rate"] == 3
assert info("inserted-fixed")["Expansion rate"] is None
assert bf.card("urls") == 3
assert bf.card("missing") == 0

# scandump / loadchunk: copy a filter chunk by chunk, the loop applications write
chunks = []
iterator = 0
while True:
    iterator, data = bf.scandump("urls", iterator)
    if iterator == 0:
        break
    chunks.append((iterator, data))
assert chunks[0][0] == 1 and chunks[0][1].startswith(b"redis-bf"), chunks[0]
for iterator, data in chunks:
    reply = bf.loadchunk("urls-copy", iterator, data)
    assert reply in (b"OK", "OK", True), reply
assert info("urls-copy") == info("urls")
assert yes(bf.exists("urls-copy", "https://example.com/"))
assert r.execute_command("DEBUG", "DIGEST-VALUE", "urls-copy") == r.execute_command(
    "DEBUG", "DIGEST-VALUE", "urls"
)

print(f"redis-py {redis.__version__}, RESP{protocol}: ok")
