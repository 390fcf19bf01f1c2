"""``redis_bf.BloomFilter`` and ``redis_bf.CuckooFilter`` for asyncio: the same API and answers
over ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``, every call awaitable::

    import redis.asyncio
    from redis_bf.asyncio import BloomFilter

    async def crawl(urls):
        seen = BloomFilter(redis.asyncio.Redis(), "crawl:seen", 10_000_000, 1e-6)
        for url, new in zip(urls, await seen.add_many(urls)):
            ...

Each runs the same operations of ``redis_bf._core`` as its blocking twin (the commands and how
their replies become answers); only the sending differs. ``item in bf`` cannot be awaited (it
raises a ``TypeError`` that says so): use ``await bf.contains(item)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, TypeVar

from redis.asyncio.cluster import PipelineCommand
from redis.exceptions import RedisError, ResponseError

from ._core import CF_DEL, CF_INSERTNX, Batch, Call, Core, Operation, is_cluster
from ._errors import server_address
from ._replies import Waited
from ._shards import Item
from .bloom import BloomFilterBase
from .cuckoo import CuckooFilterBase

__all__ = ["BloomFilter", "CuckooFilter"]

T = TypeVar("T")


class AsyncRunner:
    """Runs the operations of a filter's core on an asyncio redis-py client: as
    ``redis_bf.bloom.Runner``, awaited."""

    client: Any
    _core: Core

    def __contains__(self, item: Item) -> bool:
        """``item in f`` cannot wait for the server's answer: a TypeError that says what to
        write instead."""
        raise TypeError(
            f"`item in f` cannot be awaited on {type(self).__module__}.{type(self).__name__}: "
            "use `await f.contains(item)`"
        )

    async def _run(self, operation: Operation[T]) -> T:
        """Runs an operation of the core: sends each request it makes, hands back the answer."""
        try:
            request = next(operation)
            while True:
                request = operation.send(await self._send(request))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def _send(self, request: Call | Batch) -> Any:
        if isinstance(request, Call):
            try:
                return await self.client.execute_command(*request.args, **request.options)
            except ResponseError as error:
                return error
        if request.wait and is_cluster(self.client):
            return await self._send_waited(request)
        pipe = self.client.pipeline(transaction=False)
        for command in request.commands:
            pipe.execute_command(*command)
        waits = self._core.wait_commands(request.commands[0][1]) if request.wait else []
        for command in waits:
            pipe.execute_command(*command)
        replies = await pipe.execute(raise_on_error=False)
        Core.raise_transport(replies)
        if not request.wait:
            return replies
        sent = len(request.commands)
        return [*replies[:sent], Waited(server_address(self.client), replies[sent:])]

    async def _send_waited(self, request: Batch) -> list[Any]:
        """As ``redis_bf.BloomFilter._send_waited``: each node's writes and
        ``Core.wait_commands`` on one connection of the node, nodes at once."""
        await self.client.initialize()  # the slots, for get_node_from_key (once)
        groups = self._core.wait_groups(request)
        stacks = [
            [PipelineCommand(i, *request.commands[i]) for i in positions]
            + [
                PipelineCommand(len(positions) + n, *command)
                for n, command in enumerate(
                    self._core.wait_commands(request.commands[positions[0]][1])
                )
            ]
            for _, positions in groups
        ]
        try:
            await asyncio.gather(
                *(
                    node.execute_pipeline(stack)
                    for (node, _), stack in zip(groups, stacks, strict=True)
                )
            )
            Core.raise_transport([command.result for stack in stacks for command in stack])
        except RedisError:
            await self._refresh(request.commands[0][1])
            raise
        replies: list[Any] = [None] * len(request.commands)
        waits = []
        for (node, positions), stack in zip(groups, stacks, strict=True):
            if any(isinstance(command.result, ResponseError) for command in stack):
                await self._refresh(request.commands[positions[0]][1])
            for position, command in zip(positions, stack, strict=False):
                replies[position] = command.result
            waits.append(Waited(node.name, [command.result for command in stack[len(positions) :]]))
        return replies + waits

    async def _refresh(self, key: str) -> None:
        """As ``redis_bf.BloomFilter._refresh``."""
        try:
            await self.client.execute_command("EXISTS", key)
        except RedisError:
            pass


class BloomFilter(AsyncRunner, BloomFilterBase):
    """A redis-bf Bloom filter at ``key`` (or over ``shards`` keys), for asyncio: see
    ``redis_bf.BloomFilter`` for the parameters and the answers."""

    repr_name = "redis_bf.asyncio.BloomFilter"

    async def create(self) -> bool:
        """Reserves the filter (every shard) if missing: True if this call created anything."""
        return await self._run(self._core.create())

    async def key_type(self) -> str:
        return await self._run(self._core.key_type())

    async def add(self, item: Item) -> bool:
        """Records ``item``: True if it was new, False if the filter (probably) held it."""
        return await self._run(self._core.add(item))

    async def add_many(self, items: Iterable[Item]) -> list[bool]:
        """Records every item, in order: for each, whether it was new."""
        return await self._run(self._core.batched(items, write=True))

    async def contains(self, item: Item) -> bool:
        """Whether ``item`` may have been added (False: certainly not)."""
        return await self._run(self._core.contains(item))

    async def contains_many(self, items: Iterable[Item]) -> list[bool]:
        """For each item, whether it may have been added (False: certainly not)."""
        return await self._run(self._core.batched(items, write=False))

    async def count(self) -> int:
        """Items added, summed over the shards; 0 for a missing key."""
        return await self._run(self._core.count())

    async def info(self) -> dict[str, Any]:
        """``BF.INFO`` as a dict (summed over the shards, with Shards, for a sharded filter; a
        shard not created yet counts as empty, 0 bytes)."""
        return await self._run(self._core.info())

    async def delete(self) -> int:
        """Deletes the filter (every shard, and a sharded filter's parameters): the keys removed."""
        return await self._run(self._core.delete())

    async def drop(self) -> int:
        """Deletes the filter: as ``delete()``."""
        return await self._run(self._core.delete())


class CuckooFilter(AsyncRunner, CuckooFilterBase):
    """A redis-bf cuckoo filter at ``key`` (or over ``shards`` keys), for asyncio: see
    ``redis_bf.CuckooFilter`` for the parameters and the answers."""

    repr_name = "redis_bf.asyncio.CuckooFilter"

    async def create(self) -> bool:
        """Reserves the filter (every shard) if missing: True if this call created anything."""
        return await self._run(self._core.create())

    async def key_type(self) -> str:
        return await self._run(self._core.key_type())

    async def add(self, item: Item) -> bool:
        """Adds ``item`` (another copy if it is there): True; ``FilterFullError`` if no room."""
        return await self._run(self._core.add(item))

    async def add_unique(self, item: Item) -> bool:
        """Adds ``item`` unless the filter (probably) holds it: True if added, False if not."""
        return await self._run(self._core.add(item, CF_INSERTNX))

    async def add_many(self, items: Iterable[Item], *, unique: bool = False) -> list[bool]:
        """Adds every item, in order (with ``unique``, only those it does not seem to hold):
        for each, whether it was added."""
        return await self._run(self._core.batched(items, CF_INSERTNX if unique else True))

    async def contains(self, item: Item) -> bool:
        """Whether ``item`` may be in the filter (False: certainly not)."""
        return await self._run(self._core.contains(item))

    async def contains_many(self, items: Iterable[Item]) -> list[bool]:
        """For each item, whether it may be in the filter (False: certainly not)."""
        return await self._run(self._core.batched(items, False))

    async def delete(self, item: Item) -> bool:
        """Forgets one copy of ``item``: True if one was deleted; False if the filter does not
        hold it or there is no filter at the key."""
        return await self._run(self._cuckoo.remove(item))

    async def delete_many(self, items: Iterable[Item]) -> list[bool]:
        """``delete`` of every item, in order, pipelined: for each, whether one was deleted."""
        return await self._run(self._core.batched(items, CF_DEL))

    async def count(self, item: Item | None = None) -> int:
        """Items held (summed over the shards; 0 for a missing key), or the copies of ``item``."""
        if item is None:
            return await self._run(self._core.count())
        return await self._run(self._cuckoo.copies(item))

    async def info(self) -> dict[str, Any]:
        """``CF.INFO`` as a dict (summed over the shards, with Shards, for a sharded filter)."""
        return await self._run(self._core.info())

    async def drop(self) -> int:
        """Deletes the filter itself (every shard, and a sharded filter's parameters): the keys
        removed."""
        return await self._run(self._core.delete())
