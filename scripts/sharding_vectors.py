#!/usr/bin/env python3
"""Writes docs/sharding-vectors.json, the test vectors of docs/sharding.md, from the spec alone:
this script imports nothing of redis_bf (nor redis-py), so the packages' tests that read the
vectors (python/tests/test_vectors.py, and the Node package's) check an implementation against a
second one written from the text. Python 3.10 or newer, standard library only.

    scripts/sharding_vectors.py           # write the file
    scripts/sharding_vectors.py --check   # exit 1 if the file is not what this writes
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "docs/sharding-vectors.json"
PREFIX = b"redis-bf:shard:v2:"
PERSON = b"redis-bf"
FORMAT_V1 = "redis-bf sharded filter"
FORMAT = "redis-bf sharded filter manifest"
COUNTS = [1, 2, 3, 5, 12, 16, 100, 1024]


def crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021, initial 0), Redis Cluster's."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot(key: bytes) -> int:
    """The cluster slot of a key: the CRC16 of its hash tag if it has a non-empty one."""
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc16(key) % 16384


TAGS: dict[int, str] = {}


def tag_of_slot(wanted: int) -> str:
    """The first of 0, 1, 2, ... written in lowercase hexadecimal whose slot is ``wanted``."""
    if not TAGS:
        n = 0
        while len(TAGS) < 16384:
            TAGS.setdefault(slot(format(n, "x").encode()), format(n, "x"))
            n += 1
    return TAGS[wanted]


def shard_keys(key: str, count: int) -> list[str]:
    return [
        f"{key}:{i}/{count}{{{tag_of_slot((2 * i + 1) * 16384 // (2 * count))}}}"
        for i in range(count)
    ]


def v2(data: bytes, count: int) -> int:
    return int.from_bytes(hashlib.sha256(PREFIX + data).digest()[:8], "big") % count


def v1(data: bytes, count: int) -> int:
    digest = hashlib.blake2b(data, digest_size=8, person=PERSON).digest()
    return (int.from_bytes(digest, "little") * count) >> 64


def shard_capacity(capacity: int, count: int) -> int:
    share = capacity / count
    return max(1, math.ceil(share + 4.0 * math.sqrt(share * (1 - 1 / count))))


def cuckoo_shard(capacity: int, count: int, bucket_size: int) -> dict[str, int]:
    shard = max(shard_capacity(capacity, count), 2 * bucket_size)
    wanted = max(1, shard // bucket_size)
    return {
        "bucket_size": bucket_size,
        "capacity": shard,
        "buckets": 1 << (wanted - 1).bit_length(),
    }


# Items: how Python spells each (str, bytes as hex, int as decimal text, float as its repr) and
# how JavaScript does (a string, a number, a bigint as decimal text, bytes as hex; None: it
# cannot, see "note").
ITEMS: list[tuple[str, dict[str, Any], dict[str, Any] | None, str]] = [
    ("empty string", {"str": ""}, {"string": ""}, ""),
    ("URL", {"str": "https://example.com/"}, {"string": "https://example.com/"}, ""),
    (
        "scrapy-redis fingerprint",
        {"str": "4ad1b2f6e1a3c1c8e8a6a0e9d4c0b8f2a7e5d3c1"},
        {"string": "4ad1b2f6e1a3c1c8e8a6a0e9d4c0b8f2a7e5d3c1"},
        "",
    ),
    ("Latin-1 letter, 2 bytes in UTF-8", {"str": "café"}, {"string": "café"}, ""),
    ("Greek", {"str": "σίγμα"}, {"string": "σίγμα"}, ""),
    ("CJK, 3 bytes a character", {"str": "日本語"}, {"string": "日本語"}, ""),
    (
        "outside the BMP: 4 bytes, a surrogate pair in JavaScript",
        {"str": "😀 ok"},
        {"string": "😀 ok"},
        "",
    ),
    ("NUL, newline and tab inside", {"str": "a\u0000b\nc\td"}, {"string": "a\u0000b\nc\td"}, ""),
    ("the string 42: the same bytes as the integer", {"str": "42"}, {"string": "42"}, ""),
    ("bytes 00", {"bytes_hex": "00"}, {"bytes_hex": "00"}, ""),
    (
        "bytes that are not UTF-8 (café in Latin-1)",
        {"bytes_hex": "636166e9"},
        {"bytes_hex": "636166e9"},
        "",
    ),
    (
        "32 bytes",
        {"bytes_hex": bytes(range(0, 256, 8)).hex()},
        {"bytes_hex": bytes(range(0, 256, 8)).hex()},
        "",
    ),
    ("integer 0", {"int": "0"}, {"number": 0}, "JavaScript's -0 is 0 too"),
    ("integer 42", {"int": "42"}, {"number": 42}, ""),
    ("integer -42", {"int": "-42"}, {"number": -42}, ""),
    ("largest safe integer", {"int": str(2**53 - 1)}, {"number": 2**53 - 1}, ""),
    ("smallest safe integer", {"int": str(-(2**53 - 1))}, {"number": -(2**53 - 1)}, ""),
    (
        "2^53: past JavaScript's safe integers",
        {"int": str(2**53)},
        {"bigint": str(2**53)},
        "a number 2 ** 53 is refused (not a safe integer); the bigint 2n ** 53n is this item",
    ),
    ("2^64", {"int": str(2**64)}, {"bigint": str(2**64)}, ""),
    ("-2^63", {"int": str(-(2**63))}, {"bigint": str(-(2**63))}, ""),
    ("float 1.5", {"float": "1.5"}, {"number": 1.5}, ""),
    ("float -0.25", {"float": "-0.25"}, {"number": -0.25}, ""),
    ("float 0.1", {"float": "0.1"}, {"number": 0.1}, ""),
    ("float pi", {"float": "3.141592653589793"}, {"number": 3.141592653589793}, ""),
    (
        "float 0.0001: the smallest magnitude both spell alike",
        {"float": "0.0001"},
        {"number": 0.0001},
        "",
    ),
    ("float -123.456", {"float": "-123.456"}, {"number": -123.456}, ""),
    (
        "the largest double with a fraction",
        {"float": "4503599627370495.5"},
        {"number": 4503599627370495.5},
        "",
    ),
    (
        "float 1e-05",
        {"float": "1e-05"},
        None,
        "JavaScript spells the number 0.00001 '0.00001': refused; the string '1e-05' is this item",
    ),
    (
        "float 100.0",
        {"float": "100.0"},
        None,
        "the number 100 is the integer 100 (bytes '100'); the string '100.0' is this item",
    ),
    (
        "float -0.0",
        {"float": "-0.0"},
        None,
        "the number -0 is the integer 0; the string '-0.0' is this item",
    ),
    (
        "float 1e+16",
        {"float": "1e+16"},
        None,
        "the number 1e16 is refused (not a safe integer); the string '1e+16' is this item",
    ),
    ("float inf", {"float": "inf"}, None, "Infinity is refused; the string 'inf' is this item"),
    ("float nan", {"float": "nan"}, None, "NaN is refused; the string 'nan' is this item"),
]

# What a client refuses as an item (nothing is sent). JavaScript numbers as Number(text) reads
# them.
REFUSED = {
    "python": [
        {"value": {"bool": True}, "why": "a bool is not an item (redis-py refuses it too)"},
        {"value": {"none": None}, "why": "None is not an item"},
        {"value": {"str": "a\ud800b"}, "why": "a lone surrogate has no UTF-8 encoding"},
    ],
    "js": [
        {"value": {"number_text": "NaN"}, "why": "not finite"},
        {"value": {"number_text": "Infinity"}, "why": "not finite"},
        {"value": {"number_text": "-Infinity"}, "why": "not finite"},
        {
            "value": {"number_text": "9007199254740992"},
            "why": "an integer past 2^53 - 1: give a bigint",
        },
        {"value": {"number_text": "1e21"}, "why": "an integer past 2^53 - 1: give a bigint"},
        {"value": {"number_text": "0.00001"}, "why": "a fraction smaller than 0.0001 in magnitude"},
        {"value": {"number_text": "-5e-324"}, "why": "a fraction smaller than 0.0001 in magnitude"},
        {"value": {"boolean": True}, "why": "a boolean is not an item"},
        {"value": {"null": None}, "why": "null is not an item (nor undefined)"},
        {"value": {"string": "a\ud800b"}, "why": "a lone surrogate has no UTF-8 encoding"},
    ],
}


def python_bytes(spelled: dict[str, Any]) -> bytes:
    ((kind, value),) = spelled.items()
    if kind == "str":
        return str(value).encode("utf-8")
    if kind == "bytes_hex":
        return bytes.fromhex(value)
    if kind == "int":
        return str(int(value)).encode()
    return repr(float(value)).encode()


def item_vectors() -> list[dict[str, Any]]:
    out = []
    for name, python, js, note in ITEMS:
        data = python_bytes(python)
        entry: dict[str, Any] = {"name": name, "python": python, "js": js}
        if note:
            entry["note"] = note
        entry["bytes_hex"] = data.hex()
        entry["v2_hash_hex"] = hashlib.sha256(PREFIX + data).digest()[:8].hex()
        entry["v2"] = {str(n): v2(data, n) for n in COUNTS}
        entry["v1"] = {str(n): v1(data, n) for n in COUNTS}
        out.append(entry)
    return out


def manifest(
    version: int, kind: str, shards: int, capacity: int, parameters: dict[str, Any]
) -> str:
    fields = {"version": version, "shards": shards, "capacity": capacity, **parameters}
    fields["format"] = FORMAT if version >= 2 else FORMAT_V1
    if version >= 2 or kind != "bloom":
        fields["kind"] = kind
    return json.dumps(fields, sort_keys=True)


BLOOM = {"error_rate": 0.001, "window": None}
WINDOWED = {"error_rate": 1e-06, "window": 604800}
BOUNDED = {"error_rate": 0.01, "bucket_size": 4, "max_iterations": 500, "expansion": 2}
REDISBLOOM = {"error_rate": None, "bucket_size": 2, "max_iterations": 20, "expansion": 1}


def manifest_vectors() -> dict[str, Any]:
    written = [
        {
            "version": version,
            "kind": kind,
            "shards": shards,
            "capacity": capacity,
            "parameters": parameters,
            "text": manifest(version, kind, shards, capacity, parameters),
        }
        for version, kind, shards, capacity, parameters in (
            (2, "bloom", 12, 1_000_000, BLOOM),
            (2, "bloom", 6, 100_000_000, WINDOWED),
            (2, "cuckoo", 12, 100_000, BOUNDED),
            (2, "cuckoo", 3, 1000, REDISBLOOM),
            (1, "bloom", 12, 1_000_000, BLOOM),
            (1, "cuckoo", 12, 100_000, BOUNDED),
        )
    ]
    bloom_v2 = manifest(2, "bloom", 12, 1_000_000, BLOOM)
    asked = {"kind": "bloom", "shards": 12, "capacity": 1_000_000, **BLOOM}

    def use(
        version: int, capacity: int, kind: str = "bloom", bucket_size: int = 0
    ) -> dict[str, Any]:
        shard = shard_capacity(capacity, 12)
        if kind == "cuckoo":
            shard = max(shard, 2 * bucket_size)
        return {"outcome": "use", "version": version, "shard_capacity": shard}

    def refused(error: str, because: str) -> dict[str, Any]:
        return {"outcome": "refused", "error": error, "because": because}

    extra = json.loads(bloom_v2)
    extra["written_by"] = "a later client"
    cases = [
        ("version 2, the same parameters", bloom_v2, asked, use(2, 1_000_000)),
        (
            "another capacity: the stored one makes the shards",
            bloom_v2,
            {**asked, "capacity": 50_000},
            use(2, 1_000_000),
        ),
        (
            "a field this client does not know is ignored",
            json.dumps(extra, sort_keys=True),
            asked,
            use(2, 1_000_000),
        ),
        (
            "version 1 (no kind: a Bloom filter)",
            manifest(1, "bloom", 12, 1_000_000, BLOOM),
            asked,
            use(1, 1_000_000),
        ),
        (
            "version 1, a cuckoo filter",
            manifest(1, "cuckoo", 12, 100_000, BOUNDED),
            {"kind": "cuckoo", "shards": 12, "capacity": 100_000, **BOUNDED},
            use(1, 100_000, "cuckoo", 4),
        ),
        (
            "another error rate",
            bloom_v2,
            {**asked, "error_rate": 0.01},
            refused("FilterMismatchError", "error_rate"),
        ),
        (
            "another shard count",
            bloom_v2,
            {**asked, "shards": 6},
            refused("FilterMismatchError", "shards"),
        ),
        (
            "another window",
            bloom_v2,
            {**asked, "window": 60},
            refused("FilterMismatchError", "window"),
        ),
        (
            "the other kind",
            manifest(2, "cuckoo", 12, 100_000, BOUNDED),
            asked,
            refused("FilterMismatchError", "kind"),
        ),
        (
            "a cuckoo filter of other parameters",
            manifest(2, "cuckoo", 12, 100_000, BOUNDED),
            {"kind": "cuckoo", "shards": 12, "capacity": 100_000, **REDISBLOOM},
            refused("FilterMismatchError", "error_rate, bucket_size, max_iterations, expansion"),
        ),
        (
            "a version this client cannot read",
            bloom_v2.replace('"version": 2', '"version": 3'),
            asked,
            refused("FilterMismatchError", "version"),
        ),
        (
            "version 2 under version 1's format string",
            bloom_v2.replace(FORMAT, FORMAT_V1),
            asked,
            refused("FilterMismatchError", "version"),
        ),
        (
            "no version",
            bloom_v2.replace('"version": 2, ', ""),
            asked,
            refused("FilterMismatchError", "version"),
        ),
        ("not JSON", "hello", asked, refused("KeyTypeError", "not a manifest")),
        (
            "JSON of something else",
            '{"format": "other"}',
            asked,
            refused("KeyTypeError", "not a manifest"),
        ),
        ("a JSON array", "[1, 2]", asked, refused("KeyTypeError", "not a manifest")),
    ]
    read = [
        {"name": name, "text": text, "asked": arguments, **result}
        for name, text, arguments, result in cases
    ]
    return {"written": written, "read": read}


def info_vectors() -> list[dict[str, Any]]:
    bloom_shard = {
        "Capacity": 393,
        "Size": 1048,
        "Number of filters": 1,
        "Number of items inserted": 120,
        "Expansion rate": 2,
    }
    grown = {
        **bloom_shard,
        "Capacity": 1179,
        "Size": 3184,
        "Number of filters": 2,
        "Number of items inserted": 401,
    }
    cuckoo_info = {
        "Size": 1104,
        "Number of buckets": 128,
        "Number of filters": 1,
        "Number of items inserted": 100,
        "Number of items deleted": 3,
        "Bucket size": 4,
        "Expansion rate": 2,
        "Max iterations": 500,
        "Error rate": 0.01,
    }
    cases: list[tuple[str, str, dict[str, Any], list[Any]]] = [
        (
            "two shards of three, one grown",
            "bloom",
            {"capacity": 1000, **BLOOM},
            [bloom_shard, None, grown],
        ),
        (
            "no shard yet, windowed",
            "bloom",
            {"capacity": 1000, "error_rate": 0.001, "window": 60},
            [None, None, None],
        ),
        (
            "one cuckoo shard of three",
            "cuckoo",
            {"capacity": 1000, **BOUNDED},
            [None, cuckoo_info, None],
        ),
        (
            "no cuckoo shard yet, RedisBloom's kind",
            "cuckoo",
            {"capacity": 1000, **REDISBLOOM},
            [None, None, None],
        ),
    ]
    out = []
    for name, kind, asked, infos in cases:
        count = len(infos)
        shard = shard_capacity(asked["capacity"], count)
        present = [info for info in infos if info is not None]
        missing = count - len(present)
        merged: dict[str, Any]
        if kind == "bloom":
            merged = dict(present[0]) if present else {}
            for field, absent in (
                ("Capacity", shard),
                ("Size", 0),
                ("Number of filters", 0),
                ("Number of items inserted", 0),
            ):
                merged[field] = sum(info[field] for info in present) + missing * absent
            if not present and asked["window"] is not None:
                merged["Window"] = asked["window"]
        else:
            creation = cuckoo_shard(asked["capacity"], count, asked["bucket_size"])
            merged = {}
            for field in (
                "Size",
                "Number of buckets",
                "Number of filters",
                "Number of items inserted",
                "Number of items deleted",
            ):
                merged[field] = sum(info[field] for info in present)
                merged[field] += missing * (
                    creation["buckets"] if field == "Number of buckets" else 0
                )
            for field, own in (
                ("Bucket size", "bucket_size"),
                ("Expansion rate", "expansion"),
                ("Max iterations", "max_iterations"),
            ):
                merged[field] = present[0][field] if present else asked[own]
            if asked["error_rate"] is not None:
                merged["Error rate"] = present[0]["Error rate"] if present else asked["error_rate"]
        merged["Shards"] = count
        out.append({"name": name, "kind": kind, "asked": asked, "shards": infos, "merged": merged})
    return out


def vectors() -> dict[str, Any]:
    capacities = []
    for capacity, count in (
        (1_000_000, 12),
        (1000, 1),
        (1, 8),
        (1000, 3),
        (7, 3),
        (100_000, 12),
        (1_000_000_000, 12),
        (10**15, 1024),
        (2**53 - 1, 1000),
    ):
        capacities.append(
            {
                "capacity": capacity,
                "shards": count,
                "bloom": shard_capacity(capacity, count),
                "cuckoo": [cuckoo_shard(capacity, count, size) for size in (4, 2)],
            }
        )
    keys = [
        {"key": key, "shards": count, "keys": shard_keys(key, count)}
        for key, count in (
            ("crawl:seen", 12),
            ("crawl:seen", 1),
            ("café:σ", 3),
            ("a}b", 2),
            ("user 42: seen", 2),
        )
    ]
    return {
        "about": (
            "Test vectors of docs/sharding.md, written by scripts/sharding_vectors.py from the "
            "spec (it imports no package of this repository). Item bytes as hex; 'v2' and 'v1' "
            "map a shard count to the item's shard in that version."
        ),
        "v2_prefix_hex": PREFIX.hex(),
        "v1_personalisation_hex": PERSON.hex(),
        "shard_counts": COUNTS,
        "items": item_vectors(),
        "refused_items": REFUSED,
        "shard_tags": {
            str(n): [tag_of_slot((2 * i + 1) * 16384 // (2 * n)) for i in range(n)] for n in COUNTS
        },
        "slots": {tag: slot(tag.encode()) for tag in ("0", "18e", "48576", "8459", "b509")},
        "keys": keys,
        "refused_keys": [
            {"key": "{crawl}:seen", "shards": 4, "why": "a '{' in the key"},
            {"key": "crawl", "shards": 0, "why": "shards from 1 to 1024"},
            {"key": "crawl", "shards": 1025, "why": "shards from 1 to 1024"},
        ],
        "capacities": capacities,
        "manifests": manifest_vectors(),
        "info": info_vectors(),
    }


def dump(value: Any, indent: str = "") -> str:
    """JSON, one line for a list or object of plain values, indented otherwise."""
    plain = not isinstance(value, (dict, list)) or all(
        not isinstance(v, (dict, list))
        for v in (value.values() if isinstance(value, dict) else value)
    )
    if plain:
        return json.dumps(value, ensure_ascii=True)
    inner = indent + " "
    if isinstance(value, list):
        return "[\n" + ",\n".join(inner + dump(v, inner) for v in value) + "\n" + indent + "]"
    rows = (f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items())
    return "{\n" + ",\n".join(rows) + "\n" + indent + "}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = dump(vectors()) + "\n"
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is not what scripts/sharding_vectors.py writes: run it", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
