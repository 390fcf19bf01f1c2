"""The sharding spec's test vectors (docs/sharding-vectors.json, written from docs/sharding.md by
scripts/sharding_vectors.py, which shares no code with the package), every one checked against
the package: item bytes, the item's shard in versions 2 and 1, hash tags and key names, each
shard's capacity, the manifests written and how a stored one is read, and merged info. No
server: what the package computes is what another client must compute."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from redis_bf import CuckooOptions, FilterMismatchError, FilterOptions, KeyTypeError
from redis_bf._core import Core, CuckooCore
from redis_bf._shards import (
    NEW_VERSION,
    item_bytes,
    manifest_text,
    parse_manifest,
    shard_capacity,
    shard_keys,
    shard_tag,
    shard_v1,
    shard_v2,
)

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "docs/sharding-vectors.json").read_text())
SHARDING = {1: shard_v1, 2: shard_v2}
BLOOM = {"capacity": 1000, "error_rate": 0.01, "window": None}


def python_item(spelled: dict[str, Any]) -> Any:
    """The Python value a vector spells: str, bytes (hex), int (decimal text), float (repr)."""
    ((kind, value),) = spelled.items()
    return {
        "str": lambda: value,
        "bytes_hex": lambda: bytes.fromhex(value),
        "int": lambda: int(value),
        "float": lambda: float(value),
        "bool": lambda: bool(value),
        "none": lambda: None,
    }[kind]()


def core(kind: str, asked: dict[str, Any], shards: int, key: str = "k") -> Core:
    """The core of a filter of ``kind`` given ``asked`` (a vector's arguments), sharded
    ``shards`` ways."""
    settings: dict[str, Any] = dict(
        shards=shards, batch_size=10, pipeline_size=2, wait_for_replicas=0, wait_timeout=1.0
    )
    if kind == "bloom":
        options = FilterOptions(asked["capacity"], asked["error_rate"], asked["window"])
        return Core(None, key, options, **settings)
    bucket_size = None if asked["error_rate"] is not None else asked["bucket_size"]
    cuckoo = CuckooOptions(
        asked["capacity"],
        asked["error_rate"],
        bucket_size=bucket_size,
        max_iterations=asked["max_iterations"],
        expansion=asked["expansion"],
    )
    return CuckooCore(None, key, cuckoo, **settings)


def test_the_vectors_are_what_the_spec_script_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/sharding_vectors.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("vector", VECTORS["items"], ids=lambda v: v["name"])
def test_an_items_bytes_and_shard(vector: dict[str, Any]) -> None:
    item = python_item(vector["python"])
    data = bytes.fromhex(vector["bytes_hex"])
    assert item_bytes(item) == data
    assert redis.Redis().get_encoder().encode(item) == data  # what redis-py sends
    prefix = bytes.fromhex(VECTORS["v2_prefix_hex"])
    assert hashlib.sha256(prefix + data).digest()[:8].hex() == vector["v2_hash_hex"]
    for version in (2, 1):
        for count, index in vector[f"v{version}"].items():
            assert SHARDING[version](data, int(count)) == index, (version, count)
            # A filter whose manifest says this version puts the item in that shard.
            bf = core("bloom", BLOOM, int(count), "crawl")
            identity = bf.options.identity()
            assert bf.version == NEW_VERSION  # before it reads a manifest: what it would write
            stored = manifest_text(version, "bloom", int(count), 1000, identity)
            assert bf.check_manifest(stored, claimed=False) is False
            assert bf.version == version
            assert bf.key_of(item) == bf.keys[index]


@pytest.mark.parametrize("vector", VECTORS["refused_items"]["python"], ids=lambda v: v["why"])
def test_a_refused_item(vector: dict[str, Any]) -> None:
    item = python_item(vector["value"])
    with pytest.raises((TypeError, UnicodeEncodeError)):
        item_bytes(item)
    sharded = core("bloom", BLOOM, 4)
    with pytest.raises((TypeError, UnicodeEncodeError)):
        sharded.key_of(item)


def test_tags_slots_and_key_names() -> None:
    for count, tags in VECTORS["shard_tags"].items():
        count = int(count)
        assert [shard_tag(index, count) for index in range(count)] == tags
        for index, tag in enumerate(tags):
            assert key_slot(tag.encode()) == (2 * index + 1) * 16384 // (2 * count)
    for tag, slot in VECTORS["slots"].items():
        assert key_slot(tag.encode()) == slot
    for vector in VECTORS["keys"]:
        assert list(shard_keys(vector["key"], vector["shards"])) == vector["keys"]
        assert list(core("bloom", BLOOM, vector["shards"], vector["key"]).keys) == vector["keys"]
    for vector in VECTORS["refused_keys"]:
        with pytest.raises(ValueError):
            shard_keys(vector["key"], vector["shards"])


def test_each_shards_capacity() -> None:
    for vector in VECTORS["capacities"]:
        capacity, count = vector["capacity"], vector["shards"]
        assert shard_capacity(capacity, count) == vector["bloom"]
        bloom = FilterOptions(capacity, 0.01).resized(shard_capacity(capacity, count))
        assert bloom.capacity == vector["bloom"]
        for cuckoo in vector["cuckoo"]:
            size = cuckoo["bucket_size"]
            # The filter's own options (at least two buckets), then its shard's.
            if size == 4:
                options = CuckooOptions(max(capacity, 8), 0.01)
            else:
                options = CuckooOptions(max(capacity, 2 * size), None, bucket_size=size)
            shard = options.resized(shard_capacity(capacity, count))
            assert (shard.capacity, shard.buckets()) == (cuckoo["capacity"], cuckoo["buckets"])


@pytest.mark.parametrize("vector", VECTORS["manifests"]["written"], ids=lambda v: v["text"][:60])
def test_a_manifest_written(vector: dict[str, Any]) -> None:
    asked = {"capacity": vector["capacity"], **vector["parameters"]}
    text = manifest_text(
        vector["version"],
        vector["kind"],
        vector["shards"],
        vector["capacity"],
        vector["parameters"],
    )
    assert text == vector["text"]
    made = core(vector["kind"], asked, vector["shards"])
    assert made.options.identity() == vector["parameters"]
    if vector["version"] == NEW_VERSION:
        assert made.manifest() == vector["text"]  # what a new filter writes at its key
    stored = parse_manifest(vector["text"])
    assert stored is not None and stored.version == vector["version"]
    assert stored.kind == vector["kind"] and stored.capacity == vector["capacity"]


@pytest.mark.parametrize("vector", VECTORS["manifests"]["read"], ids=lambda v: v["name"])
def test_a_manifest_read(vector: dict[str, Any]) -> None:
    asked = vector["asked"]
    made = core(asked["kind"], asked, asked["shards"])
    for text in (vector["text"], vector["text"].encode()):  # GET answers bytes or str
        if vector["outcome"] == "use":
            assert made.check_manifest(text, claimed=False) is False
            assert made.version == vector["version"]
            assert made.creation.capacity == vector["shard_capacity"]
            continue
        raised = {"FilterMismatchError": FilterMismatchError, "KeyTypeError": KeyTypeError}
        with pytest.raises(raised[vector["error"]]) as error:
            made.check_manifest(text, claimed=False)
        message = str(error.value)
        if vector["because"] == "kind":
            assert "is a cuckoo filter, not a Bloom filter" in message, message
        elif vector["because"] == "not a manifest":
            assert "not a sharded filter's parameters" in message, message
        else:
            for name in vector["because"].split(", "):
                assert name in message, message


@pytest.mark.parametrize("vector", VECTORS["info"], ids=lambda v: v["name"])
def test_info_over_the_shards(vector: dict[str, Any]) -> None:
    made = core(vector["kind"], vector["asked"], len(vector["shards"]))
    assert made.merge_info(vector["shards"]) == vector["merged"]
