"""Drives redis-bf's cuckoo filters through redis-py's `r.cf()` API, the way applications use it.

Usage: redis_py_cf.py PORT PROTOCOL   (PROTOCOL is 2 or 3)

First redis-py 8.1.0's own cuckoo tests, ported (its tests/test_bloom.py: the `cf()` lines of
test_create and test_bf_reserve, test_cf_add_and_insert, test_cf_exists_and_del; the same two in
tests/test_asyncio/test_bloom.py through redis.asyncio; the `cf()` lines of tests/test_commands.py's
ACL tests), on a `decode_responses=True` client as its fixture makes, and with every reply checked
exactly: RESP2 answers integers, RESP3 booleans (RedisBloom 8's: CF.ADD, CF.ADDNX, CF.EXISTS,
CF.MEXISTS, CF.DEL and CF.INSERT's entries; CF.INSERTNX and CF.COUNT stay integers). Then every
other CFCommands method: create's options together, insert/insertnx with capacity and nocreate,
missing keys, a full filter, scandump/loadchunk copying a grown filter to another key and back
(binary chunks, so on a client without decode_responses), and CF.COMPACT (redis-py has no method
for it) through execute_command. All of it in redis-py's default (legacy) response shapes and in
its unified ones (`legacy_responses=False`, where CF.INFO is a CFInfo in RESP3 too). Last, what
this module deliberately answers otherwise than RedisBloom, each named where it is checked.

Exits non-zero, with the failing assertion, if any answer is not the expected one.
"""

import asyncio
import sys

import redis
import redis.asyncio
from redis.commands.bf.info import CFInfo
from redis.exceptions import NoPermissionError

port, protocol = int(sys.argv[1]), int(sys.argv[2])

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"

# CF.INFO's fields, RedisBloom's names, and the CFInfo attribute redis-py parses each into.
INFO_FIELDS = {
    "Size": "size",
    "Number of buckets": "bucketNum",
    "Number of filters": "filterNum",
    "Number of items inserted": "insertedNum",
    "Number of items deleted": "deletedNum",
    "Bucket size": "bucketSize",
    "Expansion rate": "expansionRate",
    "Max iterations": "maxIteration",
}


def yes(value):
    """RESP3 answers booleans, RESP2 integers."""
    return value is True if protocol == 3 else value == 1 and not isinstance(value, bool)


def no(value):
    return value is False if protocol == 3 else value == 0 and not isinstance(value, bool)


def integers(values, expected):
    """CF.INSERTNX's entries: integers in both protocols."""
    return list(values) == expected and not any(isinstance(v, bool) for v in values)


def fails(call, message, kind=redis.ResponseError):
    """The call raises `kind` with this text (redis-py strips the `ERR ` code, keeps the rest)."""
    try:
        call()
    except kind as err:
        assert str(err) == message, (str(err), message)
    else:
        raise AssertionError(f"expected {message!r}")


def checks(r, legacy):
    """Every check, on the client `r` (decode_responses=True) and `raw` (bytes)."""
    shape = f"RESP{protocol} {'legacy' if legacy else 'unified'}"
    raw = redis.Redis(
        host="127.0.0.1", port=port, protocol=protocol, legacy_responses=legacy
    )
    cf = r.cf()
    r.flushall()

    def info(key):
        """CF.INFO as {RedisBloom's field: value}, checking the shape redis-py gives it: a CFInfo
        (RESP2, and unified RESP3), a map (legacy RESP3)."""
        reply = cf.info(key)
        if protocol == 3 and legacy:
            assert isinstance(reply, dict), (shape, reply)
            fields = {k.decode() if isinstance(k, bytes) else k: v for k, v in reply.items()}
            assert list(fields) == list(INFO_FIELDS), (shape, fields)
            return fields
        assert isinstance(reply, CFInfo), (shape, reply)
        return {name: getattr(reply, attribute) for name, attribute in INFO_FIELDS.items()}

    def expect_info(key, size, buckets, filters, inserted, deleted, bucket_size, expansion,
                    iterations):
        got = info(key)
        expected = dict(
            zip(
                INFO_FIELDS,
                [size, buckets, filters, inserted, deleted, bucket_size, expansion, iterations],
            )
        )
        assert got == expected, (shape, key, got, expected)
        assert not any(isinstance(v, bool) for v in got.values()), (shape, key, got)

    # --- redis-py's test_create and test_bf_reserve (their cf() lines): create and its alias
    # reserve, each option alone; CF.RESERVE answers OK, which redis-py makes True.
    assert cf.create("cuckoo", 1000) is True
    assert cf.create("cuckoo_e", 1000, expansion=1) is True
    assert cf.create("cuckoo_bs", 1000, bucket_size=4) is True
    assert cf.create("cuckoo_mi", 1000, max_iterations=10) is True
    assert cf.reserve("r_cuckoo", 1000) is True
    assert cf.reserve("r_cuckoo_e", 1000, expansion=1) is True
    assert cf.reserve("r_cuckoo_bs", 1000, bucket_size=4) is True
    assert cf.reserve("r_cuckoo_mi", 1000, max_iterations=10) is True
    for prefix in ["", "r_"]:
        expect_info(f"{prefix}cuckoo", 1136, 512, 1, 0, 0, 2, 1, 20)
        expect_info(f"{prefix}cuckoo_e", 1136, 512, 1, 0, 0, 2, 1, 20)
        expect_info(f"{prefix}cuckoo_bs", 1136, 256, 1, 0, 0, 4, 1, 20)
        expect_info(f"{prefix}cuckoo_mi", 1136, 512, 1, 0, 0, 2, 1, 10)
    # All three options at once (redis-py sends EXPANSION, BUCKETSIZE, MAXITERATIONS).
    assert cf.create("all", 1000, expansion=2, bucket_size=4, max_iterations=15) is True
    expect_info("all", 1136, 256, 1, 0, 0, 4, 2, 15)
    fails(lambda: cf.create("cuckoo", 1000), "item exists")
    fails(lambda: cf.create("tiny", 1), "Capacity must be at least (BucketSize * 2)")
    r.flushall()

    # --- redis-py's test_cf_add_and_insert, exact.
    assert cf.create("cuckoo", 1000) is True
    assert yes(cf.add("cuckoo", "filter"))
    assert no(cf.addnx("cuckoo", "filter"))
    assert yes(cf.addnx("cuckoo", "newItem"))
    # CF.INSERT's entries: booleans in RESP3; CF.INSERTNX's: integers in both.
    [a] = cf.insert("captest", ["foo"])
    assert yes(a), a
    [a] = cf.insert("captest", ["foo"], capacity=1000)
    assert yes(a), a
    assert integers(cf.insertnx("captest", ["bar"]), [1])
    # nocreate="1", as redis-py's test passes it: any value sends the bare NOCREATE token.
    assert integers(cf.insertnx("captest", ["food"], nocreate="1"), [1])
    assert integers(cf.insertnx("captest", ["foo", "bar", "baz"]), [0, 0, 1])
    assert integers(cf.insertnx("captest", ["bar"], capacity=1000), [0])
    [a] = cf.insert("empty1", ["foo"], capacity=1000)
    assert yes(a), a
    assert integers(cf.insertnx("empty2", ["bar"], capacity=1000), [1])
    # redis-py checks inserted 5, deleted 0, filters 1: here every field. "captest" was made by
    # CF.INSERT without CAPACITY: the default 1024.
    expect_info("captest", 1136, 512, 1, 5, 0, 2, 1, 20)
    expect_info("empty1", 1136, 512, 1, 1, 0, 2, 1, 20)
    expect_info("empty2", 1136, 512, 1, 1, 0, 2, 1, 20)
    expect_info("cuckoo", 1136, 512, 1, 2, 0, 2, 1, 20)

    # --- redis-py's test_cf_exists_and_del, exact.
    r.flushall()
    assert cf.create("cuckoo", 1000) is True
    assert yes(cf.add("cuckoo", "filter"))
    assert yes(cf.exists("cuckoo", "filter"))
    assert no(cf.exists("cuckoo", "notexist"))
    answers = cf.mexists("cuckoo", "filter", "notexist")
    assert len(answers) == 2 and yes(answers[0]) and no(answers[1]), answers
    assert cf.count("cuckoo", "filter") == 1
    assert cf.count("cuckoo", "notexist") == 0
    assert yes(cf.delete("cuckoo", "filter"))
    assert cf.count("cuckoo", "filter") == 0
    # Further: a second delete finds nothing; the deletes are counted.
    assert no(cf.delete("cuckoo", "filter"))
    assert no(cf.exists("cuckoo", "filter"))
    expect_info("cuckoo", 1136, 512, 1, 0, 1, 2, 1, 20)

    # --- Copies: CF.ADD adds one more each time, CF.COUNT counts them, CF.DEL takes one away.
    assert yes(cf.add("cuckoo", "twice"))
    assert yes(cf.add("cuckoo", "twice"))
    assert no(cf.addnx("cuckoo", "twice"))
    assert cf.count("cuckoo", "twice") == 2
    assert yes(cf.delete("cuckoo", "twice"))
    assert cf.count("cuckoo", "twice") == 1
    assert yes(cf.exists("cuckoo", "twice"))

    # --- insert / insertnx with both options; nocreate on a missing key.
    answers = cf.insert("made", ["p", "q", "p"], capacity=100)
    assert len(answers) == 3 and all(yes(a) for a in answers), answers
    expect_info("made", 240, 64, 1, 3, 0, 2, 1, 20)
    assert cf.count("made", "p") == 2
    answers = cf.insert("made", ["r"], capacity=5000, nocreate=True)  # capacity ignored: it exists
    assert len(answers) == 1 and yes(answers[0]), answers
    assert integers(cf.insertnx("made", ["r", "s"], capacity=5000, nocreate=True), [0, 1])
    expect_info("made", 240, 64, 1, 5, 0, 2, 1, 20)
    assert integers(cf.insertnx("made-nx", ["p", "p", "q"], capacity=500), [1, 0, 1])
    expect_info("made-nx", 624, 256, 1, 2, 0, 2, 1, 20)
    fails(lambda: cf.insert("nowhere", ["p"], nocreate=True), "not found")
    fails(lambda: cf.insertnx("nowhere", ["p"], capacity=100, nocreate=True), "not found")
    fails(
        lambda: cf.insert("nowhere", ["p"], capacity=1),
        "Capacity must be at least (BucketSize * 2)",
    )

    # --- a missing key: lookups answer nothing found, the rest "not found" (RedisBloom's texts:
    # CF.DEL's is "Not found").
    assert no(cf.exists("nowhere", "a"))
    answers = cf.mexists("nowhere", "a", "b")
    assert len(answers) == 2 and all(no(a) for a in answers), answers
    assert cf.count("nowhere", "a") == 0
    fails(lambda: cf.delete("nowhere", "a"), "Not found")
    fails(lambda: cf.info("nowhere"), "not found")
    fails(lambda: cf.scandump("nowhere", 0), "not found")
    assert r.exists("nowhere") == 0

    # --- a full filter (EXPANSION 0 never grows): CF.ADD raises "Filter is full"; CF.INSERT
    # answers -1 per item refused in RESP2 and false in RESP3, CF.INSERTNX -1 in both.
    assert cf.create("full", 4, expansion=0) is True
    added = []
    for i in range(8):
        try:
            added.append(cf.add("full", f"f{i}"))
        except redis.ResponseError as err:
            assert str(err) == "Filter is full", err
            added.append(None)
    assert [yes(a) for a in added[:4]] == [True] * 4 and added[4:] == [None] * 4, added
    answers = cf.insert("full", ["z1", "z2"])
    if protocol == 3:
        assert answers == [False, False] and all(a is False for a in answers), answers
    else:
        assert integers(answers, [-1, -1]), answers
    assert integers(cf.insertnx("full", ["z1", "f0"]), [-1, 0])
    expect_info("full", 120, 2, 1, 4, 0, 2, 0, 20)

    # --- scandump / loadchunk: a filter grown to three sub-filters, copied chunk by chunk (the
    # loop redis-py's own BF test writes) to another key, on the bytes client.
    rcf = raw.cf()
    assert rcf.create("grown", 64, expansion=2, bucket_size=4) is True
    for i in range(300):
        assert yes(rcf.add("grown", f"item:{i}")), i
    for i in range(0, 300, 3):
        assert yes(rcf.delete("grown", f"item:{i}")), i
    # RedisBloom's compaction ran inside the deletes (CF.DEL compacts a filter of several
    # sub-filters once its deletes outnumber a tenth of its items): 3 deletes left counted.
    expect_info("grown", 640, 16, 3, 200, 3, 4, 2, 20)
    # CF.COMPACT: redis-py 8.1.0 has no method for it; execute_command sends it.
    assert raw.execute_command("CF.COMPACT", "grown") == b"OK"
    expect_info("grown", 640, 16, 3, 200, 0, 4, 2, 20)
    chunks = []
    iterator = 0
    while True:
        iterator, data = rcf.scandump("grown", iterator)
        if iterator == 0:
            assert data is None, data
            break
        assert isinstance(data, bytes), data
        chunks.append((iterator, data))
    # the header (38 bytes, RedisBloom's), then each sub-filter's buckets
    assert [(i, len(d)) for i, d in chunks] == [(1, 38), (65, 64), (193, 128), (449, 256)], [
        (i, len(d)) for i, d in chunks
    ]
    for iterator, data in chunks:
        assert rcf.loadchunk("grown-copy", iterator, data) == b"OK"
    expect_info("grown-copy", 640, 16, 3, 200, 0, 4, 2, 20)
    debug = raw.execute_command("CF.DEBUG", "grown")
    assert debug == (
        b"bktsize:4 buckets:16 items:200 deletes:0 filters:3 max_iterations:20 expansion:2"
    ), debug
    assert raw.execute_command("CF.DEBUG", "grown-copy") == debug
    assert raw.execute_command("DEBUG", "DIGEST-VALUE", "grown-copy") == raw.execute_command(
        "DEBUG", "DIGEST-VALUE", "grown"
    )
    items = [f"item:{i}" for i in range(300)]
    found = rcf.mexists("grown-copy", *items)
    assert found == rcf.mexists("grown", *items)
    assert [yes(f) for i, f in enumerate(found) if i % 3] == [True] * 200
    for item in ["item:1", "item:2", "item:299", "nope"]:
        assert rcf.exists("grown-copy", item) == rcf.exists("grown", item), item
        assert rcf.count("grown-copy", item) == rcf.count("grown", item), item
    # ... and back over the original, deleted first, as redis-py's BF test does.
    assert raw.delete("grown") == 1
    for iterator, data in chunks:
        assert rcf.loadchunk("grown", iterator, data) == b"OK"
    assert raw.execute_command("CF.DEBUG", "grown") == debug
    assert rcf.mexists("grown", *items) == found
    # An empty filter dumps nothing: (0, None) at once, as RedisBloom (node-redis tests it).
    assert rcf.create("empty", 4) is True
    assert rcf.scandump("empty", 0) == [0, None]

    # --- Where this module answers otherwise than RedisBloom, on purpose.
    assert r.set("string", "x") is True
    assert raw.bf().add("bloom", "x") in (1, True)
    for key in ["string", "bloom"]:
        # A key of another type, a Bloom filter's included: WRONGTYPE for lookups too (RedisBloom
        # answers 0, false, [0] and "Not found" for CF.EXISTS, CF.MEXISTS, CF.COUNT and CF.DEL).
        fails(lambda key=key: cf.exists(key, "a"), WRONGTYPE)
        fails(lambda key=key: cf.mexists(key, "a", "b"), WRONGTYPE)
        fails(lambda key=key: cf.count(key, "a"), WRONGTYPE)
        fails(lambda key=key: cf.delete(key, "a"), WRONGTYPE)
        fails(lambda key=key: cf.add(key, "a"), WRONGTYPE)
        fails(lambda key=key: cf.insertnx(key, ["a"]), WRONGTYPE)
        fails(lambda key=key: cf.info(key), WRONGTYPE)
    # One item's two buckets hold four copies of it (bucket size 2): a fifth CF.ADD is refused
    # (RedisBloom answers 1 and adds a sub-filter each time, growing without end). CF.ADDNX and
    # CF.INSERTNX answer "there" as before.
    assert cf.create("copies", 1024, expansion=2) is True
    for _ in range(4):
        assert yes(cf.add("copies", "same"))
    fails(
        lambda: cf.add("copies", "same"),
        "item added too many times: its buckets hold nothing but copies of it "
        "(delete some, or add it with CF.ADDNX)",
    )
    assert cf.count("copies", "same") == 4
    assert no(cf.addnx("copies", "same"))
    assert integers(cf.insertnx("copies", ["same"]), [0])
    expect_info("copies", 1136, 512, 1, 4, 0, 2, 2, 20)
    # redis-py builds every command in the one order RedisBloom documents, so the strict grammar
    # (no unknown or repeated option) never shows through its API; the error texts keep their
    # `ERR` code here where RedisBloom sends some without one ("Not found", "Filter is full"),
    # which redis-py hides: it strips `ERR ` and raises ResponseError either way.

    raw.close()
    print(f"  {shape}: ok")


def acl_checks(r):
    """The cf() lines of redis-py's test_acl_modules_commands (and of
    test_acl_modules_category_commands where the server lists module categories)."""
    username, password = "redis-py-user", "pass-for-test-user"
    r.flushall()
    r.acl_setuser(
        username,
        enabled=True,
        reset=True,
        passwords=[f"+{password}"],
        categories=["-all"],
        commands=["+cf.reserve", "-cf.info"],
        keys=["*"],
    )
    user = redis.Redis(
        host="127.0.0.1",
        port=port,
        protocol=protocol,
        decode_responses=True,
        username=username,
        password=password,
    )
    assert user.cf().create("cuckoo", 1000) is True
    try:
        user.cf().info("cuckoo")
        raise AssertionError("CF.INFO must be refused")
    except NoPermissionError:
        pass
    user.close()
    # Redis 7.4+ lets modules add ACL categories; this module's CF commands are @cuckoo there, as
    # RedisBloom 8's (and not @bloom, which holds the BF commands).
    if "cuckoo" in r.acl_cat():
        r.acl_setuser(
            username,
            enabled=True,
            reset=True,
            passwords=[f"+{password}"],
            categories=["-all", "+@cuckoo"],
            keys=["*"],
        )
        user = redis.Redis(
            host="127.0.0.1",
            port=port,
            protocol=protocol,
            decode_responses=True,
            username=username,
            password=password,
        )
        assert user.cf().create("cuckoo-2", 1000) is True
        assert yes(user.cf().add("cuckoo-2", "a"))
        info = user.cf().info("cuckoo-2")
        inserted = info["Number of items inserted"] if protocol == 3 else info.insertedNum
        assert inserted == 1, info
        try:
            user.bf().create("bloom", 0.01, 1000)
            raise AssertionError("BF.RESERVE must be refused")
        except NoPermissionError:
            pass
        user.close()
    assert r.acl_deluser(username) == 1


async def async_checks():
    """redis-py's tests/test_asyncio/test_bloom.py: test_cf_add_and_insert and
    test_cf_exists_and_del, through redis.asyncio."""
    r = redis.asyncio.Redis(host="127.0.0.1", port=port, protocol=protocol, decode_responses=True)
    await r.flushall()
    cf = r.cf()
    assert await cf.create("cuckoo", 1000) is True
    assert yes(await cf.add("cuckoo", "filter"))
    assert no(await cf.addnx("cuckoo", "filter"))
    assert yes(await cf.addnx("cuckoo", "newItem"))
    [a] = await cf.insert("captest", ["foo"])
    assert yes(a), a
    [a] = await cf.insert("captest", ["foo"], capacity=1000)
    assert yes(a), a
    assert integers(await cf.insertnx("captest", ["bar"]), [1])
    assert integers(await cf.insertnx("captest", ["food"], nocreate="1"), [1])
    assert integers(await cf.insertnx("captest", ["foo", "bar", "baz"]), [0, 0, 1])
    assert integers(await cf.insertnx("captest", ["bar"], capacity=1000), [0])
    [a] = await cf.insert("empty1", ["foo"], capacity=1000)
    assert yes(a), a
    assert integers(await cf.insertnx("empty2", ["bar"], capacity=1000), [1])
    reply = await cf.info("captest")
    if protocol == 3:
        assert reply["Number of items inserted"] == 5, reply
        assert reply["Number of items deleted"] == 0, reply
        assert reply["Number of filters"] == 1, reply
    else:
        assert (reply.insertedNum, reply.deletedNum, reply.filterNum) == (5, 0, 1), vars(reply)

    await r.flushall()
    assert await cf.create("cuckoo", 1000) is True
    assert yes(await cf.add("cuckoo", "filter"))
    assert yes(await cf.exists("cuckoo", "filter"))
    assert no(await cf.exists("cuckoo", "notexist"))
    assert await cf.count("cuckoo", "filter") == 1
    assert await cf.count("cuckoo", "notexist") == 0
    assert yes(await cf.delete("cuckoo", "filter"))
    assert await cf.count("cuckoo", "filter") == 0
    await r.aclose()


for legacy in (True, False):
    client = redis.Redis(
        host="127.0.0.1",
        port=port,
        protocol=protocol,
        decode_responses=True,
        legacy_responses=legacy,
    )
    assert client.connection_pool.get_connection().protocol in (protocol, str(protocol))
    checks(client, legacy)
    client.close()
client = redis.Redis(host="127.0.0.1", port=port, protocol=protocol, decode_responses=True)
acl_checks(client)
client.close()
asyncio.run(async_checks())

print(f"redis-py {redis.__version__}, RESP{protocol}: ok")
