"""One filter over N keys (the spec's "shards and manifest": docs/sharding.md, and its test vectors
docs/sharding-vectors.json): the bytes of an item, its shard, the shards' key names and hash tags,
each shard's capacity, the manifest kept at the filter's key, and how the shards' ``*.INFO`` add
up. Everything another client must compute alike to read and write the same filter is here (and,
besides, ``same_slot_key``, which names the key ``wait_for_replicas`` writes). No I/O.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from hashlib import blake2b, sha256
from typing import Any

from redis.crc import key_slot

from ._options import CuckooOptions, FilterOptions

# What redis-py can send as an item (it encodes str as UTF-8, numbers by repr).
Item = bytes | str | int | float

SLOTS = 16384  # Redis Cluster's hash slots
MAX_SHARDS = 1024
# A shard's capacity is its share plus this many standard deviations of the items it gets (see
# ``shard_capacity``).
SHARD_SLACK_SIGMAS = 4.0

# The manifest: a JSON object at the filter's key. Version 2 (SHA-256 shards) is what a new
# filter gets; version 1 (BLAKE2b shards) is read, and written to, where it exists. Version 2's
# format string differs from version 1's so that a client older than version 2, which checks
# the format but not the version, refuses a version 2 filter instead of misplacing its items.
MANIFEST_FORMAT_V1 = "redis-bf sharded filter"
MANIFEST_FORMAT = "redis-bf sharded filter manifest"
NEW_VERSION = 2
READABLE_VERSIONS = (1, 2)
KIND_NAMES = {"bloom": "Bloom filter", "cuckoo": "cuckoo filter"}

# Version 2: an item's shard is the first 8 bytes of SHA-256(this prefix + the item's bytes),
# big endian, modulo the shard count. Version 1: the item's 8-byte BLAKE2b digest, personalised
# with SHARD_HASH_PERSON, little endian, times the count, over 2^64. Part of
# the stored form: changing either loses items.
SHARD_HASH_PREFIX = b"redis-bf:shard:v2:"
SHARD_HASH_PERSON = b"redis-bf"
_FIRST_8_BYTES = struct.Struct(">Q").unpack_from


def item_bytes(item: Item) -> bytes:
    """The bytes redis-py's default encoder (UTF-8, strict) sends for an item: bytes as they are,
    a str in UTF-8, an int or a float as its ``repr``. A bool is refused, as redis-py does."""
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


def shard_v2(data: bytes, count: int) -> int:
    """The shard (0 to ``count`` - 1) of the item whose bytes are ``data``, in version 2."""
    return int(_FIRST_8_BYTES(sha256(SHARD_HASH_PREFIX + data).digest())[0] % count)


def shard_v1(data: bytes, count: int) -> int:
    """The shard of the item whose bytes are ``data``, in version 1 (read where it exists)."""
    digest = blake2b(data, digest_size=8, person=SHARD_HASH_PERSON).digest()
    return (int.from_bytes(digest, "little") * count) >> 64


# Each version's item-to-shard function.
SHARD_FUNCTIONS: dict[int, Callable[[bytes, int], int]] = {1: shard_v1, 2: shard_v2}


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


def shard_keys(key: str, count: Any) -> tuple[str, ...]:
    """The keys of a filter at ``key`` sharded ``count`` ways: ``<key>:<i>/<count>{<tag>}``.
    ``TypeError`` or ``ValueError`` for a count that is not an int from 1 to 1024, or a key with
    a ``{`` (its own hash tag would pull every shard into one slot)."""
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"shards must be an int, not {type(count).__name__}")
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shards must be from 1 to {MAX_SHARDS}, not {count}")
    if "{" in key:
        raise ValueError(
            f"a sharded filter's key cannot hold a hash tag ({key!r}): each shard's key gets a "
            "tag of its own"
        )
    return tuple(f"{key}:{index}/{count}{{{shard_tag(index, count)}}}" for index in range(count))


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
    does, at the same error rate, with one more sub-filter). Double arithmetic, in this order:
    every client computes the same."""
    share = capacity / count
    spread = math.sqrt(share * (1 - 1 / count))
    return max(1, math.ceil(share + SHARD_SLACK_SIGMAS * spread))


# -- the manifest -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """A manifest as stored: its ``version`` (which says the item-to-shard function), ``kind``
    ("bloom" or "cuckoo"), ``capacity`` (None unless a positive int) and every field as read."""

    version: int | None
    kind: str
    capacity: int | None
    fields: dict[str, Any]

    def disagreements(self, shards: int, identity: dict[str, Any]) -> list[str]:
        """What differs from a filter of ``shards`` shards and these parameters (its options'
        ``identity``), each as "name <stored>, not <ours>"; the capacity never does."""
        return [
            f"{name} {self.fields.get(name)!r}, not {mine!r}"
            for name, mine in (("shards", shards), *identity.items())
            if self.fields.get(name) != mine
        ]


def manifest_text(
    version: int, kind: str, shards: int, capacity: int, identity: dict[str, Any]
) -> str:
    """The manifest a filter of these parameters writes at its key: keys sorted, Python's
    ``json.dumps`` separators. Version 1 (never written for a new filter, but spelled here as
    docs/sharding.md does) has its own format string and no ``kind`` for a Bloom filter."""
    fields: dict[str, Any] = {
        "format": MANIFEST_FORMAT if version >= 2 else MANIFEST_FORMAT_V1,
        "version": version,
        "shards": shards,
        "capacity": capacity,
        **identity,
    }
    if version >= 2 or kind != "bloom":
        fields["kind"] = kind
    return json.dumps(fields, sort_keys=True)


def parse_manifest(text: Any) -> Manifest | None:
    """The manifest in ``text`` (str or bytes, as GET answers it), or None if it is not one (not
    a JSON object with one of the two format strings). The version is as stored: ``None`` or a
    number not in ``READABLE_VERSIONS`` is for the caller to refuse."""
    try:
        fields = json.loads(text.decode() if isinstance(text, bytes) else text)
    except (TypeError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(fields, dict):
        return None
    version = fields.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        version = None
    if fields.get("format") == MANIFEST_FORMAT_V1:
        version = 1 if version == 1 else None
    elif fields.get("format") != MANIFEST_FORMAT:
        return None
    elif version is not None and version < 2:
        version = None  # version 1 has the other format string
    capacity = fields.get("capacity")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        capacity = None
    kind = fields.get("kind")
    kind = "bloom" if kind is None else kind  # version 1 names only the cuckoo kind
    return Manifest(version, kind if isinstance(kind, str) else repr(kind), capacity, fields)


def kind_name(kind: str) -> str:
    """ "Bloom filter" or "cuckoo filter" (or what the manifest says)."""
    return KIND_NAMES.get(kind, f"{kind} filter")


# -- count and info over the shards -----------------------------------------------------------


def merge_bloom_info(
    infos: Sequence[dict[str, Any] | None], creation: FilterOptions
) -> dict[str, Any]:
    """``BF.INFO`` of every shard as one (None for a shard not created yet): counts and sizes
    summed, the rest the first existing shard's, and ``Shards``.

    A missing shard counts as the empty shard that the first write to it creates: its capacity
    (``creation``'s, the one it will be created with), no sub-filter, no item, and 0 bytes (it
    takes no memory yet). With no shard at all, ``Expansion rate`` (a shard's) is left out."""
    present = [info for info in infos if info is not None]
    missing = len(infos) - len(present)
    merged = dict(present[0]) if present else {}
    for name, absent in (
        ("Capacity", creation.capacity),
        ("Size", 0),
        ("Number of filters", 0),
        ("Number of items inserted", 0),
    ):
        if all(name in info for info in present):
            merged[name] = sum(int(info[name]) for info in present) + missing * absent
    if not present and creation.window is not None:
        merged["Window"] = creation.window
    merged["Shards"] = len(infos)
    return merged


# CF.INFO's fields that add up over shards.
CUCKOO_SUMMED = (
    "Size",
    "Number of buckets",
    "Number of filters",
    "Number of items inserted",
    "Number of items deleted",
)


def merge_cuckoo_info(
    infos: Sequence[dict[str, Any] | None], creation: CuckooOptions
) -> dict[str, Any]:
    """``CF.INFO`` of every shard as one (None for a shard not created yet): counts and sizes
    summed, the parameters the shards share, and ``Shards``. A missing shard counts as the
    empty shard its first write creates (``creation``): its buckets, no sub-filter, no item,
    0 bytes."""
    present = [info for info in infos if info is not None]
    missing = len(infos) - len(present)
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
