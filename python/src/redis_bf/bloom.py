"""A Bloom filter in Redis (redis-bf's ``BF.*`` commands) behind a small Python class.

``BloomFilter(client, key, capacity, error_rate)`` answers "have I seen this?" with one command per
item (``add``, ``in``) or per batch (``add_many``, ``contains_many``, several batches to a round
trip). Every write carries the filter's creation parameters (``BF.INSERT key CAPACITY c ERROR e
ITEMS ...``), so whichever command reaches a missing key first creates the filter as asked, never
with the server's defaults: a key deleted by a flush, or never reserved, cannot silently become a
100-item filter.

The client is a ``redis.Redis`` or a ``redis.cluster.RedisCluster``; with ``shards=N`` one filter
is spread over N keys (on a cluster, over every primary; docs/sharding.md in the repository says
how, ``redis_bf._shards`` does it). The asyncio twin is ``redis_bf.asyncio.BloomFilter``: the
same commands and answers (both build them in ``redis_bf._core``).

Replies: RESP2 answers 1/0, RESP3 True/False; both come back as ``bool``. An error reply is raised,
never read as an answer: a top-level one as redis-py's ``ResponseError`` (``WRONGTYPE``, ``OOM``,
...), an error element at the end of a batch's array as ``BloomFilterError``, with the answers for
the items before it (``FilterFullError``, one, for ``non scaling filter is full``). A server
without the module (``unknown command 'BF.INSERT'``) raises ``ModuleMissingError``, which names
the server and says how to get one with the module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta
from itertools import islice
from typing import Any, TypeVar

from redis.exceptions import RedisError, ResponseError

from ._core import Batch, Call, Core, Operation, is_cluster
from ._errors import (
    CUCKOO_TYPE,
    FILTER_TYPE,
    BloomFilterError,
    FilterFullError,
    FilterMismatchError,
    KeyTypeError,
    ModuleMissingError,
    NotReplicatedError,
    connection_kwargs,
    explained,
    is_module_missing,
    server_address,
    server_url,
)
from ._options import MAX_WINDOW, FilterOptions
from ._replies import Waited, as_bool, as_bools, decode, info_dict
from ._shards import Item

T = TypeVar("T")

__all__ = [
    "CUCKOO_TYPE",
    "FILTER_TYPE",
    "MAX_WINDOW",
    "BloomFilter",
    "BloomFilterError",
    "FilterFullError",
    "FilterMismatchError",
    "FilterOptions",
    "Item",
    "KeyTypeError",
    "ModuleMissingError",
    "NotReplicatedError",
    "as_bool",
    "as_bools",
    "chunks",
    "connection_kwargs",
    "decode",
    "explained",
    "info_dict",
    "is_module_missing",
    "Runner",
    "require_module",
    "server_address",
    "server_url",
]


def chunks(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def require_module(client: Any, key: str, cuckoo: bool = False) -> None:
    """Raises ``ModuleMissingError`` unless the server has the ``BF.*`` commands (``CF.*`` with
    ``cuckoo``). It asks ``BF.CARD key`` (``CF.EXISTS key``): any other answer (a count,
    WRONGTYPE, an ACL refusal) says it has them."""
    try:
        if cuckoo:
            client.execute_command("CF.EXISTS", key, "redis-bf:probe")
        else:
            client.execute_command("BF.CARD", key)
    except ResponseError as error:
        if is_module_missing(error):
            raise ModuleMissingError(client, str(error)) from None


class Runner:
    """Runs the operations of a filter's core on a blocking redis-py client (``redis.Redis`` or
    ``redis.cluster.RedisCluster``): sends each request an operation makes, hands back the
    replies. ``BloomFilter`` and ``CuckooFilter`` are this over their cores."""

    client: Any
    _core: Core

    def _run(self, operation: Operation[T]) -> T:
        """Runs an operation of the core: sends each request it makes, hands back the answer."""
        try:
            request = next(operation)
            while True:
                request = operation.send(self._send(request))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _send(self, request: Call | Batch) -> Any:
        if isinstance(request, Call):
            try:
                return self.client.execute_command(*request.args, **request.options)
            except ResponseError as error:
                return error
        if request.wait and is_cluster(self.client):
            return self._send_waited(request)
        pipe = self.client.pipeline(transaction=False)
        for command in request.commands:
            pipe.execute_command(*command)
        waits = self._core.wait_commands(request.commands[0][1]) if request.wait else []
        for command in waits:
            pipe.execute_command(*command)
        replies = pipe.execute(raise_on_error=False)
        Core.raise_transport(replies)
        if not request.wait:
            return replies
        sent = len(request.commands)
        return [*replies[:sent], Waited(server_address(self.client), replies[sent:])]

    def _send_waited(self, request: Batch) -> list[Any]:
        """Writes that must reach replicas, on a cluster: each node's in turn, on one connection
        of its own, then ``Core.wait_commands`` there (see ``Core.wait_groups``); the replies,
        then a ``Waited`` per node."""
        replies: list[Any] = [None] * len(request.commands)
        waits = []
        for node, positions in self._core.wait_groups(request):
            pipe = self.client.get_redis_connection(node).pipeline(transaction=False)
            for position in positions:
                pipe.execute_command(*request.commands[position])
            for command in self._core.wait_commands(request.commands[positions[0]][1]):
                pipe.execute_command(*command)
            try:
                out = pipe.execute(raise_on_error=False)
                Core.raise_transport(out)
            except RedisError:
                self._refresh(request.commands[positions[0]][1])
                raise
            if any(isinstance(reply, ResponseError) for reply in out):
                self._refresh(request.commands[positions[0]][1])
            for position, reply in zip(positions, out, strict=False):
                replies[position] = reply
            waits.append(Waited(node.name, out[len(positions) :]))
        return replies + waits

    def _refresh(self, key: str) -> None:
        """Lets the cluster client find where ``key`` lives now (after a failover or a move): a
        command through it, which follows redirections and reloads the slots on failures."""
        try:
            self.client.execute_command("EXISTS", key)
        except RedisError:
            pass


class FilterBase:
    """What every filter class shares: the client, the key, the batching parameters, and the
    core whose operations each class runs its own way (blocking or asyncio)."""

    repr_name = "Filter"
    _core: Core

    def __init__(self, client: Any, key: str, options: Any, core: type[Core], **kwargs: Any):
        self.client = client
        self.key = key
        self.options = options
        self.batch_size = kwargs.get("batch_size", 1000)
        self.pipeline_size = kwargs.get("pipeline_size", 16)
        self._core = core(client, key, options, **kwargs)

    @property
    def shards(self) -> int | None:
        return self._core.shards

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys holding the items: ``(key,)``, or the shards' keys."""
        return self._core.keys

    def __repr__(self) -> str:
        return f"{self.repr_name}({self._core.describe()})"


class BloomFilterBase(FilterBase):
    """What ``redis_bf.BloomFilter`` and ``redis_bf.asyncio.BloomFilter`` share: the parameters
    (see ``redis_bf.BloomFilter``) and the ``Core`` whose operations each runs its own way."""

    repr_name = "BloomFilter"
    options: FilterOptions

    def __init__(
        self,
        client: Any,
        key: str,
        capacity: int,
        error_rate: float,
        *,
        window: int | timedelta | None = None,
        layout: str | None = None,
        shards: int | None = None,
        batch_size: int = 1000,
        pipeline_size: int = 16,
        wait_for_replicas: int = 0,
        wait_timeout: float = 1.0,
    ):
        super().__init__(
            client,
            key,
            FilterOptions(capacity, error_rate, window, layout),
            Core,
            shards=shards,
            batch_size=batch_size,
            pipeline_size=pipeline_size,
            wait_for_replicas=wait_for_replicas,
            wait_timeout=wait_timeout,
        )


class BloomFilter(Runner, BloomFilterBase):
    """A redis-bf Bloom filter at ``key``, created by the first write with ``capacity`` and
    ``error_rate`` (and ``window``, in seconds or a ``timedelta``: remember each item for that
    long, not forever; None or 0: no window).

    ``add``/``add_many`` answer whether each item was new (and record it); ``item in bf``,
    ``contains`` and ``contains_many`` whether it may have been added (False: certainly not).
    Batches go ``batch_size`` items to a command and ``pipeline_size`` commands to a round trip.

    The filter scales: past ``capacity`` it adds sub-filters and keeps its false-positive rate
    below ``error_rate``. An existing filter is used as it is (its own capacity, error rate and
    window).

    ``layout="blocked"`` makes a filter that keeps an item's bits in one cache line: faster on
    filters bigger than the server's caches, for about 5% more memory, and one RedisBloom cannot
    read; ``"classic"`` the default layout; None (the default) the server's ``bf.layout``.

    With ``window``, an item added at t is held until at least t + window and forgotten by
    t + 1.25 x window, after which ``add`` answers True for it again; ``capacity`` is the items
    of one window, and the server frees old items on its own (the key itself stays, an empty
    windowed filter, once everything has expired: delete it, or set an EXPIRE, to have it gone).

    ``shards=N`` spreads the filter over N keys, ``<key>:<i>/<N>{<tag>}``, whose hash tags fall in
    N evenly spaced ranges of the cluster's slots; each item goes to one shard by a hash of the
    item, so the false-positive rate stays ``error_rate``, and each shard is created for its share
    of ``capacity`` plus four standard deviations. ``key`` itself keeps the parameters (a small
    string), so that another process with the same arguments finds the same filter, and one with
    another shard count, error rate or window gets ``FilterMismatchError``. A batch costs one
    round trip per node.

    ``wait_for_replicas=n`` makes every write wait (``WAIT n``, on each node written, at most
    ``wait_timeout`` seconds) until n replicas have it, and every write the primary made before
    it (the answers report them: an add answers "seen" for another client's write): fewer raise
    ``NotReplicatedError``. For that, each node's writes are followed by a ``SET`` and a ``DEL``
    of a key of their own, ``<key>:redis-bf-wait`` (with a hash tag), which the ``WAIT`` covers.
    """

    def create(self) -> bool:
        """Reserves the filter if the key is missing: True if this call created it.

        An existing filter is left alone (False); a key holding anything else raises
        ``KeyTypeError``. A sharded filter reserves every shard not created yet: True if this
        created any (or the parameters at the key).
        """
        return self._run(self._core.create())

    def key_type(self) -> str:
        """What TYPE answers for the key (``MBbloom--`` for a filter, ``none`` if missing; a
        sharded filter's key holds its parameters: ``string``)."""
        return self._run(self._core.key_type())

    def add(self, item: Item) -> bool:
        """Records ``item``: True if it was new, False if the filter (probably) held it."""
        return self._run(self._core.add(item))

    def add_many(self, items: Iterable[Item]) -> list[bool]:
        """Records every item, in order: for each, whether it was new."""
        return self._run(self._core.batched(items, write=True))

    def __contains__(self, item: Item) -> bool:
        return self.contains(item)

    def contains(self, item: Item) -> bool:
        """Whether ``item`` may have been added (False: certainly not)."""
        return self._run(self._core.contains(item))

    def contains_many(self, items: Iterable[Item]) -> list[bool]:
        """For each item, whether it may have been added (False: certainly not)."""
        return self._run(self._core.batched(items, write=False))

    def count(self) -> int:
        """Items added (``BF.CARD``: an item counts when it was new), summed over the shards; 0
        for a missing key."""
        return self._run(self._core.count())

    def info(self) -> dict[str, Any]:
        """``BF.INFO`` as a dict: Capacity, Size, Number of filters, Number of items inserted,
        Expansion rate, and Window (seconds) for a windowed filter; for a sharded filter the
        counts and sizes are summed and Shards is added, a shard not created yet counting as the
        empty shard its first write creates (its capacity, no sub-filter, no item, 0 bytes).
        A missing filter raises ``ResponseError('not found')``."""
        return self._run(self._core.info())

    def delete(self) -> int:
        """Deletes the filter (every shard, and a sharded filter's parameters): the keys removed.
        (``drop()`` is the same, under the name ``CuckooFilter`` gives it.)"""
        return self._run(self._core.delete())

    def drop(self) -> int:
        """Deletes the filter: as ``delete()``."""
        return self._run(self._core.delete())
