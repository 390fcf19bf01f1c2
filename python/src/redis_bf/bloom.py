"""A Bloom filter in Redis (redis-bf's ``BF.*`` commands) behind a small Python class.

``BloomFilter(client, key, capacity, error_rate)`` answers "have I seen this?" with one command per
item (``add``, ``in``) or per batch (``add_many``, ``contains_many``, several batches to a round
trip). Every write carries the filter's creation parameters (``BF.INSERT key CAPACITY c ERROR e
ITEMS ...``), so whichever command reaches a missing key first creates the filter as asked, never
with the server's defaults: a key deleted by a flush, or never reserved, cannot silently become a
100-item filter.

Replies: RESP2 answers 1/0, RESP3 True/False; both come back as ``bool``. An error reply is raised,
never read as an answer: a top-level one as redis-py's ``ResponseError`` (``WRONGTYPE``, ``OOM``,
...), an error element at the end of a batch's array (``non scaling filter is full``) as
``BloomFilterError``, with the answers for the items before it. A server without the module
(``unknown command 'BF.INSERT'``) raises ``ModuleMissingError``, which names the server and says
how to get one with the module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import redis
from redis.exceptions import ResponseError

# What redis-py can send as an item (it encodes str as UTF-8, numbers by repr).
Item = bytes | str | int | float

FILTER_TYPE = "MBbloom--"  # what TYPE answers for a redis-bf (or RedisBloom) filter
MAX_WINDOW = 315_576_000  # the longest window the module takes: ten years, in seconds


class BloomFilterError(ResponseError):
    """An error element inside a batch reply, or a reply that is not a filter's answer.

    ``results`` holds the answers for the items before the failing one (they were applied), and
    ``index`` is the failing item's position among the items of the call.
    """

    def __init__(self, message: str, results: Sequence[bool] = (), index: int = 0):
        super().__init__(message)
        self.results = list(results)
        self.index = index


class ModuleMissingError(ResponseError):
    """The server answered ``unknown command 'BF....'``: it has no Bloom filter module loaded.

    Typically a packaged redis-server on the default port, next to the one ``make run`` started
    on another port. The message names the server the client talks to and how to get one with the
    module.
    """

    def __init__(self, client: Any, reply: str):
        self.address = server_address(client)
        super().__init__(
            f"the Redis server at {self.address} has no Bloom filter module loaded (it answered: "
            f"{reply.strip()}): connect to the server that has it (`make run` prints its port), "
            "or start one with `redis-server --loadmodule /path/to/libredis_bf.so`"
        )


def connection_kwargs(client: Any) -> dict[str, Any]:
    """Where a redis-py client connects: its pool's host, port, path and db; a cluster client's
    default node; empty if it does not say."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        return dict(getattr(pool, "connection_kwargs", {}) or {})
    default_node = getattr(client, "get_default_node", None)
    node = default_node() if callable(default_node) else None
    if node is not None:
        return {"host": node.host, "port": node.port}
    return {}


def server_address(client: Any) -> str:
    """host:port (or the socket path) a redis-py client talks to, as far as it says."""
    kwargs = connection_kwargs(client)
    if kwargs.get("path"):
        return str(kwargs["path"])
    if "host" not in kwargs:
        return "the address this client uses"
    return f"{kwargs['host']}:{kwargs.get('port', 6379)}"


def server_url(client: Any) -> str:
    """A URL for the server and database a redis-py client talks to (no password), for a hint
    such as ``python -m redis_bf.migrate --url <this> <key>``."""
    kwargs = connection_kwargs(client)
    db = kwargs.get("db", 0) or 0
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={db}"
    return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{db}"


def require_module(client: Any, key: str) -> None:
    """Raises ``ModuleMissingError`` unless the server has the ``BF.*`` commands. It asks
    ``BF.CARD key``: any other answer (a count, WRONGTYPE, an ACL refusal) says it has them."""
    try:
        client.execute_command("BF.CARD", key)
    except ResponseError as error:
        if is_module_missing(error):
            raise ModuleMissingError(client, str(error)) from None


def is_module_missing(error: BaseException) -> bool:
    """True for the server's answer to a ``BF.*`` command it does not know."""
    message = str(error)
    return "unknown command" in message and "'bf." in message.lower()


def explained(client: Any, error: ResponseError) -> ResponseError:
    """``error``, or a ``ModuleMissingError`` if it says the server has no ``BF.*`` commands."""
    return ModuleMissingError(client, str(error)) if is_module_missing(error) else error


class KeyTypeError(ResponseError):
    """The key holds a value that is not a Bloom filter (``key_type`` is what TYPE answered)."""

    def __init__(self, key: str, key_type: str, hint: str = ""):
        message = f"{key!r} holds a {key_type}, not a Bloom filter"
        super().__init__(f"{message}: {hint}" if hint else message)
        self.key = key
        self.key_type = key_type


@dataclass(frozen=True)
class FilterOptions:
    """How a missing filter is created.

    The one place that spells out the creation arguments, for ``BF.RESERVE`` and for ``BF.INSERT``:
    a new creation option is one more field here and one more pair in both lists.

    ``window`` (seconds, optional) makes a windowed filter: an item is remembered for at least
    ``window`` seconds and forgotten by 1.25 x ``window``, and ``capacity`` counts the items of one
    window.
    """

    capacity: int
    error_rate: float
    window: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int):
            raise TypeError(f"capacity must be an int, not {type(self.capacity).__name__}")
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {self.capacity}")
        if not 0.0 < float(self.error_rate) < 1.0:
            raise ValueError(f"error_rate must be strictly between 0 and 1, not {self.error_rate}")
        if self.window is not None:
            if isinstance(self.window, bool) or not isinstance(self.window, int):
                raise TypeError(
                    f"window must be an int (seconds), not {type(self.window).__name__}"
                )
            if not 1 <= self.window <= MAX_WINDOW:
                raise ValueError(
                    f"window must be from 1 to {MAX_WINDOW} seconds (ten years), not {self.window}"
                )

    def window_args(self) -> list[Any]:
        return [] if self.window is None else ["WINDOW", self.window]

    def reserve_args(self) -> list[Any]:
        """``BF.RESERVE key <these>``."""
        return [float(self.error_rate), self.capacity, *self.window_args()]

    def insert_args(self) -> list[Any]:
        """``BF.INSERT key <these> ITEMS ...``: applied only when the call creates the filter."""
        return ["CAPACITY", self.capacity, "ERROR", float(self.error_rate), *self.window_args()]


def as_bool(reply: Any) -> bool:
    """One answer: RESP3 ``True``/``False`` or RESP2 ``1``/``0``. Anything else raises."""
    if isinstance(reply, bool):
        return reply
    if isinstance(reply, int) and reply in (0, 1):
        return reply == 1
    if isinstance(reply, ResponseError):
        raise BloomFilterError(str(reply))
    raise BloomFilterError(f"unexpected reply {reply!r}: not a Bloom filter answer")


def as_bools(reply: Any, offset: int = 0) -> list[bool]:
    """The answers of a batch command; an error element is raised with the answers before it.

    ``offset`` is the position of the batch's first item among the items of the whole call.
    """
    if not isinstance(reply, list):
        raise BloomFilterError(f"unexpected reply {reply!r}: not an array of answers")
    answers: list[bool] = []
    for element in reply:
        if isinstance(element, ResponseError):
            raise BloomFilterError(str(element), answers, offset + len(answers))
        answers.append(as_bool(element))
    return answers


def decode(value: Any) -> Any:
    """bytes to str (a client without ``decode_responses`` answers bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def info_dict(reply: Any) -> dict[str, Any]:
    """``BF.INFO``: a flat name/value array in RESP2, a map in RESP3; a dict either way."""
    if isinstance(reply, dict):
        return {decode(name): value for name, value in reply.items()}
    if isinstance(reply, list) and len(reply) % 2 == 0:
        return {decode(reply[i]): reply[i + 1] for i in range(0, len(reply), 2)}
    raise BloomFilterError(f"unexpected BF.INFO reply {reply!r}")


def chunks(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class BloomFilter:
    """A redis-bf Bloom filter at ``key``, created by the first write with ``capacity`` and
    ``error_rate`` (and ``window``, in seconds: remember each item for that long, not forever).

    ``add``/``add_many`` answer whether each item was new (and record it); ``item in bf`` and
    ``contains_many`` whether it may have been added (False: certainly not). Batches go
    ``batch_size`` items to a command and ``pipeline_size`` commands to a round trip.

    The filter scales: past ``capacity`` it adds sub-filters and keeps its false-positive rate
    below ``error_rate``. An existing filter is used as it is (its own capacity, error rate and
    window).

    With ``window``, an item added at t is held until at least t + window and forgotten by
    t + 1.25 x window, after which ``add`` answers True for it again; ``capacity`` is the items
    of one window, and the server frees old items on its own (the key itself stays, an empty
    windowed filter, once everything has expired: delete it, or set an EXPIRE, to have it gone).
    """

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        capacity: int,
        error_rate: float,
        *,
        window: int | None = None,
        batch_size: int = 1000,
        pipeline_size: int = 16,
    ):
        if batch_size < 1 or pipeline_size < 1:
            raise ValueError("batch_size and pipeline_size must be at least 1")
        self.client = client
        self.key = key
        self.options = FilterOptions(capacity, error_rate, window)
        self.batch_size = batch_size
        self.pipeline_size = pipeline_size
        # Every write: BF.INSERT key <creation options> ITEMS item [item ...].
        self._insert = ("BF.INSERT", key, *self.options.insert_args(), "ITEMS")

    def __repr__(self) -> str:
        window = "" if self.options.window is None else f", window={self.options.window}"
        return (
            f"BloomFilter(key={self.key!r}, capacity={self.options.capacity}, "
            f"error_rate={self.options.error_rate}{window})"
        )

    def _execute(self, *command: Any) -> Any:
        """One command; a server without the module raises ``ModuleMissingError``."""
        try:
            return self.client.execute_command(*command)
        except ResponseError as error:
            raise explained(self.client, error) from None

    def create(self) -> bool:
        """Reserves the filter if the key is missing: True if this call created it.

        An existing filter is left alone (False); a key holding anything else raises
        ``KeyTypeError``.
        """
        try:
            self._execute("BF.RESERVE", self.key, *self.options.reserve_args())
            return True
        except ModuleMissingError:
            raise
        except ResponseError as error:
            # redis-bf: "item exists" for a filter, WRONGTYPE for anything else. RedisBloom
            # answers "item exists" for both: TYPE tells them apart.
            message = str(error)
            if "item exists" not in message and not message.startswith("WRONGTYPE"):
                raise
        key_type = self.key_type()
        if key_type != FILTER_TYPE:
            raise KeyTypeError(self.key, key_type)
        return False

    def key_type(self) -> str:
        """What TYPE answers for the key (``MBbloom--`` for a filter, ``none`` if missing)."""
        return str(decode(self.client.type(self.key)))

    def add(self, item: Item) -> bool:
        """Records ``item``: True if it was new, False if the filter (probably) held it."""
        return as_bools(self._execute(*self._insert, item))[0]

    def add_many(self, items: Iterable[Item]) -> list[bool]:
        """Records every item, in order: for each, whether it was new."""
        return self._batched(items, self._insert)

    def __contains__(self, item: Item) -> bool:
        return as_bool(self._execute("BF.EXISTS", self.key, item))

    def contains_many(self, items: Iterable[Item]) -> list[bool]:
        """For each item, whether it may have been added (False: certainly not)."""
        return self._batched(items, ("BF.MEXISTS", self.key))

    def count(self) -> int:
        """Items added (``BF.CARD``: an item counts when it was new); 0 for a missing key."""
        return int(self._execute("BF.CARD", self.key))

    def info(self) -> dict[str, Any]:
        """``BF.INFO`` as a dict: Capacity, Size, Number of filters, Number of items inserted,
        Expansion rate, and Window (seconds) for a windowed filter. A missing key raises
        ``ResponseError('not found')``."""
        return info_dict(self._execute("BF.INFO", self.key))

    def _batched(self, items: Iterable[Item], command: tuple[Any, ...]) -> list[bool]:
        answers: list[bool] = []
        batches = chunks(items, self.batch_size)
        while round_trip := list(islice(batches, self.pipeline_size)):
            pipe = self.client.pipeline(transaction=False)
            for batch in round_trip:
                pipe.execute_command(*command, *batch)
            replies = pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, ResponseError):
                    if is_module_missing(reply):
                        raise ModuleMissingError(self.client, str(reply))
                    # A top-level error (WRONGTYPE, OOM, ...): no item of this batch was applied.
                    raise BloomFilterError(str(reply), answers, len(answers))
                try:
                    answers.extend(as_bools(reply, len(answers)))
                except BloomFilterError as error:
                    error.results = answers + error.results
                    raise
        return answers
