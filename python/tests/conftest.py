"""Fixtures: a redis-server with the module per test, a generated site per crawl test, a Redis
Cluster (three masters, three replicas, the module on each) for the tests that ask for one.

Run through ``scripts/python-tests.sh`` (``make test``), which builds the venv and installs the
package; the module comes from ``$REDIS_BF_MODULE`` (default ``target/release/libredis_bf.so``).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

import crawl as crawl_harness  # noqa: E402
from redis_cluster import RedisCluster  # noqa: E402
from redis_server import NEWER_SERVERS, RedisServer, default_binary  # noqa: E402
from website import Site  # noqa: E402

# A few hundred pages keep each crawl under ten seconds on two cores; the benchmark crawls 5,000.
PAGES = 240


# The servers a test parametrized over them runs on: redis-server on the PATH (Debian's Redis 7.0;
# $REDIS_BF_SERVER if set), and the newer ones of the repository's server matrix where `make test`
# unpacked them.
SERVERS: dict[str, str | Path] = {"redis-server": default_binary(), **NEWER_SERVERS}


def server_binary(request: pytest.FixtureRequest) -> str:
    """The binary of ``SERVERS[request.param]``; the test is skipped if it is not unpacked."""
    binary = SERVERS[request.param]
    if shutil.which(str(binary)) is None and not Path(binary).is_file():
        pytest.skip(f"{binary} is not unpacked (scripts/fetch-servers.sh, scripts/fetch-valkey.sh)")
    return str(binary)


def directory_name(request: pytest.FixtureRequest) -> str:
    """The test's name as a directory name, for its servers."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name)[:60]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    instance = RedisServer(directory_name(request)).start()
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[RedisCluster]:
    """Six nodes, their layout as redis-cli chose it; stopped (every node killed) in teardown."""
    instance = RedisCluster(directory_name(request)).start()
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def r(server: RedisServer, protocol: int) -> redis.Redis:
    return server.client(protocol)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site(PAGES) as instance:
        yield instance


def run_crawl(site: Site, server: RedisServer, **settings: Any) -> crawl_harness.Crawl:
    return crawl_harness.run(site.url, server.url, settings=settings)


def info(client: redis.Redis, key: str) -> dict[str, Any]:
    """BF.INFO as a dict with str names, in either protocol."""
    from redis_bf.bloom import info_dict

    return info_dict(client.execute_command("BF.INFO", key))


def layout(client: redis.Redis, key: str) -> bytes:
    """What ``BF.INFO key LAYOUT`` says (a one-element array in RESP2, a map in RESP3)."""
    reply = client.execute_command("BF.INFO", key, "LAYOUT")
    return bytes(next(iter(reply.values())) if isinstance(reply, dict) else reply[0])


def commandstats(client: redis.Redis) -> dict[str, int]:
    """Calls per command, names in lower case (module commands may register either way)."""
    return {
        name.lower().removeprefix("cmdstat_"): int(stats["calls"])
        for name, stats in client.info("commandstats").items()
    }
