"""What ``redis_bf.BloomFilter``, ``redis_bf.CuckooFilter`` and their asyncio twins share: the
commands they send and how the replies become answers, without any I/O (each class only sends what
this builds and hands back what came). ``Core`` is a Bloom filter's (``BF.*``), ``CuckooCore`` a
cuckoo filter's (``CF.*``): the same batching, sharding, creation on a missing key, and
``wait_for_replicas``, with the family's own commands and replies.

A filter lives at one key, or, with ``shards=N``, at N keys (see ``Shards``): the items of a batch
are then grouped by shard, each shard's items go ``batch_size`` to a command, and one pipeline
carries them all (on a cluster client, redis-py sends it as one pipeline per node, all nodes at
once).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import islice
from typing import Any, TypeVar

from redis.crc import key_slot
from redis.exceptions import ResponseError

# What redis-py can send as an item (it encodes str as UTF-8, numbers by repr).
Item = bytes | str | int | float

FILTER_TYPE = "MBbloom--"  # what TYPE answers for a redis-bf (or RedisBloom) filter
CUCKOO_TYPE = "MBbloomCF"  # and for a cuckoo filter
# What a filter's TYPE is called in messages.
TYPE_NAMES = {FILTER_TYPE: "Bloom filter", CUCKOO_TYPE: "cuckoo filter"}
MAX_WINDOW = 315_576_000  # the longest window the module takes: ten years, in seconds
SLOTS = 16384  # Redis Cluster's hash slots
MAX_SHARDS = 1024
# A shard's capacity is its share plus this many standard deviations of the items it gets (see
# ``shard_capacity``).
SHARD_SLACK_SIGMAS = 4.0
MANIFEST_FORMAT = "redis-bf sharded filter"
# The key that ``wait_for_replicas`` writes (and deletes) after a batch's writes, next to the
# filter's key (``Core.marker``), so that the ``WAIT`` after it covers the primary's whole
# replication stream up to the answers. Its value, and how long it lives if the DEL never comes.
WAIT_MARKER_SUFFIX = ":redis-bf-wait"
WAIT_MARKER_MILLIS = 60_000
# An item's shard: the first 8 bytes of its BLAKE2b digest with this personalisation, little
# endian, times the shard count, over 2^64. Part of the stored form: changing it loses items.
SHARD_HASH_PERSON = b"redis-bf"


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


def window_seconds(value: Any, name: str = "window") -> int | None:
    """A window as whole seconds, or None for none (None, an empty string, or 0).

    Takes an int, a float or str holding whole seconds, or a ``datetime.timedelta``.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if not seconds.is_integer():
        raise ValueError(f"{name} must be whole seconds, not {value!r}")
    return int(seconds) or None


@dataclass(frozen=True)
class FilterOptions:
    """How a missing filter is created.

    The one place that spells out the creation arguments, for ``BF.RESERVE`` and for ``BF.INSERT``:
    a new creation option is one more field here and one more pair in both lists.

    ``window`` (whole seconds or a ``timedelta``, optional) makes a windowed filter: an item is
    remembered for at least ``window`` seconds and forgotten by 1.25 x ``window``, and
    ``capacity`` counts the items of one window. It is kept as seconds; None, 0 and
    ``timedelta(0)`` mean no window.
    """

    capacity: int
    error_rate: float
    window: int | None = None

    def __init__(
        self, capacity: int, error_rate: float, window: int | timedelta | None = None
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise TypeError(f"capacity must be an int, not {type(capacity).__name__}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        if not 0.0 < float(error_rate) < 1.0:
            raise ValueError(f"error_rate must be strictly between 0 and 1, not {error_rate}")
        if window is not None and not isinstance(window, timedelta):
            if isinstance(window, bool) or not isinstance(window, int):
                raise TypeError(
                    f"window must be an int (seconds) or a timedelta, not {type(window).__name__}"
                )
        # None, 0 and timedelta(0) alike: no window (as the dupefilter's setting and
        # redis-bf-migrate --window take them).
        seconds = None if window is None else window_seconds(window)
        if seconds is not None and not 1 <= seconds <= MAX_WINDOW:
            raise ValueError(
                f"window must be from 1 to {MAX_WINDOW} seconds (ten years), or 0 or None for "
                f"none, not {window!r}"
            )
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "error_rate", error_rate)
        object.__setattr__(self, "window", seconds)

    def window_args(self) -> list[Any]:
        return [] if self.window is None else ["WINDOW", self.window]

    def reserve_args(self) -> list[Any]:
        """``BF.RESERVE key <these>``."""
        return [float(self.error_rate), self.capacity, *self.window_args()]

    def insert_args(self) -> list[Any] | None:
        """``BF.INSERT key <these> ITEMS ...``: applied only when the call creates the filter."""
        return ["CAPACITY", self.capacity, "ERROR", float(self.error_rate), *self.window_args()]

    def resized(self, capacity: int) -> FilterOptions:
        """The same filter for another capacity (a shard's)."""
        return FilterOptions(capacity, self.error_rate, self.window)

    def identity(self) -> dict[str, Any]:
        """What every process of a sharded filter must give alike (kept at its key)."""
        return {"error_rate": float(self.error_rate), "window": self.window}

    def describe(self) -> str:
        """The parameters, for a ``repr``."""
        window = "" if self.window is None else f", window={self.window}"
        return f"capacity={self.capacity}, error_rate={self.error_rate}{window}"


# A cuckoo filter's parameters, as the module takes them (src/cuckoo/create.rs).
CUCKOO_MIN_ERROR = 1e-12
BOUNDED_BUCKET_SIZE = 4  # a filter with an error rate (ERROR) has buckets of 4 slots
BOUNDED_MAX_ITERATIONS = 500  # and, unless told, these: what CF.INSERT ... ERROR makes
BOUNDED_EXPANSION = 2
# RedisBloom's kind (no error rate): its defaults, spelled out on every creation so that the
# server's bf.cf-* configs never decide.
REDISBLOOM_BUCKET_SIZE = 2
REDISBLOOM_MAX_ITERATIONS = 20
REDISBLOOM_EXPANSION = 1


def whole(name: str, value: Any, low: int, high: int) -> int:
    """An int parameter within ``low..high``: ``TypeError`` or ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, not {value}")
    return value


@dataclass(frozen=True)
class CuckooOptions:
    """How a missing cuckoo filter is created.

    ``error_rate`` (the default, 0.01) makes this module's bounded filter (``ERROR``): its
    false-positive rate stays at most ``error_rate`` however far it grows, with buckets of 4, up to
    ``max_iterations`` evictions (500) before it grows, by ``expansion`` (2) each time. Then
    ``CF.INSERT key CAPACITY c ERROR e ITEMS ...`` says all of it, and every write carries it.

    ``error_rate=None`` makes RedisBloom's kind: ``bucket_size`` (2), ``max_iterations`` (20) and
    ``expansion`` (1), RedisBloom's defaults, spelled out; its false-positive rate grows with every
    sub-filter. ``CF.INSERT`` cannot carry those, so a write creates a missing key with a
    ``CF.RESERVE`` first, and inserts with ``NOCREATE`` (so does a bounded filter given another
    ``max_iterations`` or ``expansion``): a missing key is never created with the server's
    ``bf.cf-*`` defaults either way.
    """

    capacity: int
    error_rate: float | None = 0.01
    bucket_size: int = BOUNDED_BUCKET_SIZE
    max_iterations: int = BOUNDED_MAX_ITERATIONS
    expansion: int = BOUNDED_EXPANSION

    def __init__(
        self,
        capacity: int,
        error_rate: float | None = 0.01,
        *,
        bucket_size: int | None = None,
        max_iterations: int | None = None,
        expansion: int | None = None,
    ) -> None:
        if error_rate is not None:
            if isinstance(error_rate, bool) or not isinstance(error_rate, int | float):
                raise TypeError(f"error_rate must be a float, not {type(error_rate).__name__}")
            if not CUCKOO_MIN_ERROR <= float(error_rate) < 1.0:
                raise ValueError(
                    f"error_rate must be from {CUCKOO_MIN_ERROR:g} up to, not including, 1 (or "
                    f"None for RedisBloom's kind of cuckoo filter), not {error_rate}"
                )
            if bucket_size is not None:
                raise ValueError(
                    "bucket_size goes with error_rate=None: a cuckoo filter with an error rate "
                    "has buckets of 4"
                )
            bucket_size = BOUNDED_BUCKET_SIZE
            if max_iterations is None:
                max_iterations = BOUNDED_MAX_ITERATIONS
            if expansion is None:
                expansion = BOUNDED_EXPANSION
        else:
            if bucket_size is None:
                bucket_size = REDISBLOOM_BUCKET_SIZE
            if max_iterations is None:
                max_iterations = REDISBLOOM_MAX_ITERATIONS
            if expansion is None:
                expansion = REDISBLOOM_EXPANSION
        whole("bucket_size", bucket_size, 1, 255)
        whole("max_iterations", max_iterations, 1, 65535)
        whole("expansion", expansion, 0, 32768)
        # The module keeps an expansion as a power of two (3 is 4).
        expansion = 0 if expansion == 0 else 1 << (expansion - 1).bit_length()
        whole("capacity", capacity, 2 * bucket_size, 2**63 - 1)
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "error_rate", None if error_rate is None else float(error_rate))
        object.__setattr__(self, "bucket_size", bucket_size)
        object.__setattr__(self, "max_iterations", max_iterations)
        object.__setattr__(self, "expansion", expansion)

    @property
    def bounded(self) -> bool:
        """A filter with an error rate (this module's kind)."""
        return self.error_rate is not None

    def reserve_args(self) -> list[Any]:
        """``CF.RESERVE key <these>``: every parameter spelled out."""
        args: list[Any] = [self.capacity]
        if not self.bounded:
            args += ["BUCKETSIZE", self.bucket_size]
        args += ["MAXITERATIONS", self.max_iterations, "EXPANSION", self.expansion]
        if self.error_rate is not None:
            args += ["ERROR", self.error_rate]
        return args

    def insert_args(self) -> list[Any] | None:
        """``CF.INSERT key <these> ITEMS ...`` when they say the whole creation (a bounded filter
        with the bounded defaults); None when they cannot (``CF.RESERVE`` then comes first)."""
        if (
            self.error_rate is None
            or self.max_iterations != BOUNDED_MAX_ITERATIONS
            or self.expansion != BOUNDED_EXPANSION
        ):
            return None
        return ["CAPACITY", self.capacity, "ERROR", self.error_rate]

    def buckets(self) -> int:
        """The first sub-filter's buckets: ``capacity / bucket size`` up to a power of two."""
        wanted = max(1, self.capacity // self.bucket_size)
        return 1 << (wanted - 1).bit_length()

    def resized(self, capacity: int) -> CuckooOptions:
        """The same filter for another capacity (a shard's: at least two buckets)."""
        return CuckooOptions(
            max(capacity, 2 * self.bucket_size),
            self.error_rate,
            bucket_size=None if self.bounded else self.bucket_size,
            max_iterations=self.max_iterations,
            expansion=self.expansion,
        )

    def identity(self) -> dict[str, Any]:
        """What every process of a sharded filter must give alike (kept at its key)."""
        return {
            "error_rate": self.error_rate,
            "bucket_size": self.bucket_size,
            "max_iterations": self.max_iterations,
            "expansion": self.expansion,
        }

    def describe(self) -> str:
        """The parameters, for a ``repr``: those that are not the kind's defaults."""
        text = f"capacity={self.capacity}, error_rate={self.error_rate}"
        defaults = (
            (BOUNDED_BUCKET_SIZE, BOUNDED_MAX_ITERATIONS, BOUNDED_EXPANSION)
            if self.bounded
            else (REDISBLOOM_BUCKET_SIZE, REDISBLOOM_MAX_ITERATIONS, REDISBLOOM_EXPANSION)
        )
        for name, value, default in zip(
            ("bucket_size", "max_iterations", "expansion"),
            (self.bucket_size, self.max_iterations, self.expansion),
            defaults,
            strict=True,
        ):
            if value != default:
                text += f", {name}={value}"
        return text


def as_bool(reply: Any) -> bool:
    """One answer: RESP3 ``True``/``False`` or RESP2 ``1``/``0``. Anything else raises."""
    if isinstance(reply, bool):
        return reply
    if isinstance(reply, int) and reply in (0, 1):
        return reply == 1
    if isinstance(reply, ResponseError):
        raise error_class(str(reply))(str(reply))
    raise BloomFilterError(f"unexpected reply {reply!r}: not a Bloom filter answer")


# What CF.INSERT and CF.INSERTNX answer for an item that found no room (-1, RESP3 CF.INSERT false).
CUCKOO_REFUSED = (
    "the cuckoo filter has no room for the item, which was not added: it is full and cannot grow "
    "(EXPANSION 0, cf-max-expansions sub-filters, or a size limit: bf.max-filter-bytes, "
    "maxmemory), or the item was added so many times that its buckets hold nothing but copies "
    "of it"
)


def cuckoo_added(reply: Any) -> bool:
    """One answer of ``CF.INSERT``: added (RESP2 1, RESP3 true); an item refused (-1, false)
    raises ``FilterFullError``."""
    if reply is True or (type(reply) is int and reply == 1):
        return True
    if reply is False or (type(reply) is int and reply == -1):
        raise FilterFullError(CUCKOO_REFUSED)
    if isinstance(reply, ResponseError):
        raise error_class(str(reply))(str(reply))
    raise BloomFilterError(f"unexpected reply {reply!r}: not a cuckoo filter answer")


def cuckoo_added_unique(reply: Any) -> bool:
    """One answer of ``CF.INSERTNX``: 1 added, 0 (probably) held already; -1 (refused) raises
    ``FilterFullError``. (Integers in RESP3 too; booleans taken as added or held.)"""
    if isinstance(reply, bool):
        return reply
    if isinstance(reply, int) and reply in (0, 1):
        return reply == 1
    if type(reply) is int and reply == -1:
        raise FilterFullError(CUCKOO_REFUSED)
    if isinstance(reply, ResponseError):
        raise error_class(str(reply))(str(reply))
    raise BloomFilterError(f"unexpected reply {reply!r}: not a cuckoo filter answer")


def as_bools(reply: Any, offset: int = 0, answer: Callable[[Any], bool] = as_bool) -> list[bool]:
    """The answers of a batch command; an error element is raised with the answers before it
    (``FilterFullError`` for an item that found no room, ``BloomFilterError`` otherwise).

    ``offset`` is the position of the batch's first item among the items of the whole call;
    ``answer`` reads one element (``as_bool``, or a cuckoo insert's).
    """
    if not isinstance(reply, list):
        raise BloomFilterError(f"unexpected reply {reply!r}: not an array of answers")
    answers: list[bool] = []
    for element in reply:
        try:
            answers.append(answer(element))
        except BloomFilterError as error:
            raise type(error)(str(error), answers, offset + len(answers)) from None
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


def encoder_of(client: Any) -> Callable[[Item], bytes]:
    """The bytes ``client`` sends for an item (its encoder: its ``encoding`` and
    ``encoding_errors``), which pick the item's shard; ``item_bytes`` if it has none."""
    get_encoder = getattr(client, "get_encoder", None)
    encoder = get_encoder() if callable(get_encoder) else None
    if encoder is None or not callable(getattr(encoder, "encode", None)):
        return item_bytes
    if (encoder.encoding, encoder.encoding_errors) in (("utf-8", "strict"), ("utf8", "strict")):
        return item_bytes  # the same bytes, without a call into redis-py for each item

    def encode(item: Item) -> bytes:
        value = encoder.encode(item)
        return value if isinstance(value, bytes) else bytes(value)

    return encode


def item_bytes(item: Item) -> bytes:
    """The bytes redis-py's default encoder (UTF-8, strict) sends for an item."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, bool):  # redis-py refuses it too
        raise TypeError("a bool is not an item: send b'1' or 'True' if that is what you mean")
    if isinstance(item, str):
        return item.encode()
    if isinstance(item, int | float):
        return repr(item).encode()
    if isinstance(item, bytearray | memoryview):
        return bytes(item)
    raise TypeError(f"an item is bytes, str, int or float, not {type(item).__name__}")


# The first of "0", "1", ... (hexadecimal) seen with each slot, filled by one upward scan shared by
# every shard count (``shard_tag``), and how far it went.
_FIRST_TAG: dict[int, str] = {}
_SCANNED = [0]


def slot_tag(slot: int) -> str:
    """The first of "0", "1", ... (hexadecimal) whose hash slot is ``slot``."""
    while slot not in _FIRST_TAG:
        tag = format(_SCANNED[0], "x")
        _FIRST_TAG.setdefault(key_slot(tag.encode()), tag)
        _SCANNED[0] += 1
    return _FIRST_TAG[slot]


def shard_tag(index: int, count: int) -> str:
    """The hash tag of shard ``index`` of ``count``: the first of "0", "1", ... (hexadecimal)
    whose slot is the middle of the shard's range, ``[index, index + 1) * 16384 / count``."""
    return slot_tag((2 * index + 1) * SLOTS // (2 * count))


def same_slot_key(key: str, suffix: str, encode: Callable[[Item], bytes] = item_bytes) -> str:
    """``key + suffix``, with a hash tag after it if that is needed to keep it in ``key``'s
    cluster slot (``encode``: the bytes the client sends for a key)."""
    slot = key_slot(encode(key))
    plain = key + suffix
    if key_slot(encode(plain)) == slot:
        return plain  # key has a hash tag of its own
    tagged = f"{plain}{{{slot_tag(slot)}}}"
    if key_slot(encode(tagged)) == slot:
        return tagged
    # An unclosed "{" in key swallows the tag: search for a suffix that lands in the slot.
    attempt = 0
    while key_slot(encode(candidate := f"{plain}{{{attempt:x}}}")) != slot:
        attempt += 1
    return candidate


def shard_capacity(capacity: int, count: int) -> int:
    """What each of ``count`` shards is created for, out of ``capacity`` items: its share plus
    ``SHARD_SLACK_SIGMAS`` standard deviations of the binomial count of items a shard gets (the
    chance that one shard of 12 gets more is about 4e-4; past it, the shard scales as any filter
    does, at the same error rate, with one more sub-filter)."""
    share = capacity / count
    spread = math.sqrt(share * (1 - 1 / count))
    return max(1, math.ceil(share + SHARD_SLACK_SIGMAS * spread))


@dataclass(frozen=True)
class Call:
    """A request to the client: one command, with redis-py's options for reading its reply
    (``get`` for ``SET ... GET``). It answers the reply, or the ``ResponseError``."""

    args: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Batch:
    """A request to the client: commands in one pipeline (one per node on a cluster), and with
    ``wait``, ``Core.wait_commands`` after them on the connection that sent them (on each node
    written: see ``Core.wait_groups``). It answers the replies, errors included, and then one
    ``Waited`` per node."""

    commands: Sequence[tuple[Any, ...]]
    wait: bool = False


@dataclass(frozen=True)
class Waited:
    """What a node (``address``, host:port) answered to ``Core.wait_commands``, sent after a
    batch's writes on the same connection."""

    address: str
    replies: Sequence[Any]


T = TypeVar("T")
# An operation: it yields requests, is sent their answers, and returns its result.
Operation = Generator[Call | Batch, Any, T]


def is_cluster(client: Any) -> bool:
    """True for redis-py's cluster clients (they route each key to its node)."""
    return callable(getattr(client, "get_node_from_key", None))


def reserve_failure(reply: Any) -> ResponseError | None:
    """What a ``BF.RESERVE`` reply means for ``create``: None if the key now holds a filter (made,
    or already there: TYPE says, see ``Core.create``), else the error to raise."""
    if not isinstance(reply, ResponseError):
        return None
    # redis-bf: "item exists" for a filter, WRONGTYPE for anything else. RedisBloom answers
    # "item exists" for both: TYPE tells them apart.
    message = str(reply)
    if "item exists" in message or message.startswith("WRONGTYPE"):
        return None
    return reply


@dataclass(frozen=True)
class Verb:
    """A command over items: its name, whether it writes, whether it carries the creation
    options (an insert: ``<command> key <creation> ITEMS item...``), whether it takes one item
    (``CF.DEL key item``) or many, how one answer is read, and the answer for every item when
    the key is missing and the command says "not found" (None: that is an error)."""

    command: str
    write: bool = False
    creates: bool = False
    single: bool = False
    answer: Callable[[Any], bool] = as_bool
    missing: bool | None = None


BF_INSERT = Verb("BF.INSERT", write=True, creates=True)
BF_MEXISTS = Verb("BF.MEXISTS")
CF_INSERT = Verb("CF.INSERT", write=True, creates=True, answer=cuckoo_added)
CF_INSERTNX = Verb("CF.INSERTNX", write=True, creates=True, answer=cuckoo_added_unique)
CF_MEXISTS = Verb("CF.MEXISTS")
# CF.DEL of a missing key answers "Not found": it holds nothing, so nothing was deleted.
CF_DEL = Verb("CF.DEL", write=True, single=True, missing=False)


@dataclass(frozen=True)
class Command:
    """One command of a batch, and the positions (in the call's items) of the items it carries.

    A command that does not ``answer`` (a ``CF.RESERVE`` before inserts that cannot carry the
    creation) carries the positions of the items its key gets in the round: its failure, if it
    is one, is theirs."""

    args: tuple[Any, ...]
    positions: Sequence[int]
    answers: bool = True


@dataclass
class Round:
    """The commands of one round trip, for the items from ``start`` (``size`` of them)."""

    start: int
    size: int
    commands: list[Command] = field(default_factory=list)
    verb: Verb = BF_MEXISTS


class Core:
    """A Bloom filter's commands and answers, for one key or ``shards`` keys (see the module
    doc). ``CuckooCore`` is a cuckoo filter's: the class attributes and a few operations differ."""

    name = "Bloom filter"
    type_name = FILTER_TYPE
    kind: str | None = None  # a sharded filter's "kind" at its key (a Bloom filter's has none)
    add_verb = BF_INSERT
    exists_verb = BF_MEXISTS
    exists_command = "BF.EXISTS"
    reserve_command = "BF.RESERVE"
    info_command = "BF.INFO"

    def __init__(
        self,
        client: Any,
        key: str,
        options: Any,
        *,
        shards: int | None,
        batch_size: int,
        pipeline_size: int,
        wait_for_replicas: int,
        wait_timeout: float,
    ):
        if batch_size < 1 or pipeline_size < 1:
            raise ValueError("batch_size and pipeline_size must be at least 1")
        if wait_for_replicas < 0 or wait_timeout <= 0:
            raise ValueError("wait_for_replicas must be 0 or more and wait_timeout positive")
        self.client = client
        self.encode = encoder_of(client)
        self.key = key
        self.options = options
        self.batch_size = batch_size
        self.pipeline_size = pipeline_size
        self.wait_for_replicas = wait_for_replicas
        self.wait_millis = max(1, round(wait_timeout * 1000))
        self.shards = shards
        if shards is None:
            self.keys: tuple[str, ...] = (key,)
        else:
            if isinstance(shards, bool) or not isinstance(shards, int):
                raise TypeError(f"shards must be an int, not {type(shards).__name__}")
            if not 1 <= shards <= MAX_SHARDS:
                raise ValueError(f"shards must be from 1 to {MAX_SHARDS}, not {shards}")
            if "{" in key:
                raise ValueError(
                    f"a sharded filter's key cannot hold a hash tag ({key!r}): each shard's key "
                    "gets a tag of its own"
                )
            self.keys = tuple(
                f"{key}:{index}/{shards}{{{shard_tag(index, shards)}}}" for index in range(shards)
            )
        self.creation = self.own_creation()
        self.checked = shards is None  # a sharded filter checks its manifest on first use
        self._insert_args = self.creation.insert_args()
        self._markers: dict[str, str] = {}
        # A sharded filter's parameters, once a WAIT confirmed them (see ``check``).
        self.manifest_replicated = False

    def describe(self) -> str:
        """The parameters, for a ``repr``."""
        shards = "" if self.shards is None else f", shards={self.shards}"
        return f"key={self.key!r}, {self.options.describe()}{shards}"

    # -- single items -------------------------------------------------------------------------

    def key_of(self, item: Item) -> str:
        """The key that holds ``item``: the filter's, or its shard's (by a hash of the item)."""
        if self.shards is None:
            return self.key
        data = (
            item.encode() if type(item) is str and self.encode is item_bytes else self.encode(item)
        )
        digest = hashlib.blake2b(data, digest_size=8, person=SHARD_HASH_PERSON).digest()
        return self.keys[(int.from_bytes(digest, "little") * self.shards) >> 64]

    def insert(self, key: str, items: Sequence[Item], verb: Verb | None = None) -> tuple[Any, ...]:
        """An insert (``BF.INSERT`` unless ``verb`` says) of ``items`` at ``key``, with the
        creation options; with ``NOCREATE`` where they cannot say the whole creation (the
        ``reserve`` before it does)."""
        command = (verb or self.add_verb).command
        creation = ["NOCREATE"] if self._insert_args is None else self._insert_args
        return (command, key, *creation, "ITEMS", *items)

    def reserve(self, key: str) -> tuple[Any, ...]:
        """The command that creates the filter at ``key`` if it is missing."""
        return (self.reserve_command, key, *self.creation.reserve_args())

    def build(self, verb: Verb, key: str, items: Sequence[Item]) -> tuple[Any, ...]:
        """``verb``'s command for ``items`` at ``key``."""
        if verb.creates:
            return self.insert(key, items, verb)
        return (verb.command, key, *items)

    def exists(self, key: str, items: Sequence[Item]) -> tuple[Any, ...]:
        return (self.exists_verb.command, key, *items)

    # -- replication ----------------------------------------------------------------------------

    def marker(self, key: str) -> str:
        """The key that ``wait_commands`` writes for writes to ``key``: in its slot (so on its
        node), named after it: ``<key>:redis-bf-wait``, with a hash tag if ``key`` has none."""
        marker = self._markers.get(key)
        if marker is None:
            marker = same_slot_key(key, WAIT_MARKER_SUFFIX, self.encode)
            self._markers[key] = marker
        return marker

    def wait_commands(self, key: str) -> list[tuple[Any, ...]]:
        """What follows a batch's writes to ``key`` (and to other keys of its node) on their
        connection: a write the server always propagates (``SET`` of the marker key, then its
        ``DEL``), and ``WAIT``.

        ``WAIT`` waits for the replication offset of the connection's own last propagated write
        (Redis 7.2 and newer, Valkey), and a ``BF.INSERT`` that adds nothing new propagates
        nothing: after it alone, the ``WAIT`` of an add that answers "seen" would confirm nothing,
        although the write that put the item there (another client's) may be on no replica yet.
        The ``SET`` is propagated after every write the primary made before it, so the ``WAIT``
        covers them all: the state the answers report is on the replicas once it confirms."""
        marker = self.marker(key)
        return [
            ("SET", marker, "1", "PX", WAIT_MARKER_MILLIS),
            ("DEL", marker),
            ("WAIT", self.wait_for_replicas, self.wait_millis),
        ]

    # -- batches ------------------------------------------------------------------------------

    def verb_for(self, write: bool | Verb) -> Verb:
        """The verb of a batch call: ``write`` True (the family's add), False (its lookup), or
        a ``Verb``."""
        if isinstance(write, Verb):
            return write
        return self.add_verb if write else self.exists_verb

    def rounds(self, items: Iterable[Item], write: bool | Verb) -> Iterator[Round]:
        """The round trips of a batch call: ``batch_size * pipeline_size`` items each, in
        commands of at most ``batch_size`` items of one key (one, for a single-item verb). An
        insert whose creation options the command cannot carry is preceded, for each key of the
        round, by the ``reserve`` of that key."""
        verb = self.verb_for(write)
        step = 1 if verb.single else self.batch_size
        reserve_first = verb.creates and self._insert_args is None
        iterator = iter(items)
        start = 0
        while chunk := list(islice(iterator, self.batch_size * self.pipeline_size)):
            round_trip = Round(start, len(chunk), verb=verb)
            groups: dict[str, list[int]] = {}
            for position, item in enumerate(chunk):
                groups.setdefault(self.key_of(item), []).append(position)
            for key in sorted(groups):
                positions = groups[key]
                if reserve_first:
                    round_trip.commands.append(
                        Command(self.reserve(key), [start + p for p in positions], answers=False)
                    )
                for first in range(0, len(positions), step):
                    part = positions[first : first + step]
                    round_trip.commands.append(
                        Command(
                            self.build(verb, key, [chunk[p] for p in part]),
                            [start + p for p in part],
                        )
                    )
            yield round_trip
            start += len(chunk)

    def collect(self, round_trip: Round, replies: Sequence[Any]) -> list[bool]:
        """The answers of a round trip, in the items' order; the first failing item (by position)
        raises, with the answers before it. ``replies`` may go on past the commands (``WAIT``s,
        checked by ``check_waits``)."""
        verb = round_trip.verb
        answers: list[bool | None] = [None] * round_trip.size
        failure: tuple[int, str, type[BloomFilterError]] | None = None
        if len(replies) < len(round_trip.commands):
            raise BloomFilterError(
                f"{len(replies)} replies to {len(round_trip.commands)} commands",
                [],
                round_trip.start,
            )
        for command, reply in zip(round_trip.commands, replies, strict=False):
            found: tuple[int, str, type[BloomFilterError]] | None = None
            if isinstance(reply, ResponseError) and is_module_missing(reply):
                raise ModuleMissingError(self.client, str(reply))
            if not command.answers:
                # A reserve: OK, or "item exists"/WRONGTYPE (the inserts after it tell). Another
                # error (OOM, a size limit) is the failure of the key's items.
                failed = reserve_failure(reply)
                if failed is not None:
                    message = str(failed)
                    found = (command.positions[0], message, error_class(message))
            elif isinstance(reply, ResponseError):
                message = str(reply)
                if verb.missing is not None and is_not_found(reply):
                    for position in command.positions:
                        answers[position - round_trip.start] = verb.missing
                else:
                    # A top-level error (WRONGTYPE, OOM, MOVED...): none of the command's items
                    # applied.
                    found = (command.positions[0], message, error_class(message))
            else:
                try:
                    values = (
                        [verb.answer(reply)] if verb.single else as_bools(reply, 0, verb.answer)
                    )
                except BloomFilterError as error:
                    values = error.results
                    found = (command.positions[len(values)], str(error), type(error))
                if found is None and len(values) != len(command.positions):
                    missing = command.positions[min(len(values), len(command.positions) - 1)]
                    found = (
                        missing,
                        f"{len(values)} answers to {len(command.positions)} items",
                        BloomFilterError,
                    )
                for position, value in zip(command.positions, values, strict=False):
                    answers[position - round_trip.start] = value
            if found is not None and (failure is None or found[0] < failure[0]):
                failure = found
        if failure is not None:
            index, message, raised = failure
            before = answers[: index - round_trip.start]
            raise raised(message, [bool(a) for a in before], index)
        return [bool(answer) for answer in answers]

    def check_waits(self, waits: Sequence[Any], results: list[bool]) -> None:
        """Raises ``NotReplicatedError`` unless every node's ``WAIT`` (a ``Waited``) reached the
        replicas asked, after its marker write went through."""
        asked = self.wait_for_replicas
        for waited in waits:
            if not isinstance(waited, Waited) or len(waited.replies) != 3:
                raise NotReplicatedError(
                    f"no answer to WAIT ({waited!r}): the writes were applied on the primary, "
                    "but whether a replica has them is unknown",
                    results,
                    len(results),
                    asked=asked,
                )
            marked, _, reply = waited.replies
            applied = (
                f"the writes were applied on the primary at {waited.address} (the "
                f"{len(results)} answer(s) in .results stand there), but"
            )
            lost = "they may be lost if that primary fails now"
            if isinstance(marked, Exception):
                raise NotReplicatedError(
                    f"{applied} the write that WAIT {asked} needs after them (SET of the "
                    f"marker key) failed ({marked}), so no replica could be asked: {lost}",
                    results,
                    len(results),
                    address=waited.address,
                    asked=asked,
                )
            if isinstance(reply, bool) or not isinstance(reply, int):
                said = (
                    f"failed ({reply})" if isinstance(reply, Exception) else f"answered {reply!r}"
                )
                raise NotReplicatedError(
                    f"{applied} WAIT {asked} {said}, so no replica could be asked: {lost}",
                    results,
                    len(results),
                    address=waited.address,
                    asked=asked,
                )
            if reply < asked:
                raise NotReplicatedError(
                    f"{applied} {reply} of the {asked} replica(s) asked confirmed them, and "
                    f"every write before them, within {self.wait_millis} ms (WAIT {asked}): "
                    f"{lost}",
                    results,
                    len(results),
                    address=waited.address,
                    confirmed=reply,
                    asked=asked,
                )

    # -- the manifest of a sharded filter -------------------------------------------------------

    def manifest(self) -> str:
        """What a sharded filter keeps at its key: the parameters every process must share."""
        kind = {} if self.kind is None else {"kind": self.kind}
        return json.dumps(
            {
                "format": MANIFEST_FORMAT,
                "version": 1,
                **kind,
                "shards": self.shards,
                "capacity": self.options.capacity,
                **self.options.identity(),
            },
            sort_keys=True,
        )

    def manifest_command(self) -> tuple[Any, ...]:
        """Sets the manifest if the key is missing, and answers what was there (Redis 7.0+)."""
        return ("SET", self.key, self.manifest(), "NX", "GET")

    def check_manifest(self, reply: Any, claimed: bool = True) -> bool:
        """Checks what ``manifest_command`` found (None: it set ours; ``claimed`` False: what a
        ``GET`` found, None then meaning no filter yet): True if this call made the filter.
        Another shard count, error rate or window raises ``FilterMismatchError``; shards are then
        created with the stored capacity (the first process's), so that every process makes them
        alike."""
        if isinstance(reply, ResponseError):
            if str(reply).startswith("WRONGTYPE"):
                raise KeyTypeError(
                    self.key,
                    "value of another type",
                    "a sharded filter keeps its parameters at its key (a string): use another key",
                )
            raise explained(self.client, reply)
        if reply is None:
            self.creation = self.own_creation()
            self._insert_args = self.creation.insert_args()
            self.checked = claimed
            return claimed
        try:
            stored = json.loads(decode(reply))
            if not isinstance(stored, dict) or stored.get("format") != MANIFEST_FORMAT:
                raise ValueError
        except (ValueError, UnicodeDecodeError):
            raise KeyTypeError(
                self.key, "string", "not a sharded filter's parameters: use another key"
            ) from None
        stored_kind = stored.get("kind")
        if stored_kind != self.kind:
            raise FilterMismatchError(
                f"the sharded filter at {self.key!r} is a "
                f"{'cuckoo filter' if stored_kind == 'cuckoo' else 'Bloom filter'}, not a "
                f"{self.name}: it is another filter"
            )
        mismatches = [
            f"{name} {stored.get(name)!r}, not {mine!r}"
            for name, mine in (("shards", self.shards), *self.options.identity().items())
            if stored.get(name) != mine
        ]
        if mismatches:
            raise FilterMismatchError(
                f"the sharded filter at {self.key!r} has {', '.join(mismatches)}: it is another "
                "filter (changing the shard count needs a new filter, see the package README)"
            )
        capacity = stored.get("capacity")
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            capacity = self.options.capacity
        self.creation = self.own_creation(capacity)
        self._insert_args = self.creation.insert_args()
        self.checked = True
        return False

    def own_creation(self, capacity: int | None = None) -> Any:
        """How this filter's keys are created (options of the filter's own kind): as asked, or
        each shard for its share of ``capacity`` (the stored one)."""
        if self.shards is None:
            return self.options
        total = self.options.capacity if capacity is None else capacity
        return self.options.resized(shard_capacity(total, self.shards))

    # -- count and info -----------------------------------------------------------------------

    def merge_info(self, infos: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
        """``BF.INFO`` of every shard as one (None for a shard not created yet): counts and sizes
        summed, the rest the first existing shard's, and ``Shards``.

        A missing shard counts as the empty shard that the first write to it creates: its
        capacity (the one it will be created with), no sub-filter, no item, and 0 bytes (it takes
        no memory yet). With no shard at all, ``Expansion rate`` (a shard's) is left out."""
        present = [info for info in infos if info is not None]
        missing = len(infos) - len(present)
        merged = dict(present[0]) if present else {}
        for name, absent in (
            ("Capacity", self.creation.capacity),
            ("Size", 0),
            ("Number of filters", 0),
            ("Number of items inserted", 0),
        ):
            if all(name in info for info in present):
                merged[name] = sum(int(info[name]) for info in present) + missing * absent
        if not present and self.options.window is not None:
            merged["Window"] = self.options.window
        merged["Shards"] = len(infos)
        return merged

    # -- the operations (what ``BloomFilter`` and its asyncio twin run) --------------------------

    def answer(self, reply: Any) -> Any:
        """A reply, or its error raised (``ModuleMissingError`` for a server without ``BF.*``)."""
        if isinstance(reply, ResponseError):
            raise explained(self.client, reply)
        return reply

    def wait_groups(self, request: Batch) -> list[tuple[Any, list[int]]]:
        """A ``Batch`` with ``wait`` on a cluster, by node: each node and the positions of its
        commands (each command's key is its second argument), to be sent on one connection of the
        node with a ``WAIT`` after them (a cluster pipeline may resend a command on another
        connection, or a ``WAIT`` to another node, where it would confirm nothing)."""
        groups: dict[str, tuple[Any, list[int]]] = {}
        for position, command in enumerate(request.commands):
            node = self.client.get_node_from_key(command[1])
            groups.setdefault(node.name, (node, []))[1].append(position)
        return list(groups.values())

    @staticmethod
    def raise_transport(replies: Sequence[Any]) -> None:
        """Raises the first reply that is a failure to talk to a node (a pipeline hands back
        ``ConnectionError``, ``TimeoutError``... as replies): only error replies are answers."""
        for reply in replies:
            if isinstance(reply, Exception) and not isinstance(reply, ResponseError):
                raise reply

    def verify(self) -> Operation[None]:
        """Before reading or deleting a sharded filter not yet checked: its parameters, if
        stored, must be this filter's (a ``GET``; nothing is written)."""
        if not self.checked:
            self.check_manifest((yield Call(("GET", self.key))), claimed=False)

    def check(self, write: bool = False) -> Operation[bool]:
        """A sharded filter's parameters, checked against (or written at) its key, once: True if
        this wrote them. Before the first write with ``wait_for_replicas``, they are confirmed
        on the replicas of their own node (which may hold no shard written)."""
        created = False
        if not self.checked:
            created = self.check_manifest((yield Call(self.manifest_command(), {"get": True})))
        if write and self.wait_for_replicas and self.shards is not None:
            if not self.manifest_replicated:
                replies = yield Batch([("EXISTS", self.key)], wait=True)
                self.check_waits(replies[1:], [])
                self.manifest_replicated = True
        return created

    def create(self) -> Operation[bool]:
        """Reserves the filter (every shard) if missing: True if this call created anything (the
        key, a shard, or a sharded filter's parameters). A key holding anything else raises
        ``KeyTypeError``. With ``wait_for_replicas``, the answer is confirmed as a write's."""
        created = yield from self.check(write=True)
        reserve = [self.reserve(key) for key in self.keys]
        wait = self.wait_for_replicas > 0
        replies = yield Batch(reserve, wait)
        for key, reply in zip(self.keys, replies[: len(reserve)], strict=True):
            if isinstance(reply, ResponseError):
                failure = reserve_failure(reply)
                if failure is not None:
                    raise explained(self.client, failure)
                key_type = str(decode(self.answer((yield Call(("TYPE", key))))))
                if key_type != self.type_name:
                    raise KeyTypeError(key, key_type, expected=self.name)
            else:
                created = True
        if wait:
            self.check_waits(replies[len(reserve) :], [])
        return created

    def key_type(self) -> Operation[str]:
        return str(decode(self.answer((yield Call(("TYPE", self.key))))))

    def add(self, item: Item, verb: Verb | None = None) -> Operation[bool]:
        """One item's insert (the family's add, or ``verb``): one command, unless it waits for
        replicas or needs a reserve before it (a batch of one, then)."""
        verb = verb or self.add_verb
        if self.wait_for_replicas or self._insert_args is None:
            return (yield from self.batched([item], verb))[0]
        yield from self.check()
        reply = yield Call(self.insert(self.key_of(item), [item], verb))
        return as_bools(self.answer(reply), 0, verb.answer)[0]

    def contains(self, item: Item) -> Operation[bool]:
        yield from self.check()
        return as_bool(self.answer((yield Call((self.exists_command, self.key_of(item), item)))))

    def count(self) -> Operation[int]:
        yield from self.verify()
        replies = yield Batch([("BF.CARD", key) for key in self.keys])
        return sum(int(self.answer(reply)) for reply in replies)

    @staticmethod
    def parse_info(reply: Any) -> dict[str, Any]:
        """The family's ``*.INFO`` reply as a dict."""
        return info_dict(reply)

    def info(self) -> Operation[dict[str, Any]]:
        yield from self.verify()
        replies = yield Batch([(self.info_command, key) for key in self.keys])
        if self.shards is None:
            return self.parse_info(self.answer(replies[0]))
        infos = [
            None if is_not_found(reply) else self.parse_info(self.answer(reply))
            for reply in replies
        ]
        if all(info is None for info in infos):
            # No shard yet: the filter exists if its parameters do (``count()`` answers 0 then).
            if not int(self.answer((yield Call(("EXISTS", self.key))))):
                self.answer(replies[0])  # "not found", as for one key
        return self.merge_info(infos)

    def delete(self) -> Operation[int]:
        yield from self.verify()
        keys = self.keys if self.shards is None else (*self.keys, self.key)
        replies = yield Batch([("DEL", key) for key in keys])
        self.checked = self.shards is None
        self.manifest_replicated = False
        self.creation = self.own_creation()
        self._insert_args = self.creation.insert_args()
        return sum(int(self.answer(reply)) for reply in replies)

    def batched(self, items: Iterable[Item], write: bool | Verb) -> Operation[list[bool]]:
        """A batch call: ``write`` True (the family's add), False (its lookup), or a ``Verb``."""
        verb = self.verb_for(write)
        yield from self.check(verb.write)
        answers: list[bool] = []
        for round_trip in self.rounds(items, verb):
            commands = round_trip.commands
            wait = verb.write and self.wait_for_replicas > 0
            replies = yield Batch([command.args for command in commands], wait)
            try:
                answers.extend(self.collect(round_trip, replies))
            except BloomFilterError as error:
                error.results = answers + error.results
                raise
            self.check_waits(replies[len(commands) :], answers)
        return answers


def cuckoo_info(reply: Any) -> dict[str, Any]:
    """``CF.INFO`` as a dict: RedisBloom's eight counts, and ``Error rate`` as a float (the
    module answers it as text) for a filter with one."""
    info = info_dict(reply)
    if "Error rate" in info:
        info["Error rate"] = float(decode(info["Error rate"]))
    return info


# CF.INFO's fields that add up over shards, and what a shard not created yet counts for each.
CUCKOO_SUMMED = (
    "Size",
    "Number of buckets",
    "Number of filters",
    "Number of items inserted",
    "Number of items deleted",
)


class CuckooCore(Core):
    """A cuckoo filter's commands and answers (``CF.*``), for one key or ``shards`` keys: the
    batching, sharding, creation and replication of ``Core``, with ``CF.INSERT`` (``add``),
    ``CF.INSERTNX`` (``add_unique``), ``CF.MEXISTS``, ``CF.DEL``, ``CF.COUNT`` and ``CF.INFO``.

    An item's shard is chosen by its bytes, as for a Bloom filter, so a delete reaches the shard
    that holds the item: sharding keeps a cuckoo filter's promises, deletes included."""

    name = "cuckoo filter"
    type_name = CUCKOO_TYPE
    kind = "cuckoo"
    add_verb = CF_INSERT
    exists_verb = CF_MEXISTS
    exists_command = "CF.EXISTS"
    reserve_command = "CF.RESERVE"
    info_command = "CF.INFO"

    @staticmethod
    def parse_info(reply: Any) -> dict[str, Any]:
        return cuckoo_info(reply)

    def refuses_error_rate(self, message: str) -> bool:
        """True for RedisBloom's answer to this (bounded) filter's ``ERROR``."""
        return self.creation.bounded and message.strip() == REDISBLOOM_UNKNOWN_ARGUMENT

    def answer(self, reply: Any) -> Any:
        """As ``Core.answer``, and ``ErrorRateUnsupportedError`` for RedisBloom's refusal of a
        bounded filter's ``ERROR``."""
        if isinstance(reply, ResponseError) and self.refuses_error_rate(str(reply)):
            raise ErrorRateUnsupportedError(error_rate_unsupported(self.client, str(reply)))
        return super().answer(reply)

    def collect(self, round_trip: Round, replies: Sequence[Any]) -> list[bool]:
        """As ``Core.collect``, and ``ErrorRateUnsupportedError`` (with the answers before the
        failing item) for RedisBloom's refusal of a bounded filter's ``ERROR``."""
        try:
            return super().collect(round_trip, replies)
        except BloomFilterError as error:
            if not self.refuses_error_rate(str(error)):
                raise
            message = error_rate_unsupported(self.client, str(error))
            raise ErrorRateUnsupportedError(message, error.results, error.index) from None

    def count(self) -> Operation[int]:
        """Items held (``Number of items inserted``: adds less deletes), summed over the shards;
        0 for a missing key."""
        yield from self.verify()
        replies = yield Batch([(self.info_command, key) for key in self.keys])
        held = "Number of items inserted"
        return sum(
            0 if is_not_found(reply) else int(self.parse_info(self.answer(reply))[held])
            for reply in replies
        )

    def copies(self, item: Item) -> Operation[int]:
        """``CF.COUNT``: the copies of ``item``'s fingerprint in its buckets (0 for a missing
        key)."""
        yield from self.check()
        return int(self.answer((yield Call(("CF.COUNT", self.key_of(item), item)))))

    def remove(self, item: Item) -> Operation[bool]:
        """``CF.DEL``: True if a copy of ``item`` was deleted; False if the filter does not hold
        it, or the key is missing."""
        if self.wait_for_replicas:
            return (yield from self.batched([item], CF_DEL))[0]
        yield from self.check()
        reply = yield Call(("CF.DEL", self.key_of(item), item))
        if is_not_found(reply):
            return False
        return as_bool(self.answer(reply))

    def merge_info(self, infos: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
        """``CF.INFO`` of every shard as one (None for a shard not created yet): counts and sizes
        summed, the parameters the shards share, and ``Shards``. A missing shard counts as the
        empty shard its first write creates: its buckets, no sub-filter, no item, 0 bytes."""
        present = [info for info in infos if info is not None]
        missing = len(infos) - len(present)
        creation = self.creation
        absent = {"Number of buckets": creation.buckets()}
        merged: dict[str, Any] = {}
        for name in CUCKOO_SUMMED:
            merged[name] = sum(int(info.get(name, 0)) for info in present)
            merged[name] += missing * absent.get(name, 0)
        merged["Bucket size"] = creation.bucket_size
        merged["Expansion rate"] = creation.expansion
        merged["Max iterations"] = creation.max_iterations
        if present:
            for name in ("Bucket size", "Expansion rate", "Max iterations"):
                merged[name] = present[0].get(name, merged[name])
        if creation.error_rate is not None:
            merged["Error rate"] = present[0].get("Error rate") if present else creation.error_rate
        merged["Shards"] = len(infos)
        return merged


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
        shards: int | None = None,
        batch_size: int = 1000,
        pipeline_size: int = 16,
        wait_for_replicas: int = 0,
        wait_timeout: float = 1.0,
    ):
        super().__init__(
            client,
            key,
            FilterOptions(capacity, error_rate, window),
            Core,
            shards=shards,
            batch_size=batch_size,
            pipeline_size=pipeline_size,
            wait_for_replicas=wait_for_replicas,
            wait_timeout=wait_timeout,
        )


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
