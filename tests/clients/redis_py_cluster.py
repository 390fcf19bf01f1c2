"""Drives redis-bf through redis-py's cluster client (`RedisCluster(...).bf()` and `.cf()`) on a
3-primary Redis Cluster: every BF and CF command must go to the primary that owns its key's slot.

Usage: redis_py_cluster.py PORT PORT PORT   (the three primaries, each owning slots already)
Runs once in RESP2 and once in RESP3. 12 Bloom filters and 8 cuckoo filters live on each primary
(picked by hash slot), and each primary gets the very same commands, so that every primary's INFO
commandstats must show the same exact counts, with no command rejected and no MOVED or ASK ever
answered: the client routed each command itself, by its key. A Bloom filter and a cuckoo filter
are copied with SCANDUMP/LOADCHUNK to keys whose slots another primary owns, and the copies answer
as the originals (CF.DEBUG and CF.COMPACT, which redis-py has no methods for, go through
execute_command and are routed by their key all the same). Exits non-zero, with the failing
assertion, otherwise; prints "cluster: ok" at the end.
"""

import sys

import redis
from redis.cluster import RedisCluster, key_slot

ports = [int(port) for port in sys.argv[1:]]
assert len(ports) == 3, "three ports, one per primary"
nodes = {port: redis.Redis(host="127.0.0.1", port=port) for port in ports}

# Who owns which slot, as the servers say (not the client under test).
owner_of_slot = {}
for start, end, primary, *_replicas in nodes[ports[0]].execute_command("CLUSTER SLOTS"):
    for slot in range(start, end + 1):
        owner_of_slot[slot] = primary[1]
assert len(owner_of_slot) == 16384, len(owner_of_slot)
assert set(owner_of_slot.values()) == set(ports), owner_of_slot.values()


def owner(key):
    slot = key_slot(key.encode())
    assert nodes[ports[0]].cluster("keyslot", key) == slot, key
    return owner_of_slot[slot]


def names(prefix, count):
    """`count` key names per primary, {port: [names]}, found by hash slot."""
    found = {port: [] for port in ports}
    index = 0
    while any(len(keys) < count for keys in found.values()):
        name = f"{prefix}:{index}"
        keys = found[owner(name)]
        if len(keys) < count:
            keys.append(name)
        index += 1
    return found


FILTERS = names("filter", 12)
MISSING = names("missing", 1)
COPIES = names("copy", 1)
CUCKOOS = names("cuckoo", 8)
CF_COPIES = names("cuckoo-copy", 1)
# Keys that hash to slots of different primaries: the test means nothing otherwise.
assert all(owner(key) == port for port, keys in FILTERS.items() for key in keys)
assert len({key_slot(key.encode()) for keys in FILTERS.values() for key in keys}) == 36
assert all(owner(key) == port for port, keys in CUCKOOS.items() for key in keys)
assert len({key_slot(key.encode()) for keys in CUCKOOS.values() for key in keys}) == 24

# The four ways a filter is created, by its position on its primary (each primary gets each three
# times): (capacity, expansion rate, items counted at the end).
FORMS = [(1000, 2, 4), (100, 4, 4), (500, 3, 6), (10, None, 5)]

# What INFO commandstats must show on every primary, per protocol run: 12 filters, 1 missing key,
# 1 copy made from it and 1 copy made to it.
EXPECTED_CALLS = {
    "bf.reserve": (6, 0),  # (calls, failed calls): forms 0 and 1
    "bf.insert": (6 + 12 + 1, 1),  # forms 2 and 3, NOCREATE on each filter, and on the missing key
    "bf.add": (24, 0),
    "bf.madd": (12, 0),
    "bf.exists": (24 + 1 + 5 + 5, 0),  # and the missing key, the original and the copy
    "bf.mexists": (12 + 1 + 1 + 1, 0),  # and the same three
    "bf.card": (12 + 1 + 1, 0),  # and the missing key and the copy
    "bf.info": (12 + 1 + 1 + 1, 1),  # and the missing key, the original and the copy
    "bf.scandump": (3, 0),  # header, one data chunk, the end
    "bf.loadchunk": (2, 0),
    "bf.debug": (2, 0),
}

# The four ways a cuckoo filter is created, by its position on its primary (each primary gets each
# twice): CF.INFO's fields at the end (Size, Number of buckets, Number of filters, Number of items
# inserted, Number of items deleted, Bucket size, Expansion rate, Max iterations).
CF_FORMS = [
    (1136, 512, 1, 4, 1, 2, 1, 20),  # CF.RESERVE key 1000
    (1136, 256, 1, 4, 1, 4, 2, 15),  # CF.RESERVE key 1000 EXPANSION 2 BUCKETSIZE 4 MAXITERATIONS 15
    (624, 256, 1, 6, 1, 2, 1, 20),  # CF.INSERT key CAPACITY 500 ITEMS p q
    (240, 64, 1, 5, 1, 2, 1, 20),  # CF.INSERTNX key CAPACITY 100 ITEMS p p
]
CF_INFO_FIELDS = {
    "Size": "size",
    "Number of buckets": "bucketNum",
    "Number of filters": "filterNum",
    "Number of items inserted": "insertedNum",
    "Number of items deleted": "deletedNum",
    "Bucket size": "bucketSize",
    "Expansion rate": "expansionRate",
    "Max iterations": "maxIteration",
}

# The same for the CF commands: 8 cuckoo filters, the missing key, 1 copy made from it and 1 to it.
EXPECTED_CALLS |= {
    "cf.reserve": (4, 0),  # forms 0 and 1
    "cf.insert": (2 + 8 + 1, 1),  # form 2, NOCREATE on each filter, and on the missing key
    "cf.insertnx": (2 + 8 + 1, 1),  # form 3, the same
    "cf.add": (16, 0),
    "cf.addnx": (16, 0),
    "cf.exists": (16 + 1 + 5 + 5, 0),  # and the missing key, the original and the copy
    "cf.mexists": (8 + 1 + 1 + 1, 0),  # and the same three
    "cf.count": (16 + 1 + 1 + 1, 0),  # and the same three
    "cf.del": (8 + 1, 1),  # and the missing key
    "cf.info": (8 + 1 + 1 + 1, 1),  # and the same three
    "cf.scandump": (3, 0),  # header, one data chunk, the end
    "cf.loadchunk": (2, 0),
    "cf.debug": (2, 0),
    "cf.compact": (1, 0),
}


def command_stats(port):
    """{command: (calls, failed calls)} of the BF and CF commands, asserting none was rejected."""
    stats = {}
    for name, fields in nodes[port].info("commandstats").items():
        command = name.removeprefix("cmdstat_")
        if command.startswith(("bf.", "cf.")):
            assert fields["rejected_calls"] == 0, (port, name, fields)
            stats[command] = (fields["calls"], fields["failed_calls"])
    return stats


def run(protocol):
    for node in nodes.values():
        node.flushall()
        node.config_resetstat()
    rc = RedisCluster(host="127.0.0.1", port=ports[0], protocol=protocol)
    bf = rc.bf()
    cf = rc.cf()
    assert {node.port for node in rc.get_primaries()} == set(ports)

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

    def fails(call, message):
        try:
            call()
        except redis.ResponseError as err:
            assert str(err) == message, err
        else:
            raise AssertionError(f"expected {message!r}")

    sizes = {}
    for port, keys in FILTERS.items():
        for position, key in enumerate(keys):
            form = position % 4
            if form == 0:
                assert bf.create(key, 0.01, 1000) is True
            elif form == 1:
                assert bf.create(key, 0.001, 100, expansion=4) is True
            elif form == 2:
                answers = bf.insert(key, ["p", "q"], capacity=500, error=0.001, expansion=3)
                assert [yes(a) for a in answers] == [True, True], answers
            else:
                answers = bf.insert(key, ["p"], capacity=10, noScale=True)
                assert [yes(a) for a in answers] == [True], answers

            assert yes(bf.add(key, "a")), key
            assert no(bf.add(key, "a")), key
            answers = bf.madd(key, "b", "c", "b")
            assert [yes(answers[0]), yes(answers[1]), no(answers[2])] == [True] * 3, answers
            answers = bf.insert(key, ["d"], noCreate=True)
            assert [yes(a) for a in answers] == [True], answers

            assert yes(bf.exists(key, "a")), key
            assert no(bf.exists(key, "zzz")), key
            answers = bf.mexists(key, "a", "zzz", "d")
            assert [yes(answers[0]), no(answers[1]), yes(answers[2])] == [True] * 3, answers

            capacity, expansion, count = FORMS[form]
            assert bf.card(key) == count, key
            got = info(key)
            assert got["Capacity"] == capacity, (key, got)
            assert got["Number of filters"] == 1, (key, got)
            assert got["Number of items inserted"] == count, (key, got)
            assert got["Expansion rate"] == expansion, (key, got)
            assert got["Size"] == sizes.setdefault(form, got["Size"]), (key, got)

    for port, [key] in MISSING.items():
        fails(lambda key=key: bf.insert(key, ["p"], noCreate=True), "not found")
        fails(lambda key=key: bf.info(key), "not found")
        assert no(bf.exists(key, "a")), key
        answers = bf.mexists(key, "a", "b")
        assert [no(a) for a in answers] == [True, True], answers
        assert bf.card(key) == 0, key

    # Each primary's first filter copied, chunk by chunk, to a key of the next primary.
    for index, port in enumerate(ports):
        original = FILTERS[port][0]
        target = ports[(index + 1) % 3]
        [copy] = COPIES[target]
        assert owner(copy) == target != owner(original) == port
        chunks = []
        iterator = 0
        while True:
            iterator, data = bf.scandump(original, iterator)
            if iterator == 0:
                break
            chunks.append((iterator, data))
        assert len(chunks) == 2, [(i, len(d)) for i, d in chunks]
        assert chunks[0][0] == 1 and chunks[0][1].startswith(b"redis-bf"), chunks[0]
        for iterator, data in chunks:
            reply = bf.loadchunk(copy, iterator, data)
            assert reply in (b"OK", "OK", True), reply
        for item in ["a", "b", "c", "d", "zzz"]:
            assert bf.exists(copy, item) == bf.exists(original, item), item
        items = ["a", "zzz", "b", "c", "d", "p"]
        assert bf.mexists(copy, *items) == bf.mexists(original, *items)
        assert bf.card(copy) == 4
        assert info(copy) == info(original)
        original_lines = rc.execute_command("BF.DEBUG", original)
        assert rc.execute_command("BF.DEBUG", copy) == original_lines
        assert original_lines == [
            b"size:4",
            b"bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:4 ratio:0.005",
        ], original_lines
        # The copy really is on the other primary, and only there.
        assert nodes[target].exists(copy) == 1
        assert nodes[target].cluster("countkeysinslot", key_slot(copy.encode())) == 1

    def integers(values, expected):
        """CF.INSERTNX's entries: integers in both protocols."""
        return list(values) == expected and not any(isinstance(v, bool) for v in values)

    def cf_info(key):
        """CF.INFO's values in RedisBloom's order: a CFInfo in RESP2, a map in RESP3."""
        reply = cf.info(key)
        if protocol == 3:
            assert isinstance(reply, dict), reply
            assert [k.decode() for k in reply] == list(CF_INFO_FIELDS), reply
            return tuple(reply.values())
        return tuple(getattr(reply, attribute) for attribute in CF_INFO_FIELDS.values())

    for port, keys in CUCKOOS.items():
        for position, key in enumerate(keys):
            form = position % 4
            if form == 0:
                assert cf.create(key, 1000) is True
            elif form == 1:
                assert cf.create(key, 1000, expansion=2, bucket_size=4, max_iterations=15) is True
            elif form == 2:
                answers = cf.insert(key, ["p", "q"], capacity=500)
                assert [yes(a) for a in answers] == [True, True], answers
            else:
                assert integers(cf.insertnx(key, ["p", "p"], capacity=100), [1, 0])

            assert yes(cf.add(key, "a")), key
            assert yes(cf.add(key, "a")), key  # a second copy
            assert no(cf.addnx(key, "a")), key
            assert yes(cf.addnx(key, "b")), key
            answers = cf.insert(key, ["c"], nocreate=True)
            assert [yes(a) for a in answers] == [True], answers
            assert integers(cf.insertnx(key, ["c", "d"], nocreate=True), [0, 1])

            assert yes(cf.exists(key, "a")), key
            assert no(cf.exists(key, "zzz")), key
            answers = cf.mexists(key, "a", "zzz", "d")
            assert [yes(answers[0]), no(answers[1]), yes(answers[2])] == [True] * 3, answers
            assert cf.count(key, "a") == 2, key
            assert yes(cf.delete(key, "a")), key
            assert cf.count(key, "a") == 1, key
            assert cf_info(key) == CF_FORMS[form], (key, cf_info(key))

    for port, [key] in MISSING.items():
        fails(lambda key=key: cf.insert(key, ["p"], nocreate=True), "not found")
        fails(lambda key=key: cf.insertnx(key, ["p"], nocreate=True), "not found")
        assert no(cf.exists(key, "a")), key
        answers = cf.mexists(key, "a", "b")
        assert [no(a) for a in answers] == [True, True], answers
        assert cf.count(key, "a") == 0, key
        fails(lambda key=key: cf.delete(key, "a"), "Not found")
        fails(lambda key=key: cf.info(key), "not found")

    # Each primary's first cuckoo filter copied, chunk by chunk, to a key of the next primary.
    for index, port in enumerate(ports):
        original = CUCKOOS[port][0]
        target = ports[(index + 1) % 3]
        [copy] = CF_COPIES[target]
        assert owner(copy) == target != owner(original) == port
        chunks = []
        iterator = 0
        while True:
            iterator, data = cf.scandump(original, iterator)
            if iterator == 0:
                assert data is None, data
                break
            chunks.append((iterator, data))
        assert [(i, len(d)) for i, d in chunks] == [(1, 38), (1025, 1024)], [
            (i, len(d)) for i, d in chunks
        ]
        for iterator, data in chunks:
            assert cf.loadchunk(copy, iterator, data) == b"OK"
        for item in ["a", "b", "c", "d", "zzz"]:
            assert cf.exists(copy, item) == cf.exists(original, item), item
        items = ["a", "zzz", "b", "c", "d", "p"]
        assert cf.mexists(copy, *items) == cf.mexists(original, *items)
        assert cf.count(copy, "a") == cf.count(original, "a") == 1
        assert cf_info(copy) == cf_info(original) == CF_FORMS[0]
        original_line = rc.execute_command("CF.DEBUG", original)
        assert rc.execute_command("CF.DEBUG", copy) == original_line
        assert original_line == (
            b"bktsize:2 buckets:512 items:4 deletes:1 filters:1 max_iterations:20 expansion:1"
        ), original_line
        assert rc.execute_command("CF.COMPACT", copy) == b"OK"
        assert nodes[target].exists(copy) == 1
        assert nodes[target].cluster("countkeysinslot", key_slot(copy.encode())) == 1

    for port in ports:
        keys = FILTERS[port] + COPIES[port] + CUCKOOS[port] + CF_COPIES[port]
        assert nodes[port].dbsize() == len(keys) == 22, (port, nodes[port].dbsize())
        for key in keys:
            assert nodes[port].cluster("countkeysinslot", key_slot(key.encode())) == 1, key
        stats = command_stats(port)
        assert stats == EXPECTED_CALLS, (protocol, port, stats)
        errors = nodes[port].info("errorstats")
        assert not any(k in errors for k in ["errorstat_MOVED", "errorstat_ASK"]), (port, errors)
    rc.close()
    print(f"redis-py {redis.__version__}, RESP{protocol}: ok")


for protocol in (2, 3):
    run(protocol)
print("cluster: ok")
