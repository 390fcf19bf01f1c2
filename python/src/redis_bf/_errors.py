"""The errors of both filters, and how a server's answer becomes one (the spec's "errors",
docs/sharding.md): the exception classes users import from ``redis_bf``, the one-line messages,
and the tests that tell an error reply apart (a server without the module, a filter with no room,
a missing key). No I/O: a client is only asked where it connects, for the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import ResponseError

FILTER_TYPE = "MBbloom--"  # what TYPE answers for a redis-bf (or RedisBloom) filter
CUCKOO_TYPE = "MBbloomCF"  # and for a cuckoo filter
# What a filter's TYPE is called in messages.
TYPE_NAMES = {FILTER_TYPE: "Bloom filter", CUCKOO_TYPE: "cuckoo filter"}


class BloomFilterError(ResponseError):
    """An error element inside a batch reply, or a reply that is not a filter's answer.

    ``results`` holds the answers for the items before the failing one (they were applied), and
    ``index`` is the failing item's position among the items of the call. Items after it in the
    same round trip may have been applied too.
    """

    def __init__(self, message: str, results: Sequence[bool] = (), index: int = 0):
        super().__init__(message)
        self.results = list(results)
        self.index = index


class FilterFullError(BloomFilterError):
    """The filter has no room for an item, which was not added: a full ``NONSCALING`` Bloom filter
    (``non scaling filter is full``), or a cuckoo filter that cannot take it (full and unable to
    grow: ``EXPANSION 0``, ``cf-max-expansions`` sub-filters, a size limit; or the item added so
    many times that its buckets hold nothing but copies of it). ``results`` and ``index`` as for
    ``BloomFilterError``."""


class NotReplicatedError(BloomFilterError):
    """Writes were applied on a primary but fewer replicas than ``wait_for_replicas`` confirmed
    them (and every write the primary made before them) within the timeout (``WAIT``), or that
    could not be asked: they may be lost if that primary fails now.

    ``results`` holds the answers of the items sent (applied on the primaries: they stand there),
    ``index`` is the first item that was not sent, ``address`` the primary (host:port) that could
    not confirm, ``confirmed`` how many replicas did (None if they could not be asked) and
    ``asked`` how many were asked for."""

    def __init__(
        self,
        message: str,
        results: Sequence[bool] = (),
        index: int = 0,
        *,
        address: str = "",
        confirmed: int | None = None,
        asked: int = 0,
    ):
        super().__init__(message, results, index)
        self.address = address
        self.confirmed = confirmed
        self.asked = asked


class FilterMismatchError(BloomFilterError):
    """A sharded filter exists at the key with other parameters (shard count, error rate or
    window) than this ``BloomFilter`` was given: using it would make a second, different filter."""


class ModuleMissingError(ResponseError):
    """The server answered ``unknown command 'BF....'`` (or ``'CF....'``): it has no Bloom filter
    module loaded (or one without cuckoo filters).

    Typically a packaged redis-server on the default port, next to the one ``redis-bf-server`` (or
    ``make run``) started on another port. The message names the server the client talks to and
    how to get one with the module.
    """

    def __init__(self, client: Any, reply: str):
        self.address = server_address(client)
        what = (
            "cuckoo filter commands loaded"
            if "'cf." in reply.lower()
            else "Bloom filter module loaded"
        )
        super().__init__(
            f"the Redis server at {self.address} has no {what} (it answered: "
            f"{reply.strip()}): connect to the server that has it (`redis-bf-server` and `make "
            "run` print its port), or start one with `redis-bf-server`, or `redis-server "
            '--loadmodule "$(redis-bf-module-path)"`'
        )


class ErrorRateUnsupportedError(BloomFilterError):
    """The server answered a cuckoo filter's insert that carries its error rate (``CF.INSERT key
    CAPACITY c ERROR e ITEMS ...``) with RedisBloom's ``Unknown argument received``: it has
    RedisBloom's ``CF.*`` commands, which take no ``ERROR``, not redis-bf's. A ``CuckooFilter``
    with ``error_rate=None`` makes RedisBloom's kind of cuckoo filter, which it has.
    ``results`` and ``index`` as for ``BloomFilterError``."""


# What RedisBloom answers CF.INSERT and CF.INSERTNX for an option it does not know (ERROR).
REDISBLOOM_UNKNOWN_ARGUMENT = "Unknown argument received"


def error_rate_unsupported(client: Any, message: str) -> str:
    """The message of ``ErrorRateUnsupportedError`` for the server's answer ``message``."""
    return (
        f"the Redis server at {server_address(client)} refused the cuckoo filter's error rate "
        f"(it answered: {message.strip()}): it has RedisBloom's cuckoo filters, which take no "
        "ERROR; use CuckooFilter(client, key, capacity, error_rate=None) for RedisBloom's kind "
        "(its false-positive rate grows with each sub-filter), or a server with redis-bf for a "
        "bounded one"
    )


class KeyTypeError(ResponseError):
    """The key holds a value that is not the filter asked for (``key_type`` is what TYPE
    answered; ``expected`` what the key should hold: "Bloom filter" or "cuckoo filter")."""

    def __init__(self, key: str, key_type: str, hint: str = "", expected: str = "Bloom filter"):
        message = f"{key!r} holds a {TYPE_NAMES.get(key_type, key_type)}, not a {expected}"
        super().__init__(f"{message}: {hint}" if hint else message)
        self.key = key
        self.key_type = key_type
        self.expected = expected


# Raised to users, who import them from ``redis_bf``: tracebacks name them so.
for _error in (
    BloomFilterError,
    FilterFullError,
    NotReplicatedError,
    FilterMismatchError,
    ErrorRateUnsupportedError,
    ModuleMissingError,
    KeyTypeError,
):
    _error.__module__ = "redis_bf"


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


def is_module_missing(error: BaseException) -> bool:
    """True for the server's answer to a ``BF.*`` or ``CF.*`` command it does not know."""
    message = str(error).lower()
    return "unknown command" in message and ("'bf." in message or "'cf." in message)


def is_not_found(reply: Any) -> bool:
    """True for ``BF.INFO``'s and ``CF.INFO``'s answer on a missing key, and ``CF.DEL``'s
    (redis-bf's and RedisBloom's: "not found", "Not found")."""
    return (
        isinstance(reply, ResponseError) and str(reply).removeprefix("ERR ").lower() == "not found"
    )


# What the module answers when a filter has no room for an item (a NONSCALING Bloom filter; a
# cuckoo filter that cannot grow, or an item with nothing but copies of it in its buckets).
FULL_REPLIES = (
    "non scaling filter is full",
    "filter is full",
    "maximum expansions reached",
    "item added too many times",
)


def is_full(message: str) -> bool:
    """True for an error that says the filter has no room for an item (``FULL_REPLIES``)."""
    text = message.lower()
    return any(reply in text for reply in FULL_REPLIES)


def error_class(message: str) -> type[BloomFilterError]:
    """``FilterFullError`` for a filter that has no room, ``BloomFilterError`` otherwise."""
    return FilterFullError if is_full(message) else BloomFilterError


def explained(client: Any, error: ResponseError) -> ResponseError:
    """``error``, or a ``ModuleMissingError`` if it says the server has no ``BF.*``/``CF.*``
    commands, or a ``FilterFullError`` if it says the filter has no room."""
    if is_module_missing(error):
        return ModuleMissingError(client, str(error))
    if is_full(str(error)) and not isinstance(error, BloomFilterError):
        return FilterFullError(str(error))
    return error


# What CF.INSERT and CF.INSERTNX answer for an item that found no room (-1, RESP3 CF.INSERT false).
CUCKOO_REFUSED = (
    "the cuckoo filter has no room for the item, which was not added: it is full and cannot grow "
    "(EXPANSION 0, cf-max-expansions sub-filters, or a size limit: bf.max-filter-bytes, "
    "maxmemory), or the item was added so many times that its buckets hold nothing but copies "
    "of it"
)
