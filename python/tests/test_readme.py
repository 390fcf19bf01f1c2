"""The README says what the package does: each Python block after an ``<!-- example: cluster -->``
line runs in a fresh interpreter against a real cluster (``REDIS_URL``), and each after an
``<!-- example: server -->`` line against one server, and prints what its comments say; the
install lines install from a checkout; the log lines, the errors and the paths it quotes are what a
real run logs, raises and finds."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from redis_bf import BloomFilter, KeyTypeError
from redis_bf.scrapy import RFPDupeFilter

from redis_cluster import RedisCluster
from redis_server import RedisServer

PYTHON_DIR = Path(__file__).resolve().parents[1]
ROOT = PYTHON_DIR.parent
README = PYTHON_DIR / "README.md"


def examples(kind: str) -> list[str]:
    text = README.read_text()
    pattern = rf"<!-- example: {kind} -->\n```python\n(.*?)```"
    return re.findall(pattern, text, flags=re.DOTALL)


def printed(code: str) -> list[str]:
    """What the block's comments say its prints print: a ``# ...`` line after a ``print(...)``
    line, or the comment at the end of one."""
    lines = code.splitlines()
    said = []
    for number, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        if "#" in line:
            said.append(line.split("#", 1)[1].strip())
        elif number + 1 < len(lines) and lines[number + 1].startswith("# "):
            said.append(lines[number + 1][2:].strip())
    return said


def test_the_cluster_examples_run_as_written(cluster: RedisCluster) -> None:
    blocks = examples("cluster")
    assert len(blocks) == 3  # BloomFilter, its asyncio twin, CuckooFilter
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "REDIS_URL": cluster.url},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == printed(code), code
    client = cluster.client()
    try:
        assert client.dbsize(target_nodes=client.PRIMARIES) == 0  # each example deletes its filter
    finally:
        client.close()


def test_the_server_examples_run_as_written(server: RedisServer) -> None:
    """Each Python block after an ``<!-- example: server -->`` line, run in a fresh interpreter
    against one server (its ``redis.Redis(port=6379)`` pointed at the test's), prints what its
    comments say and leaves nothing behind."""
    blocks = examples("server")
    assert len(blocks) == 2  # BloomFilter, CuckooFilter
    for code in blocks:
        assert code.count("redis.Redis(port=6379)") == 1, code
        done = subprocess.run(
            [sys.executable, "-c", code.replace("port=6379", f"port={server.port}")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == printed(code), code
    assert server.client().dbsize() == 0


def test_the_redisbloom_refusal_is_what_the_readme_quotes() -> None:
    """What a bounded CuckooFilter raises where RedisBloom answers its ``ERROR`` (test_cuckoo.py
    checks that it is raised), for a server at host:port."""
    from redis_bf._core import error_rate_unsupported

    client = redis.Redis(host="host", port="port")  # never connects
    message = error_rate_unsupported(client, "Unknown argument received")
    assert f"`{message}`" in " ".join(README.read_text().split())


def blocks(text: str) -> list[str]:
    """The README's fenced blocks, their text without the fences."""
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def block_with(text: str, needle: str) -> str:
    found = [block for block in blocks(text) if needle in block]
    assert len(found) == 1, f"{len(found)} blocks with {needle!r}"
    return found[0]


def test_the_install_lines_install_from_the_checkout(tmp_path: Path) -> None:
    """Each ``pip install`` line of the README, run from the root of a checkout (a copy of
    ``python/``), with no index: the package is on none. ``--dry-run`` builds the metadata and
    installs nothing."""
    lines = block_with(README.read_text(), "pip install ./python").splitlines()
    assert len(lines) == 2, lines
    shutil.copytree(
        PYTHON_DIR,
        tmp_path / "python",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build", "dist"),
    )
    extras = []
    for line in lines:
        command = line.split("#", 1)[0].split()
        assert command[:2] == ["pip", "install"] and len(command) == 3, line
        report = tmp_path / "report.json"
        done = subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
                "--no-build-isolation", "--quiet", "--report", str(report),
                command[2].strip("\"'"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, line + "\n" + done.stderr
        (install,) = json.loads(report.read_text())["install"]
        assert (install["metadata"]["name"], install["metadata"]["version"]) == (
            "redis-bf",
            "0.1.0",
        )
        extras.append(install.get("requested_extras") or [])
    assert extras == [[], ["scrapy"]]


def test_the_dupefilter_logs_what_the_readme_quotes(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A spider named site opens on a new filter with the defaults, schedules 4,997 requests, and
    a second one resumes with them: the two lines, as Scrapy logs them (without the time)."""
    quoted = block_with(README.read_text(), "Bloom filter dupefilter: created").splitlines()
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")

    def open_spider() -> RFPDupeFilter:
        crawler = get_crawler(Spider, {"REDIS_URL": server.url})
        return RFPDupeFilter.from_spider(Spider.from_crawler(crawler, name="site"))

    dupefilter = open_spider()
    for page in range(4997):
        assert dupefilter.request_seen(Request(f"http://site.example/page/{page}")) is False
    open_spider()
    logged = [f"[{r.name}] {r.levelname}: {r.getMessage()}" for r in caplog.records]
    assert logged == quoted


def test_the_cuckoo_dupefilter_logs_what_the_readme_quotes(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """As above, with BLOOMFILTER_KIND = "cuckoo"; and a spider of the other kind on that key
    stops with the error the README quotes."""
    quoted = block_with(README.read_text(), "Cuckoo filter dupefilter: created").splitlines()
    caplog.set_level(logging.INFO, logger="redis_bf.scrapy")

    def open_spider(**settings: object) -> RFPDupeFilter:
        crawler = get_crawler(Spider, {"REDIS_URL": server.url, **settings})
        return RFPDupeFilter.from_spider(Spider.from_crawler(crawler, name="site"))

    dupefilter = open_spider(BLOOMFILTER_KIND="cuckoo")
    for page in range(4997):
        assert dupefilter.request_seen(Request(f"http://site.example/page/{page}")) is False
    open_spider(BLOOMFILTER_KIND="cuckoo")
    logged = [f"[{r.name}] {r.levelname}: {r.getMessage()}" for r in caplog.records]
    assert logged == quoted
    dupefilter.clear()
    open_spider()  # a Bloom filter at the key, then a cuckoo dupefilter on it
    caplog.clear()
    assert isinstance(open_spider(BLOOMFILTER_KIND="cuckoo").refused, KeyTypeError)
    (shown,) = [f"[{r.name}] {r.levelname}: {r.getMessage()}" for r in caplog.records]
    assert block_with(README.read_text(), "holds a Bloom filter, not a cuckoo") == shown + "\n"


def test_a_set_at_the_key_logs_what_the_readme_quotes(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.client().sadd("site:dupefilter", "0" * 40)
    crawler = get_crawler(Spider, {"REDIS_URL": server.url})
    dupefilter = RFPDupeFilter.from_spider(Spider.from_crawler(crawler, name="site"))
    assert isinstance(dupefilter.refused, KeyTypeError)
    (logged,) = [f"[{r.name}] {r.levelname}: {r.getMessage()}" for r in caplog.records]
    # For REDIS_URL = "redis://localhost:6379" (the README's).
    shown = logged.replace(f"{server.url}/0", "redis://localhost:6379/0")
    assert block_with(README.read_text(), "holds a set, not a Bloom filter") == shown + "\n"


def test_the_not_replicated_error_is_what_the_readme_quotes() -> None:
    from redis_bf._core import Waited

    bf = BloomFilter(redis.Redis(port=6379), "k", 1000, 0.01, wait_for_replicas=1)
    with pytest.raises(Exception) as raised:
        bf._core.check_waits([Waited("127.0.0.1:6379", [True, 1, 0])], [False])
    error = raised.value
    shown = f"{type(error).__module__}.{type(error).__name__}: {error}"
    assert block_with(README.read_text(), "NotReplicatedError:") == shown + "\n"


def test_the_files_it_names_are_in_the_repository() -> None:
    """Paths such as python/tests/test_readme.py, named as "in the redis-bf repository"."""
    named = set(
        re.findall(
            r"(?<![\w/.-])((?:python|docs|scripts|tests|src)/[\w./-]*\w)", README.read_text()
        )
    )
    assert "python/tests/test_readme.py" in named
    assert {path for path in named if not (ROOT / path).exists()} == set()
