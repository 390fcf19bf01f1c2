"""How the server's replies become answers (the spec's "replies", docs/sharding.md): one item's
answer in RESP2 or RESP3 (``as_bool``, a cuckoo insert's), a batch command's array, ``*.INFO`` as
a dict, the replies of a whole round trip back in the caller's order with the first failing item
raised (``collect``), and ``WAIT``'s confirmations (``check_waits``). No I/O: the core says what
was sent (``Round``), the classes hand over what came back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import ResponseError

from ._errors import (
    CUCKOO_REFUSED,
    BloomFilterError,
    FilterFullError,
    ModuleMissingError,
    NotReplicatedError,
    error_class,
    is_module_missing,
    is_not_found,
)


def as_bool(reply: Any) -> bool:
    """One answer: RESP3 ``True``/``False`` or RESP2 ``1``/``0``. Anything else raises."""
    if isinstance(reply, bool):
        return reply
    if isinstance(reply, int) and reply in (0, 1):
        return reply == 1
    if isinstance(reply, ResponseError):
        raise error_class(str(reply))(str(reply))
    raise BloomFilterError(f"unexpected reply {reply!r}: not a Bloom filter answer")


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


def cuckoo_info(reply: Any) -> dict[str, Any]:
    """``CF.INFO`` as a dict: RedisBloom's eight counts, and ``Error rate`` as a float (the
    module answers it as text) for a filter with one."""
    info = info_dict(reply)
    if "Error rate" in info:
        info["Error rate"] = float(decode(info["Error rate"]))
    return info


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
class Waited:
    """What a node (``address``, host:port) answered to ``Core.wait_commands``, sent after a
    batch's writes on the same connection."""

    address: str
    replies: Sequence[Any]


@dataclass(frozen=True)
class Verb:
    """A command over items: its name, whether it writes, whether it carries the creation
    options (an insert: ``<command> key <creation> ITEMS item...``), whether it takes one item
    (``CF.DEL key item``) or many, how one answer is read, and the answer for every item when
    the key is missing and the command says "not found" (None: that is an error). The core's
    verbs are ``redis_bf._core.BF_INSERT`` and its siblings."""

    command: str
    write: bool = False
    creates: bool = False
    single: bool = False
    answer: Callable[[Any], bool] = as_bool
    missing: bool | None = None


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
    """The commands of one round trip, for the items from ``start`` (``size`` of them), all of
    one ``verb``."""

    start: int
    size: int
    verb: Verb
    commands: list[Command] = field(default_factory=list)


def collect(round_trip: Round, replies: Sequence[Any], client: Any = None) -> list[bool]:
    """The answers of a round trip, in the items' order; the first failing item (by position)
    raises, with the answers before it. ``replies`` may go on past the commands (``WAIT``s,
    checked by ``check_waits``). ``client`` is named by a ``ModuleMissingError``."""
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
            raise ModuleMissingError(client, str(reply))
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
                values = [verb.answer(reply)] if verb.single else as_bools(reply, 0, verb.answer)
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


def check_waits(waits: Sequence[Any], results: list[bool], asked: int, millis: int) -> None:
    """Raises ``NotReplicatedError`` unless every node's ``WAIT asked millis`` (a ``Waited``)
    reached the replicas asked, after its marker write went through. ``results`` are the answers
    so far (applied on the primaries: the error carries them)."""
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
            said = f"failed ({reply})" if isinstance(reply, Exception) else f"answered {reply!r}"
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
                f"every write before them, within {millis} ms (WAIT {asked}): {lost}",
                results,
                len(results),
                address=waited.address,
                confirmed=reply,
                asked=asked,
            )
