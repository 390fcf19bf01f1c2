"""The command core of ``redis_bf.BloomFilter``, ``redis_bf.CuckooFilter`` and their asyncio twins:
the operations, each a generator that yields the requests to send (``Call``, ``Batch``) and turns
their replies into its answer, without any I/O (each class only sends what this builds and hands
back what came). ``Core`` is a Bloom filter's (``BF.*``), ``CuckooCore`` a cuckoo filter's
(``CF.*``): the same batching, sharding, creation on a missing key, and ``wait_for_replicas``,
with the family's own commands and replies.

The rooms below it, each one of docs/sharding.md's concepts: ``_errors`` (the exceptions and
their messages), ``_options`` (how a filter is created), ``_replies`` (how replies become answers)
and ``_shards`` (item bytes, the item's shard, key names, the manifest, merged info).

A filter lives at one key, or, with ``shards=N``, at N keys: the items of a batch are then
grouped by shard, each shard's items go ``batch_size`` to a command, and one pipeline carries them
all (on a cluster client, redis-py sends it as one pipeline per node, all nodes at once).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar

from redis.exceptions import ResponseError

from ._errors import (
    CUCKOO_TYPE,
    FILTER_TYPE,
    REDISBLOOM_UNKNOWN_ARGUMENT,
    BloomFilterError,
    ErrorRateUnsupportedError,
    FilterMismatchError,
    KeyTypeError,
    error_rate_unsupported,
    explained,
    is_not_found,
)
from ._replies import (
    Command,
    Round,
    Verb,
    Waited,
    as_bool,
    as_bools,
    check_waits,
    collect,
    cuckoo_added,
    cuckoo_added_unique,
    cuckoo_info,
    decode,
    info_dict,
    reserve_failure,
)
from ._shards import (
    NEW_VERSION,
    READABLE_VERSIONS,
    SHARD_FUNCTIONS,
    Item,
    Manifest,
    encoder_of,
    item_bytes,
    kind_name,
    manifest_text,
    merge_bloom_info,
    merge_cuckoo_info,
    parse_manifest,
    same_slot_key,
    shard_capacity,
    shard_keys,
)

# Names the tests import from here, moved to their rooms.
__all__ = [
    "CF_DEL",
    "CF_INSERTNX",
    "Batch",
    "Call",
    "Core",
    "CuckooCore",
    "Operation",
    "Waited",
    "cuckoo_info",
    "error_rate_unsupported",
    "info_dict",
    "shard_capacity",
]

# The key that ``wait_for_replicas`` writes (and deletes) after a batch's writes, next to the
# filter's key (``Core.marker``), so that the ``WAIT`` after it covers the primary's whole
# replication stream up to the answers. Its value, and how long it lives if the DEL never comes.
WAIT_MARKER_SUFFIX = ":redis-bf-wait"
WAIT_MARKER_MILLIS = 60_000


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


T = TypeVar("T")
# An operation: it yields requests, is sent their answers, and returns its result.
Operation = Generator[Call | Batch, Any, T]


def is_cluster(client: Any) -> bool:
    """True for redis-py's cluster clients (they route each key to its node)."""
    return callable(getattr(client, "get_node_from_key", None))


BF_INSERT = Verb("BF.INSERT", write=True, creates=True)
BF_MEXISTS = Verb("BF.MEXISTS")
CF_INSERT = Verb("CF.INSERT", write=True, creates=True, answer=cuckoo_added)
CF_INSERTNX = Verb("CF.INSERTNX", write=True, creates=True, answer=cuckoo_added_unique)
CF_MEXISTS = Verb("CF.MEXISTS")
# CF.DEL of a missing key answers "Not found": it holds nothing, so nothing was deleted.
CF_DEL = Verb("CF.DEL", write=True, single=True, missing=False)


class Core:
    """A Bloom filter's commands and answers, for one key or ``shards`` keys (see the module
    doc). ``CuckooCore`` is a cuckoo filter's: the class attributes and a few operations differ."""

    name = "Bloom filter"
    type_name = FILTER_TYPE
    kind = "bloom"  # a sharded filter's "kind" in its manifest
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
        self.keys: tuple[str, ...] = (key,) if shards is None else shard_keys(key, shards)
        self.adopt(None)
        self.checked = shards is None  # a sharded filter checks its manifest on first use
        self._markers: dict[str, str] = {}
        # A sharded filter's parameters, once a WAIT confirmed them (see ``check``).
        self.manifest_replicated = False

    def describe(self) -> str:
        """The parameters, for a ``repr``."""
        shards = "" if self.shards is None else f", shards={self.shards}"
        return f"key={self.key!r}, {self.options.describe()}{shards}"

    # -- single items -------------------------------------------------------------------------

    def key_of(self, item: Item) -> str:
        """The key that holds ``item``: the filter's, or its shard's (by a hash of the item's
        bytes, in the manifest's version: see ``redis_bf._shards``)."""
        if self.shards is None:
            return self.key
        data = (
            item.encode() if type(item) is str and self.encode is item_bytes else self.encode(item)
        )
        return self.keys[self.shard_of(data, self.shards)]

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

    def check_waits(self, waits: Sequence[Any], results: list[bool]) -> None:
        """Raises ``NotReplicatedError`` unless every node's ``WAIT`` (a ``Waited``) reached the
        replicas asked, after its marker write went through."""
        check_waits(waits, results, self.wait_for_replicas, self.wait_millis)

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
            round_trip = Round(start, len(chunk), verb)
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
        """The answers of a round trip, in the items' order (``redis_bf._replies.collect``)."""
        return collect(round_trip, replies, self.client)

    # -- the manifest of a sharded filter -------------------------------------------------------

    def manifest(self) -> str:
        """What a new sharded filter keeps at its key: the version of its scheme (the newest)
        and the parameters every process must share."""
        identity = self.options.identity()
        return manifest_text(
            NEW_VERSION, self.kind, self.shards or 1, self.options.capacity, identity
        )

    def manifest_command(self) -> tuple[Any, ...]:
        """Sets the manifest if the key is missing, and answers what was there (Redis 7.0+)."""
        return ("SET", self.key, self.manifest(), "NX", "GET")

    def adopt(self, manifest: Manifest | None) -> None:
        """Follows the stored manifest (None: none, so this filter's own, as it would write it):
        its version picks the item-to-shard function, its capacity each shard's (the first
        process's, so that every process creates them alike)."""
        self.version = (
            NEW_VERSION if manifest is None or manifest.version is None else manifest.version
        )
        self.shard_of = SHARD_FUNCTIONS[self.version]
        self.creation = self.own_creation(None if manifest is None else manifest.capacity)
        self._insert_args = self.creation.insert_args()

    def check_manifest(self, reply: Any, claimed: bool = True) -> bool:
        """Checks what ``manifest_command`` found (None: it set ours; ``claimed`` False: what a
        ``GET`` found, None then meaning no filter yet): True if this call made the filter.
        Another kind, shard count, error rate or window raises ``FilterMismatchError``, and so
        does a version this client cannot read; another capacity is the stored one's."""
        if isinstance(reply, ResponseError):
            if str(reply).startswith("WRONGTYPE"):
                raise KeyTypeError(
                    self.key,
                    "value of another type",
                    "a sharded filter keeps its parameters at its key (a string): use another key",
                )
            raise explained(self.client, reply)
        if reply is None:
            self.adopt(None)
            self.checked = claimed
            return claimed
        stored = parse_manifest(reply)
        if stored is None:
            raise KeyTypeError(
                self.key, "string", "not a sharded filter's parameters: use another key"
            )
        if stored.version not in READABLE_VERSIONS:
            raise FilterMismatchError(
                f"the sharded filter at {self.key!r} has a manifest of version "
                f"{stored.fields.get('version')!r}, which this client cannot read (it reads "
                f"{' and '.join(map(str, READABLE_VERSIONS))}): upgrade redis-bf"
            )
        if stored.kind != self.kind:
            raise FilterMismatchError(
                f"the sharded filter at {self.key!r} is a {kind_name(stored.kind)}, not a "
                f"{self.name}: it is another filter"
            )
        mismatches = stored.disagreements(self.shards or 1, self.options.identity())
        if mismatches:
            raise FilterMismatchError(
                f"the sharded filter at {self.key!r} has {', '.join(mismatches)}: it is another "
                "filter (changing the shard count needs a new filter, see the package README)"
            )
        self.adopt(stored)
        self.checked = True
        return False

    def own_creation(self, capacity: int | None = None) -> Any:
        """How this filter's keys are created (options of the filter's own kind): as asked, or
        each shard for its share of ``capacity`` (the stored one)."""
        if self.shards is None:
            return self.options
        total = self.options.capacity if capacity is None else capacity
        return self.options.resized(shard_capacity(total, self.shards))

    def merge_info(self, infos: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
        """The shards' ``BF.INFO`` as one (``redis_bf._shards.merge_bloom_info``)."""
        return merge_bloom_info(infos, self.creation)

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
        self.adopt(None)
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
        """The shards' ``CF.INFO`` as one (``redis_bf._shards.merge_cuckoo_info``)."""
        return merge_cuckoo_info(infos, self.creation)
