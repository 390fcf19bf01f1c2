"""Against a plain redis-server without the module (a packaged one on the default port, say),
every tool of the package says so in one line, names the server, and says how to get one with the
module: the BloomFilter and CuckooFilter classes, the dupefilter, migrate. Nothing is written to the
server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

from redis_bf import BloomFilter, CuckooFilter, ModuleMissingError  # noqa: E402
from redis_bf.scrapy import RFPDupeFilter  # noqa: E402

from redis_server import RedisServer  # noqa: E402

HOW = (
    "connect to the server that has it (`redis-bf-server` and `make run` print its port), or "
    'start one with `redis-bf-server`, or `redis-server --loadmodule "$(redis-bf-module-path)"`'
)


@pytest.fixture
def plain() -> Iterator[RedisServer]:
    instance = RedisServer("no-module", module=False).start()
    try:
        yield instance
    finally:
        instance.stop()


def message(server: RedisServer, command: str) -> str:
    return (
        f"the Redis server at 127.0.0.1:{server.port} has no Bloom filter module loaded (it "
        f"answered: unknown command '{command}', with args beginning with: "
    )


@pytest.mark.parametrize("protocol", [2, 3])
def test_every_call_of_a_filter_names_the_server_and_the_way_out(
    plain: RedisServer, protocol: int
) -> None:
    r = plain.client(protocol)
    bf = BloomFilter(r, "seen", 1000, 0.01)
    calls = {
        "BF.INSERT": lambda: bf.add("a"),
        "BF.EXISTS": lambda: "a" in bf,
        "BF.CARD": bf.count,
        "BF.INFO": bf.info,
        "BF.RESERVE": bf.create,
    }
    for command, call in calls.items():
        with pytest.raises(ModuleMissingError) as raised:
            call()
        text = str(raised.value)
        assert text.startswith(message(plain, command)), text
        assert text.endswith(HOW), text
        assert raised.value.address == f"127.0.0.1:{plain.port}"
    # Batches too, pipelined.
    for call, command in ((bf.add_many, "BF.INSERT"), (bf.contains_many, "BF.MEXISTS")):
        with pytest.raises(ModuleMissingError) as raised:
            call(["a", "b"])
        assert str(raised.value).startswith(message(plain, command)), str(raised.value)
    assert r.dbsize() == 0


@pytest.mark.parametrize("protocol", [2, 3])
def test_every_call_of_a_cuckoo_filter_says_it_too(plain: RedisServer, protocol: int) -> None:
    r = plain.client(protocol)
    cf = CuckooFilter(r, "seen", 1000)
    plain_kind = CuckooFilter(r, "plain", 1000, None)  # a reserve before its inserts
    calls = {
        "CF.INSERT": lambda: cf.add("a"),
        "CF.INSERTNX": lambda: cf.add_unique("a"),
        "CF.EXISTS": lambda: "a" in cf,
        "CF.DEL": lambda: cf.delete("a"),
        "CF.COUNT": lambda: cf.count("a"),
        "CF.INFO": cf.info,
        "CF.RESERVE": cf.create,
    }
    batches = {
        "CF.INSERT": lambda: cf.add_many(["a", "b"]),
        "CF.MEXISTS": lambda: cf.contains_many(["a", "b"]),
        "CF.DEL": lambda: cf.delete_many(["a", "b"]),
        "CF.RESERVE": lambda: plain_kind.add("a"),
    }
    for command, call in [*calls.items(), *batches.items()]:
        with pytest.raises(ModuleMissingError) as raised:
            call()
        text = str(raised.value)
        assert text.startswith(
            f"the Redis server at 127.0.0.1:{plain.port} has no cuckoo filter commands loaded "
            f"(it answered: unknown command '{command}', with args beginning with: "
        ), text
        assert text.endswith(HOW), text
    assert r.dbsize() == 0


def test_the_dupefilter_says_it_at_the_first_command(plain: RedisServer) -> None:
    with pytest.raises(ModuleMissingError) as raised:
        RFPDupeFilter(plain.client(), "shop:dupefilter").open()
    assert str(raised.value).startswith(message(plain, "BF.RESERVE"))


def test_migrate_says_it_in_one_line_before_building_anything(plain: RedisServer) -> None:
    client = plain.client()
    client.sadd("shop:dupefilter", "0" * 40)
    done = subprocess.run(
        [sys.executable, "-m", "redis_bf.migrate", "--url", plain.url, "shop:dupefilter"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: " + message(plain, "BF.CARD")), lines[0]
    assert lines[0].endswith(HOW)
    assert client.keys("*") == [b"shop:dupefilter"]


def test_another_error_is_left_as_it_is(plain: RedisServer) -> None:
    # An unknown command that is not ours is not blamed on the module.
    with pytest.raises(redis.ResponseError) as raised:
        plain.client().execute_command("NOSUCH.COMMAND")
    assert not isinstance(raised.value, ModuleMissingError)
