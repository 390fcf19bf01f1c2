"""redis_bf._core without a server: how a batch becomes round trips and commands, and how replies
(answers, error elements, top-level errors, short replies) become answers in the caller's order.
The classes that send them are tested against real servers (test_bloom, test_sharded,
test_cluster)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot
from redis.exceptions import ResponseError

from redis_bf import (
    BloomFilterError,
    CuckooOptions,
    FilterFullError,
    FilterOptions,
    NotReplicatedError,
)
from redis_bf._core import CF_DEL, CF_INSERTNX, Batch, Call, Core, CuckooCore, Waited


def core(shards: int | None = None, batch_size: int = 2, pipeline_size: int = 2) -> Core:
    return Core(
        None,
        "k",
        FilterOptions(100, 0.01),
        shards=shards,
        batch_size=batch_size,
        pipeline_size=pipeline_size,
        wait_for_replicas=1,
        wait_timeout=0.5,
    )


def test_one_key_rounds_are_batches_in_order() -> None:
    rounds = list(core().rounds(["a", "b", "c", "d", "e"], write=False))
    assert [(r.start, r.size) for r in rounds] == [(0, 4), (4, 1)]
    assert [c.args for c in rounds[0].commands] == [
        ("BF.MEXISTS", "k", "a", "b"),
        ("BF.MEXISTS", "k", "c", "d"),
    ]
    assert [list(c.positions) for c in rounds[0].commands] == [[0, 1], [2, 3]]
    write = next(core().rounds(["a"], write=True))
    assert write.commands[0].args == (
        "BF.INSERT",
        "k",
        "CAPACITY",
        100,
        "ERROR",
        0.01,
        "ITEMS",
        "a",
    )


def test_sharded_answers_come_back_in_the_callers_order() -> None:
    sharded = core(shards=3, batch_size=100)
    items = [f"i{n}" for n in range(30)]
    (round_trip,) = sharded.rounds(items, write=False)
    assert {c.args[1] for c in round_trip.commands} == set(sharded.keys)
    # Each command answers 1 for items at even positions, 0 for odd ones.
    replies = [[int(p % 2 == 0) for p in c.positions] for c in round_trip.commands]
    assert sharded.collect(round_trip, replies) == [n % 2 == 0 for n in range(30)]


def test_the_first_failing_item_in_the_callers_order_is_raised() -> None:
    sharded = core(shards=3, batch_size=100)
    items = [f"i{n}" for n in range(30)]
    (round_trip,) = sharded.rounds(items, write=True)
    first, second = round_trip.commands[0], round_trip.commands[1]
    replies: list[object] = [[1] * len(c.positions) for c in round_trip.commands]
    # An error element at the third item of one command, a top-level error on another.
    replies[0] = [1, 1, ResponseError("non scaling filter is full")]
    replies[1] = ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")
    index = min(first.positions[2], second.positions[0])
    with pytest.raises(BloomFilterError) as raised:
        sharded.collect(round_trip, replies)
    assert raised.value.index == index
    assert raised.value.results == [True] * index


def test_short_or_strange_replies_are_errors_not_answers() -> None:
    one = core(batch_size=3)
    (round_trip,) = one.rounds(["a", "b", "c"], write=False)
    with pytest.raises(BloomFilterError, match="2 answers to 3 items") as raised:
        one.collect(round_trip, [[1, 0]])
    assert (raised.value.index, raised.value.results) == (2, [True, False])
    with pytest.raises(BloomFilterError, match="0 replies to 1 commands"):
        one.collect(round_trip, [])
    with pytest.raises(BloomFilterError, match="unexpected reply 7") as raised:
        one.collect(round_trip, [[1, 7, 1]])
    assert (raised.value.index, raised.value.results) == (1, [True])


def test_waits_below_the_replicas_asked_raise() -> None:
    one = core()
    node = "127.0.0.1:7000"
    one.check_waits([Waited(node, [True, 1, 1]), Waited("127.0.0.1:7001", [True, 1, 2])], [True])
    applied = (
        "the writes were applied on the primary at 127.0.0.1:7000 (the 2 answer(s) in .results "
        "stand there), but"
    )
    lost = "they may be lost if that primary fails now"
    for waits, confirmed, message in (
        (
            [Waited(node, [True, 1, 0])],
            0,
            f"{applied} 0 of the 1 replica(s) asked confirmed them, and every write before them, "
            f"within 500 ms (WAIT 1): {lost}",
        ),
        (
            [Waited("127.0.0.1:7001", [True, 1, 1]), Waited(node, [True, 1, 0])],
            0,
            f"{applied} 0 of the 1 replica(s) asked confirmed them, and every write before them, "
            f"within 500 ms (WAIT 1): {lost}",
        ),
        (
            [Waited(node, [True, 1, ResponseError("NOREPLICAS")])],
            None,
            f"{applied} WAIT 1 failed (NOREPLICAS), so no replica could be asked: {lost}",
        ),
        (
            [Waited(node, [ResponseError("NOPERM no permissions"), 0, 1])],
            None,
            f"{applied} the write that WAIT 1 needs after them (SET of the marker key) failed "
            f"(NOPERM no permissions), so no replica could be asked: {lost}",
        ),
    ):
        with pytest.raises(NotReplicatedError) as raised:
            one.check_waits(waits, [True, False])
        assert (raised.value.results, raised.value.index) == ([True, False], 2)
        assert (raised.value.address, raised.value.confirmed, raised.value.asked) == (
            node,
            confirmed,
            1,
        )
        assert str(raised.value) == message


def test_the_wait_covers_a_write_of_its_own_in_the_slot_written() -> None:
    """``WAIT`` covers what the connection itself wrote last: a ``SET`` (always propagated) of a
    key in the slot of the keys written, so on their node, then its ``DEL``."""
    one = core()
    marker = one.marker("k")
    assert marker.startswith("k:redis-bf-wait{") and key_slot(marker.encode()) == key_slot(b"k")
    assert one.wait_commands("k") == [
        ("SET", marker, "1", "PX", 60_000),
        ("DEL", marker),
        ("WAIT", 1, 500),
    ]
    sharded = core(shards=12)
    for key in sharded.keys:  # a shard's key has a tag: the marker keeps it
        assert sharded.marker(key) == key + ":redis-bf-wait"
    for key in ("{t}seen", "a{b", "odd}key", "{}x", "caf\u00e9"):
        marker = one.marker(key)
        assert marker.startswith(key + ":redis-bf-wait")
        assert key_slot(marker.encode()) == key_slot(key.encode()), key


def test_an_operation_asks_the_parameters_once() -> None:
    sharded = core(shards=2)
    operation = sharded.contains("x")
    request = next(operation)
    assert isinstance(request, Call) and request.args[:2] == ("SET", "k")
    assert request.options == {"get": True}
    request = operation.send(None)  # it set them: the filter is new
    assert isinstance(request, Call) and request.args == ("BF.EXISTS", sharded.key_of("x"), "x")
    with pytest.raises(StopIteration) as done:
        operation.send(1)
    assert done.value.value is True
    count = sharded.count()
    request = next(count)  # checked already: straight to the shards
    assert isinstance(request, Batch) and request.commands == [("BF.CARD", k) for k in sharded.keys]


def cuckoo(options: CuckooOptions, shards: int | None = None, batch_size: int = 2) -> CuckooCore:
    return CuckooCore(
        None,
        "k",
        options,
        shards=shards,
        batch_size=batch_size,
        pipeline_size=2,
        wait_for_replicas=0,
        wait_timeout=0.5,
    )


def test_a_cuckoo_insert_carries_the_creation_or_follows_a_reserve() -> None:
    bounded = cuckoo(CuckooOptions(100, 0.01))
    (round_trip,) = bounded.rounds(["a", "b", "c"], CF_INSERTNX)
    assert [c.args for c in round_trip.commands] == [
        ("CF.INSERTNX", "k", "CAPACITY", 100, "ERROR", 0.01, "ITEMS", "a", "b"),
        ("CF.INSERTNX", "k", "CAPACITY", 100, "ERROR", 0.01, "ITEMS", "c"),
    ]
    # RedisBloom's kind: CF.INSERT cannot say BUCKETSIZE and the rest, so the key's reserve goes
    # first (it answers "item exists" once the filter is there) and the inserts say NOCREATE.
    plain = cuckoo(CuckooOptions(100, None, bucket_size=4), shards=2, batch_size=10)
    items = [f"i{n}" for n in range(6)]
    (round_trip,) = plain.rounds(items, True)
    commands = round_trip.commands
    assert [c.answers for c in commands] == [False, True, False, True]
    for reserve, insert in (commands[:2], commands[2:]):
        key = reserve.args[1]
        assert reserve.args == ("CF.RESERVE", key, 70, "BUCKETSIZE", 4, "MAXITERATIONS", 20,
                                "EXPANSION", 1)  # fmt: skip
        assert insert.args[:4] == ("CF.INSERT", key, "NOCREATE", "ITEMS")
        assert list(reserve.positions) == list(insert.positions)
    # Each shard's items: its share plus four deviations (50 + 4 x 5 of 100 over two).
    assert plain.creation.capacity == 70
    exists = ResponseError("item exists")
    replies: list[object] = [
        exists,
        [1] * len(commands[1].positions),
        "OK",
        [1] * len(commands[3].positions),
    ]
    assert plain.collect(round_trip, replies) == [True] * 6
    # A reserve that fails for another reason (OOM, a size limit) fails its key's first item.
    replies[2] = ResponseError("OOM command not allowed when used memory > 'maxmemory'")
    replies[3] = ResponseError("not found")  # the NOCREATE insert that followed
    first = commands[2].positions[0]
    with pytest.raises(BloomFilterError, match="^OOM") as raised:
        plain.collect(round_trip, replies)
    assert raised.value.index == first


def test_cuckoo_answers_are_read_strictly() -> None:
    one = cuckoo(CuckooOptions(100), batch_size=4)
    (insert,) = one.rounds(["a", "b", "c"], True)
    assert one.collect(insert, [[1, 1, 1]]) == [True] * 3
    assert one.collect(insert, [[True, True, True]]) == [True] * 3
    for refused in (-1, False):  # RESP2, RESP3: no room for the item
        with pytest.raises(FilterFullError, match="has no room for the item") as raised:
            one.collect(insert, [[1, refused, 1]])
        assert (raised.value.index, raised.value.results) == (1, [True])
    with pytest.raises(BloomFilterError, match="unexpected reply 0"):
        one.collect(insert, [[1, 0, 1]])  # CF.INSERT never answers "held"
    (unique,) = one.rounds(["a", "b", "c"], CF_INSERTNX)
    assert one.collect(unique, [[1, 0, 1]]) == [True, False, True]
    with pytest.raises(FilterFullError) as raised:
        one.collect(unique, [[1, 0, -1]])
    assert (raised.value.index, raised.value.results) == (2, [True, False])
    for full in ("Filter is full", "Maximum expansions reached"):
        with pytest.raises(FilterFullError, match=full):
            one.collect(unique, [ResponseError(full)])
    # CF.DEL: one command an item; a missing key holds nothing, so nothing was deleted.
    (deletes,) = one.rounds(["a", "b", "c"], CF_DEL)
    assert [c.args for c in deletes.commands] == [
        ("CF.DEL", "k", "a"),
        ("CF.DEL", "k", "b"),
        ("CF.DEL", "k", "c"),
    ]
    assert one.collect(deletes, [True, 0, ResponseError("Not found")]) == [True, False, False]
    with pytest.raises(BloomFilterError, match="WRONGTYPE") as raised:
        one.collect(deletes, [1, ResponseError("WRONGTYPE Operation"), 1])
    assert (raised.value.index, raised.value.results) == (1, [True])


def test_a_cuckoo_delete_asks_its_items_shard() -> None:
    sharded = cuckoo(CuckooOptions(1000), shards=12)
    bloom = core(shards=12)
    for item in ("https://example.com/", b"\x00", 42, 1.5):
        assert sharded.key_of(item) == bloom.key_of(item)  # the same shards as a Bloom filter's
        operation = sharded.remove(item)
        assert next(operation).args[:2] == ("SET", "k")  # the parameters, once
        request = operation.send(None)
        assert request.args == ("CF.DEL", sharded.key_of(item), item)
        with pytest.raises(StopIteration) as done:
            operation.send(ResponseError("Not found"))
        assert done.value.value is False
        sharded.checked = False
