"""What ``redis_bf.BloomFilter`` and ``redis_bf.asyncio.BloomFilter`` share: the commands they send
and how the replies become answers, without any I/O (each class only sends what this builds and
hands back what came).

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


class KeyTypeError(ResponseError):
    """The key holds a value that is not a Bloom filter (``key_type`` is what TYPE answered)."""

    def __init__(self, key: str, key_type: str, hint: str = ""):
        message = f"{key!r} holds a {key_type}, not a Bloom filter"
        super().__init__(f"{message}: {hint}" if hint else message)
        self.key = key
        self.key_type = key_type


# Raised to users, who import them from ``redis_bf``: tracebacks name them so.
for _error in (
    BloomFilterError,
    NotReplicatedError,
    FilterMismatchError,
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
    """True for the server's answer to a ``BF.*`` command it does not know."""
    message = str(error)
    return "unknown command" in message and "'bf." in message.lower()


def is_not_found(reply: Any) -> bool:
    """True for ``BF.INFO``'s answer on a missing key (redis-bf's and RedisBloom's)."""
    return isinstance(reply, ResponseError) and str(reply).removeprefix("ERR ") == "not found"


def explained(client: Any, error: ResponseError) -> ResponseError:
    """``error``, or a ``ModuleMissingError`` if it says the server has no ``BF.*`` commands."""
    return ModuleMissingError(client, str(error)) if is_module_missing(error) else error


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
        try:
            answers.append(as_bool(element))
        except BloomFilterError as error:
            raise BloomFilterError(str(error), answers, offset + len(answers)) from None
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
class Command:
    """One command of a batch, and the positions (in the call's items) of the items it carries."""

    args: tuple[Any, ...]
    positions: Sequence[int]


@dataclass
class Round:
    """The commands of one round trip, for the items from ``start`` (``size`` of them)."""

    start: int
    size: int
    commands: list[Command] = field(default_factory=list)


class Core:
    """A filter's commands and answers, for one key or ``shards`` keys (see the module doc)."""

    def __init__(
        self,
        client: Any,
        key: str,
        options: FilterOptions,
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
        window = "" if self.options.window is None else f", window={self.options.window}"
        shards = "" if self.shards is None else f", shards={self.shards}"
        return (
            f"key={self.key!r}, capacity={self.options.capacity}, "
            f"error_rate={self.options.error_rate}{window}{shards}"
        )

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

    def insert(self, key: str, items: Sequence[Item]) -> tuple[Any, ...]:
        """``BF.INSERT`` of ``items`` at ``key``, with the creation options."""
        return ("BF.INSERT", key, *self._insert_args, "ITEMS", *items)

    @staticmethod
    def exists(key: str, items: Sequence[Item]) -> tuple[Any, ...]:
        return ("BF.MEXISTS", key, *items)

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

    def rounds(self, items: Iterable[Item], write: bool) -> Iterator[Round]:
        """The round trips of a batch call: ``batch_size * pipeline_size`` items each, in
        commands of at most ``batch_size`` items of one key."""
        build = self.insert if write else self.exists
        iterator = iter(items)
        start = 0
        while chunk := list(islice(iterator, self.batch_size * self.pipeline_size)):
            round_trip = Round(start, len(chunk))
            groups: dict[str, list[int]] = {}
            for position, item in enumerate(chunk):
                groups.setdefault(self.key_of(item), []).append(position)
            for key in sorted(groups):
                positions = groups[key]
                for first in range(0, len(positions), self.batch_size):
                    part = positions[first : first + self.batch_size]
                    round_trip.commands.append(
                        Command(build(key, [chunk[p] for p in part]), [start + p for p in part])
                    )
            yield round_trip
            start += len(chunk)

    def collect(self, round_trip: Round, replies: Sequence[Any]) -> list[bool]:
        """The answers of a round trip, in the items' order; the first failing item (by position)
        raises, with the answers before it. ``replies`` may go on past the commands (``WAIT``s,
        checked by ``check_waits``)."""
        answers: list[bool | None] = [None] * round_trip.size
        failure: tuple[int, str] | None = None
        if len(replies) < len(round_trip.commands):
            raise BloomFilterError(
                f"{len(replies)} replies to {len(round_trip.commands)} commands",
                [],
                round_trip.start,
            )
        for command, reply in zip(round_trip.commands, replies, strict=False):
            found: tuple[int, str] | None = None
            if isinstance(reply, ResponseError):
                if is_module_missing(reply):
                    raise ModuleMissingError(self.client, str(reply))
                # A top-level error (WRONGTYPE, OOM, MOVED...): none of the command's items applied.
                found = (command.positions[0], str(reply))
            else:
                try:
                    values = as_bools(reply)
                except BloomFilterError as error:
                    values = error.results
                    found = (command.positions[len(values)], str(error))
                if found is None and len(values) != len(command.positions):
                    missing = command.positions[min(len(values), len(command.positions) - 1)]
                    found = (missing, f"{len(values)} answers to {len(command.positions)} items")
                for position, value in zip(command.positions, values, strict=False):
                    answers[position - round_trip.start] = value
            if found is not None and (failure is None or found[0] < failure[0]):
                failure = found
        if failure is not None:
            index, message = failure
            before = answers[: index - round_trip.start]
            raise BloomFilterError(message, [bool(a) for a in before], index)
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
        return json.dumps(
            {
                "format": MANIFEST_FORMAT,
                "version": 1,
                "shards": self.shards,
                "capacity": self.options.capacity,
                "error_rate": float(self.options.error_rate),
                "window": self.options.window,
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
        mismatches = [
            f"{name} {stored.get(name)!r}, not {mine!r}"
            for name, mine in (
                ("shards", self.shards),
                ("error_rate", float(self.options.error_rate)),
                ("window", self.options.window),
            )
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

    def own_creation(self, capacity: int | None = None) -> FilterOptions:
        """How this filter's keys are created: as asked, or each shard for its share of
        ``capacity`` (the stored one)."""
        if self.shards is None:
            return self.options
        total = self.options.capacity if capacity is None else capacity
        return FilterOptions(
            shard_capacity(total, self.shards), self.options.error_rate, self.options.window
        )

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
        reserve = [("BF.RESERVE", key, *self.creation.reserve_args()) for key in self.keys]
        wait = self.wait_for_replicas > 0
        replies = yield Batch(reserve, wait)
        for key, reply in zip(self.keys, replies[: len(reserve)], strict=True):
            if isinstance(reply, ResponseError):
                failure = reserve_failure(reply)
                if failure is not None:
                    raise explained(self.client, failure)
                key_type = str(decode(self.answer((yield Call(("TYPE", key))))))
                if key_type != FILTER_TYPE:
                    raise KeyTypeError(key, key_type)
            else:
                created = True
        if wait:
            self.check_waits(replies[len(reserve) :], [])
        return created

    def key_type(self) -> Operation[str]:
        return str(decode(self.answer((yield Call(("TYPE", self.key))))))

    def add(self, item: Item) -> Operation[bool]:
        if self.wait_for_replicas:
            return (yield from self.batched([item], write=True))[0]
        yield from self.check()
        reply = yield Call(self.insert(self.key_of(item), [item]))
        return as_bools(self.answer(reply))[0]

    def contains(self, item: Item) -> Operation[bool]:
        yield from self.check()
        return as_bool(self.answer((yield Call(("BF.EXISTS", self.key_of(item), item)))))

    def count(self) -> Operation[int]:
        yield from self.verify()
        replies = yield Batch([("BF.CARD", key) for key in self.keys])
        return sum(int(self.answer(reply)) for reply in replies)

    def info(self) -> Operation[dict[str, Any]]:
        yield from self.verify()
        replies = yield Batch([("BF.INFO", key) for key in self.keys])
        if self.shards is None:
            return info_dict(self.answer(replies[0]))
        infos = [
            None if is_not_found(reply) else info_dict(self.answer(reply)) for reply in replies
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

    def batched(self, items: Iterable[Item], write: bool) -> Operation[list[bool]]:
        yield from self.check(write)
        answers: list[bool] = []
        for round_trip in self.rounds(items, write):
            commands = round_trip.commands
            wait = write and self.wait_for_replicas > 0
            replies = yield Batch([command.args for command in commands], wait)
            try:
                answers.extend(self.collect(round_trip, replies))
            except BloomFilterError as error:
                error.results = answers + error.results
                raise
            self.check_waits(replies[len(commands) :], answers)
        return answers


class BloomFilterBase:
    """What ``redis_bf.BloomFilter`` and ``redis_bf.asyncio.BloomFilter`` share: the parameters
    (see ``redis_bf.BloomFilter``) and the ``Core`` whose operations each runs its own way."""

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
        self.client = client
        self.key = key
        self.options = FilterOptions(capacity, error_rate, window)
        self.batch_size = batch_size
        self.pipeline_size = pipeline_size
        self._core = Core(
            client,
            key,
            self.options,
            shards=shards,
            batch_size=batch_size,
            pipeline_size=pipeline_size,
            wait_for_replicas=wait_for_replicas,
            wait_timeout=wait_timeout,
        )

    @property
    def shards(self) -> int | None:
        return self._core.shards

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys holding the items: ``(key,)``, or the shards' keys."""
        return self._core.keys

    def __repr__(self) -> str:
        return f"{self.repr_name}({self._core.describe()})"

    repr_name = "BloomFilter"
