"""A cuckoo filter in Redis (redis-bf's ``CF.*`` commands) behind a small Python class: a filter
that can forget an item.

``CuckooFilter(client, key, capacity)`` answers "have I seen this?" as ``BloomFilter`` does, one
command per item or per batch, and ``delete(item)`` forgets an item (``CF.DEL``). By default
(``error_rate=0.01``) it is this module's bounded filter (``ERROR``): its false-positive rate stays
at most ``error_rate`` however far it grows. Every write carries the creation parameters
(``CF.INSERT key CAPACITY c ERROR e ITEMS ...``), so whichever command reaches a missing key first
creates the filter as asked, never with the server's ``bf.cf-*`` defaults. ``error_rate=None``
makes RedisBloom's kind (``bucket_size``, ``max_iterations``, ``expansion``): then a write that
may create the key sends a ``CF.RESERVE`` with every parameter first and inserts with
``NOCREATE``, in the same round trip.

The client is a ``redis.Redis`` or a ``redis.cluster.RedisCluster``, and ``shards=N`` spreads one
filter over N keys as for ``BloomFilter``: an item's shard is chosen by its bytes, so its delete
reaches the shard that holds it. ``redis_bf.asyncio.CuckooFilter`` is the asyncio twin; all of
them build their commands and read their replies in ``redis_bf._core``.

Replies: RESP2 integers and RESP3 booleans alike come back as ``bool``. An item the filter has no
room for (``CF.INSERT`` answers -1, or false in RESP3; ``Filter is full``, ``Maximum expansions
reached``, ``item added too many times``) raises ``FilterFullError``, with the answers for the
items before it; every other error is raised as for ``BloomFilter``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._core import CF_DEL, CF_INSERTNX, CuckooCore
from ._options import CuckooOptions
from ._shards import Item
from .bloom import FilterBase, Runner

__all__ = ["CuckooFilter"]


class CuckooFilterBase(FilterBase):
    """What ``redis_bf.CuckooFilter`` and ``redis_bf.asyncio.CuckooFilter`` share: the
    parameters (see ``redis_bf.CuckooFilter``) and the ``CuckooCore`` each runs its own way."""

    repr_name = "CuckooFilter"
    options: CuckooOptions

    def __init__(
        self,
        client: Any,
        key: str,
        capacity: int,
        error_rate: float | None = 0.01,
        *,
        bucket_size: int | None = None,
        max_iterations: int | None = None,
        expansion: int | None = None,
        shards: int | None = None,
        batch_size: int = 1000,
        pipeline_size: int = 16,
        wait_for_replicas: int = 0,
        wait_timeout: float = 1.0,
    ):
        options = CuckooOptions(
            capacity,
            error_rate,
            bucket_size=bucket_size,
            max_iterations=max_iterations,
            expansion=expansion,
        )
        super().__init__(
            client,
            key,
            options,
            CuckooCore,
            shards=shards,
            batch_size=batch_size,
            pipeline_size=pipeline_size,
            wait_for_replicas=wait_for_replicas,
            wait_timeout=wait_timeout,
        )

    @property
    def _cuckoo(self) -> CuckooCore:
        """The core, as the cuckoo filter's it is."""
        assert isinstance(self._core, CuckooCore)
        return self._core


class CuckooFilter(Runner, CuckooFilterBase):
    """A redis-bf cuckoo filter at ``key``, created by the first write for ``capacity`` items at
    ``error_rate`` (default 0.01: the module's bounded filter, whose false-positive rate stays at
    most that however far it grows; buckets of 4, ``max_iterations`` 500, ``expansion`` 2).
    ``error_rate=None``: RedisBloom's kind, ``bucket_size`` 2, ``max_iterations`` 20,
    ``expansion`` 1 unless given (its false-positive rate grows with each sub-filter).

    ``add``/``add_many`` add an item (another copy if it is there: True, or ``FilterFullError``);
    ``add_unique``/``add_many(unique=True)`` add it only if it does not seem to be there (True:
    added; False: probably held); ``delete`` forgets one copy. ``item in cf``, ``contains`` and
    ``contains_many`` answer whether it may be there (False: certainly not). Delete only items
    you added: deleting one that was never added may, at the filter's error rate, delete another
    item that shares its fingerprint. Batches go ``batch_size`` items to a command and
    ``pipeline_size`` commands to a round trip.

    ``shards``, ``wait_for_replicas`` and ``wait_timeout`` as for ``BloomFilter``: every write
    (adds, deletes, ``create``) confirms on n replicas, with the same marker write after it.
    """

    def create(self) -> bool:
        """Reserves the filter (``CF.RESERVE``, every parameter spelled out) if the key is
        missing: True if this call created it (a sharded filter: any shard, or the parameters).
        An existing cuckoo filter is left alone; a key holding anything else raises
        ``KeyTypeError``."""
        return self._run(self._core.create())

    def key_type(self) -> str:
        """What TYPE answers for the key (``MBbloomCF`` for a cuckoo filter, ``none`` if
        missing; a sharded filter's key holds its parameters: ``string``)."""
        return self._run(self._core.key_type())

    def add(self, item: Item) -> bool:
        """Adds ``item`` (``CF.INSERT``: another copy if it is there): True; ``FilterFullError``
        if the filter has no room for it."""
        return self._run(self._core.add(item))

    def add_unique(self, item: Item) -> bool:
        """Adds ``item`` unless the filter (probably) holds it (``CF.INSERTNX``): True if added,
        False if it seemed to be there; ``FilterFullError`` if there was no room."""
        return self._run(self._core.add(item, CF_INSERTNX))

    def add_many(self, items: Iterable[Item], *, unique: bool = False) -> list[bool]:
        """Adds every item, in order (``CF.INSERT``; with ``unique``, ``CF.INSERTNX``): for each,
        whether it was added. An item with no room raises ``FilterFullError`` with the answers
        before it (``.results``) and its position (``.index``)."""
        return self._run(self._core.batched(items, CF_INSERTNX if unique else True))

    def __contains__(self, item: Item) -> bool:
        return self.contains(item)

    def contains(self, item: Item) -> bool:
        """Whether ``item`` may be in the filter (False: certainly not)."""
        return self._run(self._core.contains(item))

    def contains_many(self, items: Iterable[Item]) -> list[bool]:
        """For each item, whether it may be in the filter (False: certainly not)."""
        return self._run(self._core.batched(items, False))

    def delete(self, item: Item) -> bool:
        """Forgets one copy of ``item`` (``CF.DEL``): True if one was deleted; False if the
        filter does not hold it, or if there is no filter at the key (nothing to delete: False,
        not an error)."""
        return self._run(self._cuckoo.remove(item))

    def delete_many(self, items: Iterable[Item]) -> list[bool]:
        """``delete`` of every item, in order, pipelined (one ``CF.DEL`` each): for each,
        whether a copy was deleted."""
        return self._run(self._core.batched(items, CF_DEL))

    def count(self, item: Item | None = None) -> int:
        """Without ``item``: the items the filter holds (adds less deletes, ``CF.INFO``), summed
        over the shards; 0 for a missing key. With ``item``: the copies of it (``CF.COUNT``)."""
        if item is None:
            return self._run(self._core.count())
        return self._run(self._cuckoo.copies(item))

    def info(self) -> dict[str, Any]:
        """``CF.INFO`` as a dict: Size, Number of buckets, Number of filters, Number of items
        inserted (held now), Number of items deleted, Bucket size, Expansion rate, Max
        iterations, and Error rate (a float) for a bounded filter; for a sharded filter the
        counts and sizes are summed and Shards is added, a shard not created yet counting as
        the empty shard its first write creates (its buckets, no sub-filter, no item, 0 bytes).
        A missing filter raises ``ResponseError('not found')``."""
        return self._run(self._core.info())

    def drop(self) -> int:
        """Deletes the filter itself (every shard, and a sharded filter's parameters): the keys
        removed."""
        return self._run(self._core.delete())
