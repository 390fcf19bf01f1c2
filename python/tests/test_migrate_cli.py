"""redis-bf-migrate's answer to every input it cannot use, through its entry point
(``redis_bf.migrate.main``, what the console script calls): one line on stderr, ``error: ...``,
never a traceback; exit status 2 for a command line that cannot be used, 1 for a failure (the
server, the key, the --urls file, Scrapy missing); nothing written to the server."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redis_bf import BloomFilter
from redis_bf.migrate import main

from conftest import directory_name
from redis_server import RedisServer

HELP = "(see redis-bf-migrate --help)"


@pytest.fixture(autouse=True)
def as_the_console_script(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usage line names the command as run: the console script's name here."""
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/redis-bf-migrate"])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The exit status and the one line on stderr; nothing on stdout."""
    status, out, err = run(capsys, *argv)
    assert out == "", out
    assert err.endswith("\n") and err.count("\n") == 1, err
    return status, err[:-1]


UNUSABLE = [
    ([], "the following arguments are required: key"),
    (["k", "extra"], "unrecognized arguments: extra"),
    (["--nope", "k"], "unrecognized arguments: --nope"),
    (["--capacity", "abc", "k"], "argument --capacity: 'abc': must be a whole number"),
    (["--capacity", "1.5", "k"], "argument --capacity: '1.5': must be a whole number"),
    (["--capacity", "0", "k"], "argument --capacity: 0: must be at least 1"),
    (["--capacity=-3", "k"], "argument --capacity: -3: must be at least 1"),
    (["--capacity"], "argument --capacity: expected one argument"),
    (["--error-rate", "x", "k"], "argument --error-rate: 'x': must be a number"),
    (["--error-rate", "0", "k"], "argument --error-rate: 0: must be strictly between 0 and 1"),
    (["--error-rate", "1", "k"], "argument --error-rate: 1: must be strictly between 0 and 1"),
    (["--error-rate", "1.5", "k"], "argument --error-rate: 1.5: must be strictly between 0 and 1"),
    (["--error-rate=-0.1", "k"], "argument --error-rate: -0.1: must be strictly between 0 and 1"),
    (["--error-rate", "nan", "k"], "argument --error-rate: nan: must be strictly between 0 and 1"),
    (["--error-rate", "inf", "k"], "argument --error-rate: inf: must be strictly between 0 and 1"),
    (["--window", "week", "k"], "argument --window: 'week': must be whole seconds"),
    (["--window", "1.5", "k"], "argument --window: '1.5': must be whole seconds"),
    (
        ["--window=-5", "k"],
        "argument --window: -5: must be from 1 to 315576000 seconds (ten years), or 0 for none",
    ),
    (
        ["--window", "315576001", "k"],
        "argument --window: 315576001: must be from 1 to 315576000 seconds (ten years), or 0 "
        "for none",
    ),
    (["--kind", "quotient", "k"], "argument --kind: 'quotient': must be bloom or cuckoo"),
    (
        ["--kind", "cuckoo", "--window", "60", "k"],
        "--window goes with --kind bloom: a cuckoo filter has no window",
    ),
    (
        ["--kind", "cuckoo", "--error-rate", "1e-13", "k"],
        "argument --error-rate: 1e-13: a cuckoo filter's must be at least 1e-12",
    ),
    (["--batch", "0", "k"], "argument --batch: 0: must be at least 1"),
    (["--batch=-1", "k"], "argument --batch: -1: must be at least 1"),
    (["--batch", "many", "k"], "argument --batch: 'many': must be a whole number"),
    (
        ["--progress-interval", "soon", "k"],
        "argument --progress-interval: 'soon': must be a number of seconds",
    ),
    (
        ["--progress-interval=-1", "k"],
        "argument --progress-interval: -1: must be 0 or more seconds",
    ),
    (
        ["--progress-interval", "nan", "k"],
        "argument --progress-interval: nan: must be 0 or more seconds",
    ),
    (
        ["--progress-interval", "inf", "k"],
        "argument --progress-interval: inf: must be 0 or more seconds",
    ),
    (
        ["--urls", "f.txt", "--keep-set", "k"],
        "--keep-set goes with a set's migration, not with --urls",
    ),
    (
        ["--urls", "f.txt", "--progress-interval", "0", "k"],
        "--progress-interval goes with a set's migration, not with --urls",
    ),
    (
        ["--url", "localhost:6390", "k"],
        "argument --url: Redis URL must specify one of the following schemes (redis://, rediss://, "
        "unix://)",
    ),
    (
        ["--url", "", "k"],
        "argument --url: Redis URL must specify one of the following schemes (redis://, rediss://, "
        "unix://)",
    ),
    (
        ["--url", "http://127.0.0.1:1", "k"],
        "argument --url: Redis URL must specify one of the following schemes (redis://, rediss://, "
        "unix://)",
    ),
    (
        ["--url", "redis://127.0.0.1:port", "k"],
        "argument --url: Port could not be cast to integer value as 'port'",
    ),
    (["--url", "redis://127.0.0.1:99999", "k"], "argument --url: Port out of range 0-65535"),
    (["--url", "redis://[::1", "k"], "argument --url: Invalid IPv6 URL"),
    (
        ["--url", "redis://127.0.0.1:1/abc", "k"],
        "argument --url: the database in its path must be a number, not 'abc'",
    ),
    (
        ["--url", "redis://127.0.0.1:1/0?db=x", "k"],
        "argument --url: Invalid value for 'db' in connection URL.",
    ),
    (
        ["--url", "redis://127.0.0.1:1?socket_timeout=abc", "k"],
        "argument --url: Invalid value for 'socket_timeout' in connection URL.",
    ),
    (
        ["--url", "redis://127.0.0.1:1?colour=blue", "k"],
        "argument --url: unknown parameter 'colour'",
    ),
    (
        ["--url", "redis://127.0.0.1:1?protocol=4", "k"],
        "argument --url: protocol must be either 2 or 3",
    ),
]


@pytest.mark.parametrize(("argv", "message"), UNUSABLE, ids=[" ".join(a) for a, _ in UNUSABLE])
def test_a_command_line_that_cannot_be_used(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert one_line(capsys, *argv) == (2, f"error: {message} {HELP}")


def test_a_server_that_cannot_be_reached(capsys: pytest.CaptureFixture[str]) -> None:
    # Port 1: nothing listens there.
    assert one_line(capsys, "--url", "redis://127.0.0.1:1", "k") == (
        1,
        "error: cannot talk to the server of --url: Error 111 connecting to 127.0.0.1:1. "
        "Connection refused.",
    )
    assert one_line(capsys, "--url", "unix:///nonexistent/redis.sock", "k") == (
        1,
        "error: cannot talk to the server of --url: Error 2 connecting to "
        "/nonexistent/redis.sock. No such file or directory.",
    )


@pytest.fixture
def guarded(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    """A server with a password (and a user that may only PING)."""
    instance = RedisServer(directory_name(request)).start()
    try:
        with instance.client() as client:
            client.execute_command("ACL", "SETUSER", "pinger", "on", ">pw", "+ping", "~*")
            client.config_set("requirepass", "secret")
        yield instance
    finally:
        instance.stop()


def test_credentials_and_permissions(
    capsys: pytest.CaptureFixture[str], guarded: RedisServer
) -> None:
    port = guarded.port
    refused = (
        "error: the server refused the credentials of --url (redis://user:password@host:port/db "
        "gives them): "
    )
    assert one_line(capsys, "--url", f"redis://127.0.0.1:{port}", "k") == (
        1,
        refused + "HELLO must be called with the client already authenticated, otherwise the "
        "HELLO AUTH <user> <pass> option can be used to authenticate the client and select the "
        "RESP protocol version at the same time",
    )
    assert one_line(capsys, "--url", f"redis://:wrong@127.0.0.1:{port}", "k") == (
        1,
        refused + "invalid username-password pair or user is disabled.",
    )
    assert one_line(capsys, "--url", f"redis://:secret@127.0.0.1:{port}/99", "k") == (
        1,
        "error: ResponseError: DB index is out of range",
    )
    assert one_line(capsys, "--url", f"redis://pinger:pw@127.0.0.1:{port}", "k") == (
        1,
        "error: NoPermissionError: this user has no permissions to run the 'type' command",
    )


def test_keys_that_hold_no_set(capsys: pytest.CaptureFixture[str], server: RedisServer) -> None:
    r = server.client()
    url = ("--url", server.url)
    assert one_line(capsys, *url, "nothing:dupefilter") == (
        1,
        "error: nothing:dupefilter does not exist: nothing to migrate (the dupefilter key is "
        "SCHEDULER_DUPEFILTER_KEY, by default <spider>:dupefilter)",
    )
    r.rpush("a:list", "x")
    r.hset("a:hash", "f", "v")
    r.zadd("a:zset", {"x": 1})
    r.xadd("a:stream", {"f": "v"})
    for key, kind in (
        ("a:list", "list"),
        ("a:hash", "hash"),
        ("a:zset", "zset"),
        ("a:stream", "stream"),
    ):
        assert one_line(capsys, *url, key) == (
            1,
            f"error: {key} holds a {kind}, not a scrapy-redis set: nothing to migrate",
        )
    r.setbit("shop:bloomfilter", (1 << 20) - 1, 1)
    assert one_line(capsys, *url, "shop:bloomfilter") == (
        1,
        "error: shop:bloomfilter is a string of 131,072 bytes, the bit array of a client-side "
        "Bloom filter such as scrapy-redis-bloomfilter's: it cannot be converted (its bits come "
        "from that package's own hashing, and a Bloom filter cannot list what it holds); finish "
        "that crawl with it, or start redis_bf.scrapy.RFPDupeFilter on a key of its own, loaded "
        "first with --urls FILE if you know the URLs fetched so far",
    )
    # A filter already, one key or sharded: nothing to do, and no error.
    BloomFilter(r, "sharded", 1000, 0.01, shards=4).add("x")
    assert run(capsys, *url, "sharded") == (
        0,
        "sharded is already a Bloom filter, sharded over 4 keys: nothing to do\n",
        "",
    )
    r.sadd("a:set", "0" * 40)
    r.sadd("{a:set}:scrapy-redis-set", "kept")
    assert one_line(capsys, *url, "--keep-set", "a:set") == (
        1,
        "error: {a:set}:scrapy-redis-set exists: delete or rename it first (--keep-set moves the "
        "set there)",
    )
    assert r.type("a:set") == b"set"


def test_the_urls_file(
    capsys: pytest.CaptureFixture[str], server: RedisServer, tmp_path: Path
) -> None:
    r = server.client()
    url = ("--url", server.url)
    missing = tmp_path / "missing.txt"
    assert one_line(capsys, *url, "--urls", str(missing), "new") == (
        1,
        f"error: cannot read --urls {missing}: No such file or directory",
    )
    assert one_line(capsys, *url, "--urls", str(tmp_path), "new") == (
        1,
        f"error: cannot read --urls {tmp_path}: Is a directory",
    )
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"http://shop.example/a\nhttp://shop.example/caf\xe9\n")
    assert one_line(capsys, *url, "--urls", str(latin), "new") == (
        1,
        f"error: line 2 of --urls {latin} is not UTF-8 text (unexpected end of data at byte 24): "
        "nothing was loaded",
    )
    listing = tmp_path / "fetched.txt"
    listing.write_text("http://shop.example/a\nshop.example/no-scheme\n")
    assert one_line(capsys, *url, "--urls", str(listing), "new") == (
        1,
        "error: line 2 is not a URL ('shop.example/no-scheme': Missing scheme in request url: "
        "shop.example/no-scheme): nothing was loaded",
    )
    assert r.keys("*") == []
    listing.write_text("http://shop.example/a\n")
    r.sadd("shop:dupefilter", "0" * 40)
    assert one_line(capsys, *url, "--urls", str(listing), "shop:dupefilter") == (
        1,
        "error: shop:dupefilter holds a set, not a Bloom filter: convert it first "
        "(redis-bf-migrate shop:dupefilter), then load the URLs",
    )
    r.rpush("shop:requests", "x")
    assert one_line(capsys, *url, "--urls", str(listing), "shop:requests") == (
        1,
        "error: shop:requests holds a list, not a Bloom filter: give another key, or delete it",
    )
    BloomFilter(r, "sharded", 1000, 0.01, shards=4).add("x")
    assert one_line(capsys, *url, "--urls", str(listing), "sharded") == (
        1,
        "error: sharded is a Bloom filter sharded over 4 keys: --urls loads one-key filters only "
        "(load it with redis_bf.BloomFilter(..., shards=4).add_many)",
    )
    shard = BloomFilter(r, "sharded", 1, 0.5, shards=4)._core.key_of("x").encode()
    assert set(r.keys("*")) == {b"shop:dupefilter", b"shop:requests", b"sharded", shard}
    # The good file loads, --batch at a time, and --window 0 is no window.
    assert run(capsys, *url, "--urls", str(listing), "--batch", "1", "--window", "0", "new") == (
        0,
        "new: 1 URLs loaded, 1 of them new to the filter\n",
        "",
    )
    assert "Window" not in BloomFilter(r, "new", 1, 0.5).info()


@pytest.mark.parametrize("missing", ["scrapy", "scrapy_redis"])
def test_urls_without_scrapy(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    server: RedisServer,
    tmp_path: Path,
    missing: str,
) -> None:
    """As without the extra installed: importing the package named fails."""
    monkeypatch.setitem(sys.modules, missing, None)  # import fails as if not installed
    monkeypatch.delitem(sys.modules, "redis_bf.scrapy", raising=False)
    listing = tmp_path / "fetched.txt"
    listing.write_text("http://shop.example/a\n")
    assert one_line(capsys, "--url", server.url, "--urls", str(listing), "new") == (
        1,
        "error: --urls needs Scrapy and scrapy-redis (the fingerprints are scrapy-redis's), and "
        f"{missing} is not installed: install them (pip install scrapy scrapy-redis)",
    )
    assert server.client().keys("*") == []


def test_numbers_the_server_refuses(
    capsys: pytest.CaptureFixture[str], server: RedisServer
) -> None:
    """Values the command line takes but the module refuses for the new filter: one line each,
    and the set stays as it was, with nothing built beside it."""
    r = server.client()
    r.sadd("shop:dupefilter", *(f"{n:040x}" for n in range(50)))
    status, out, err = run(
        capsys, "--url", server.url, "--capacity", "99999999999999999999", "shop:dupefilter"
    )
    assert (status, err) == (
        1,
        "error: ResponseError: bad capacity: must be a whole number from 1 to "
        "9223372036854775807\n",
    )
    status, out, err = run(
        capsys, "--url", server.url, "--capacity", "9000000000000", "shop:dupefilter"
    )
    assert status == 1
    assert re.fullmatch(
        r"error: ResponseError: filter would use \d+ bytes, over bf.max-filter-bytes "
        r"\(1073741824\); if it is meant to be that big: CONFIG SET bf.max-filter-bytes \d+gb\n",
        err,
    ), err
    assert out.startswith("shop:dupefilter: a scrapy-redis set of 50 fingerprints")
    assert r.keys("*") == [b"shop:dupefilter"]
    assert r.type("shop:dupefilter") == b"set"
