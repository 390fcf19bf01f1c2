"""``wait_for_replicas`` on one primary with one replica, on Debian's Redis and on each newer
server of the repository's matrix (Redis 8.2, Valkey 8.0 and 9.1, where `make test` unpacked
them): an answer is confirmed only once the replica has every write up to it, other clients'
writes included; for a Bloom filter and for a cuckoo filter (its deletes too).

Redis 7.2 and newer (and Valkey) make ``WAIT`` wait for the offset of the connection's own last
propagated write, and a ``BF.INSERT`` of an item the filter holds propagates nothing: without a
write of its own after the answer, the ``WAIT`` of an add that answers False would cover nothing,
and confirm the item although the write that put it there (another client's) had reached no
replica. The replica is stopped (SIGSTOP) to hold that write back deterministically.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest
import redis
import redis.asyncio

from redis_bf import BloomFilter, CuckooFilter, NotReplicatedError
from redis_bf.asyncio import BloomFilter as AsyncBloomFilter

from conftest import SERVERS, directory_name, server_binary
from redis_server import RedisServer

T = TypeVar("T")


class Pair:
    """A primary with the module and one replica following it, in sync."""

    def __init__(self, name: str, binary: str):
        self.primary = RedisServer(f"{name}-primary", binary=binary)
        self.replica = RedisServer(f"{name}-replica", binary=binary)

    def start(self) -> Pair:
        self.primary.args = ("--repl-diskless-sync-delay", "0")
        self.primary.start()
        self.replica.args = ("--replicaof", "127.0.0.1", str(self.primary.port))
        self.replica.start()
        deadline = time.monotonic() + 20
        with self.primary.client() as client:
            while client.execute_command("WAIT", 1, 100) != 1:
                assert time.monotonic() < deadline, "the replica did not sync in 20 s"
        return self

    def stop(self) -> None:
        if self.replica.process is not None:
            os.kill(self.replica.pid, signal.SIGCONT)
        self.replica.stop()
        self.primary.stop()

    @contextmanager
    def replica_stopped(self) -> Iterator[None]:
        """The replica frozen (SIGSTOP): it reads and acknowledges nothing until the block ends."""
        os.kill(self.replica.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.replica.pid, signal.SIGCONT)


@pytest.fixture(params=list(SERVERS))
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    instance = Pair(directory_name(request), server_binary(request))
    try:
        yield instance.start()
    finally:
        instance.stop()


def unconfirmed(port: int, answers: int) -> str:
    """What ``NotReplicatedError`` says when the replica did not confirm within 200 ms."""
    return (
        f"the writes were applied on the primary at 127.0.0.1:{port} (the {answers} answer(s) in "
        ".results stand there), but 0 of the 1 replica(s) asked confirmed them, and every write "
        "before them, within 200 ms (WAIT 1): they may be lost if that primary fails now"
    )


def eventually(call: Callable[[], T]) -> T:
    """``call()``, again while it raises ``NotReplicatedError`` (for 20 s at most): a WAIT of
    200 ms may time out on a busy machine although the replica follows. (Each try is applied on
    the primary: a retried add answers "seen".)"""
    deadline = time.monotonic() + 20
    while True:
        try:
            return call()
        except NotReplicatedError:
            if time.monotonic() > deadline:
                raise


def held_by_replica(pair: Pair, key: str, items: list[str]) -> list[bool]:
    """Asked of the replica itself, for a one-key filter."""
    with pair.replica.client() as replica:
        return [bool(a) for a in replica.execute_command("BF.MEXISTS", key, *items)]


@pytest.mark.parametrize("shards", [None, 4], ids=["one-key", "sharded"])
def test_an_add_that_finds_the_item_waits_for_the_write_that_put_it_there(
    pair: Pair, shards: int | None
) -> None:
    port = pair.primary.port
    other = BloomFilter(pair.primary.client(), "seen", 1000, 0.01, shards=shards)
    mine = BloomFilter(
        pair.primary.client(protocol=3),
        "seen",
        1000,
        0.01,
        shards=shards,
        wait_for_replicas=1,
        wait_timeout=0.2,
    )
    # Confirmed: the replica follows (a retry, if any, answers "seen": the first was applied).
    assert eventually(lambda: mine.add("before")) in (True, False)
    with pair.replica_stopped():
        assert other.add("x") is True  # another client's write, held back from the replica
        with pytest.raises(NotReplicatedError) as raised:
            mine.add("x")
        assert raised.value.results == [False]
        assert (raised.value.confirmed, raised.value.address) == (0, f"127.0.0.1:{port}")
        assert str(raised.value) == unconfirmed(port, 1)
        with pytest.raises(NotReplicatedError) as raised:
            mine.add_many(["x", "before", "y"])
        assert raised.value.results == [False, False, True]
        assert str(raised.value) == unconfirmed(port, 3)
        with pytest.raises(NotReplicatedError) as raised:
            mine.create()  # an answer too: it found the filter (or its shards) there
        assert raised.value.results == []
    patient = BloomFilter(
        pair.primary.client(),
        "seen",
        1000,
        0.01,
        shards=shards,
        wait_for_replicas=1,
        wait_timeout=10,
    )
    assert patient.add("x") is False  # now confirmed: the replica has it
    assert patient.add_many(["x", "y", "z"]) == [False, False, True]
    if shards is None:
        assert held_by_replica(pair, "seen", ["before", "x", "y", "z"]) == [True] * 4
    # The write each WAIT covers leaves nothing behind.
    keys = {b"seen"} if shards is None else {b"seen", *(key.encode() for key in mine.keys)}
    with pair.primary.client() as client:
        assert set(client.keys("*")) == keys


def test_the_asyncio_class_waits_for_the_write_that_put_the_item_there(pair: Pair) -> None:
    port = pair.primary.port
    other = BloomFilter(pair.primary.client(), "seen", 1000, 0.01)

    async def run() -> list[object]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=port)
        try:
            mine = AsyncBloomFilter(
                client, "seen", 1000, 0.01, wait_for_replicas=1, wait_timeout=0.2
            )
            deadline = time.monotonic() + 20
            while True:  # as ``eventually``
                try:
                    await mine.add("before")
                    break
                except NotReplicatedError:
                    if time.monotonic() > deadline:
                        raise
            seen: list[object] = []
            with pair.replica_stopped():
                seen.append(other.add("x"))
                for call in (mine.add("x"), mine.add_many(["x", "y"])):
                    with pytest.raises(NotReplicatedError) as raised:
                        await call
                    seen.append((raised.value.results, str(raised.value)))
            patient = AsyncBloomFilter(client, "seen", 1000, 0.01, wait_for_replicas=1)
            seen.append(await patient.add_many(["x", "y", "z"]))
            return seen
        finally:
            await client.aclose()

    assert asyncio.run(run()) == [
        True,
        ([False], unconfirmed(port, 1)),
        ([False, True], unconfirmed(port, 2)),
        [False, False, True],
    ]
    assert held_by_replica(pair, "seen", ["x", "y", "z"]) == [True] * 3


def held_by_replica_cf(pair: Pair, key: str, items: list[str]) -> list[bool]:
    """CF.MEXISTS asked of the replica itself, for a one-key cuckoo filter."""
    with pair.replica.client() as replica:
        return [bool(a) for a in replica.execute_command("CF.MEXISTS", key, *items)]


@pytest.mark.parametrize("shards", [None, 4], ids=["one-key", "sharded"])
def test_a_cuckoo_filters_adds_and_deletes_wait_for_every_write_before_them(
    pair: Pair, shards: int | None
) -> None:
    """As for the Bloom filter: an ``add_unique`` that finds the item, and a ``delete`` that
    deletes nothing (neither propagates anything), confirm only once the replica has the writes
    before them, other clients' included."""
    port = pair.primary.port
    other = CuckooFilter(pair.primary.client(), "seen", 1000, shards=shards)
    mine = CuckooFilter(
        pair.primary.client(protocol=3),
        "seen",
        1000,
        shards=shards,
        wait_for_replicas=1,
        wait_timeout=0.2,
    )
    assert eventually(lambda: mine.add_unique("before")) in (True, False)
    with pair.replica_stopped():
        assert other.add_unique("x") is True  # another client's write, held back
        for call, results in (
            (lambda: mine.add_unique("x"), [False]),
            (lambda: mine.add_many(["x", "y"], unique=True), [False, True]),
            (lambda: mine.delete("never-added"), [False]),
            (lambda: mine.delete_many(["never-added"]), [False]),
            (mine.create, []),
        ):
            with pytest.raises(NotReplicatedError) as raised:
                call()
            assert raised.value.results == results
            assert str(raised.value) == unconfirmed(port, len(results))
    patient = CuckooFilter(
        pair.primary.client(), "seen", 1000, shards=shards, wait_for_replicas=1, wait_timeout=10
    )
    assert patient.add_unique("x") is False  # confirmed now
    assert patient.delete("y") is True
    assert patient.add_many(["x", "z"], unique=True) == [False, True]
    if shards is None:
        assert held_by_replica_cf(pair, "seen", ["before", "x", "y", "z"]) == [
            True,
            True,
            False,
            True,
        ]
    # RedisBloom's kind: its reserve, its NOCREATE insert and the marker, then the WAIT.
    plain = CuckooFilter(
        pair.primary.client(), "plain", 1000, None, wait_for_replicas=1, wait_timeout=10
    )
    assert plain.add("a") is True and plain.delete("a") is True and plain.add("b") is True
    assert held_by_replica_cf(pair, "plain", ["a", "b"]) == [False, True]
    keys = {b"seen", b"plain"} | ({*(key.encode() for key in mine.keys)} if shards else set())
    with pair.primary.client() as client:
        assert set(client.keys("*")) == keys  # no marker key left behind
