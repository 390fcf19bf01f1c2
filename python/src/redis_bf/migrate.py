"""Convert a crawl's scrapy-redis fingerprint set into a redis-bf Bloom filter, under the same key
(or, with ``--kind cuckoo``, into a cuckoo filter, for ``BLOOMFILTER_KIND = "cuckoo"``).

    python -m redis_bf.migrate [--url redis://host:6379/0] [--kind cuckoo] myspider:dupefilter

The set's members are scrapy-redis request fingerprints, the same strings ``redis_bf.scrapy``
adds, so the crawl resumes with everything it had seen. How it goes:

1. The filter is built beside the set, at ``{key}:redis-bf-migrating`` (same cluster slot), with
   ``SSCAN`` and ``BF.INSERT ... NOCREATE ITEMS`` in batches, one round trip per batch, printing
   its progress (a cuckoo filter: ``CF.INSERTNX``, so that a member the scan returns twice, or a
   second pass sends again, is held once, and forgetting it later forgets it).
2. One Lua script swaps it in, atomically: only if the set still has as many members as when the
   copy started (scrapy-redis only ever adds to it), the set is freed with ``UNLINK`` (in the
   background), or with ``--keep-set`` renamed to ``{key}:scrapy-redis-set`` (refused if that key
   exists), and the filter takes its key. If spiders added fingerprints meanwhile, the copy runs
   again (the filter keeps what it has), up to three times, then gives up and asks for the
   spiders to be stopped.

Stop the spiders first (with ``SCHEDULER_PERSIST = True`` the request queue stays in Redis), run
this, set ``DUPEFILTER_CLASS = "redis_bf.scrapy.RFPDupeFilter"``, start them again: a spider still
running with the set dupefilter would get ``WRONGTYPE`` errors once the key holds a filter.

A string key (the bit array of a client-side filter such as scrapy-redis-bloomfilter) cannot be
converted: see ``BIT_STRING_ADVICE``. ``--urls FILE`` instead loads the fingerprints of known URLs.

Every failure, bad arguments included, is one line on stderr, ``error: ...``, and the exit status:
2 for a command line that cannot be used (an option's value, a malformed ``--url``, options that do
not go together), 1 for anything else (the server, the key, the ``--urls`` file, Scrapy missing).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn, TextIO
from urllib.parse import urlsplit

import redis
from redis.exceptions import RedisError, ResponseError

from ._core import (
    CUCKOO_MIN_ERROR,
    MANIFEST_FORMAT,
    MAX_WINDOW,
    CuckooOptions,
    cuckoo_added_unique,
)
from .bloom import (
    CUCKOO_TYPE,
    FILTER_TYPE,
    BloomFilter,
    BloomFilterError,
    FilterOptions,
    KeyTypeError,
    ModuleMissingError,
    as_bool,
    as_bools,
    decode,
    info_dict,
    require_module,
)
from .cuckoo import CuckooFilter
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE

TEMP_SUFFIX = ":redis-bf-migrating"
NEXT_CLASS = "redis_bf.scrapy.RFPDupeFilter"
# --kind: what each filter is called, what TYPE answers for it, and its insert.
KIND_NAMES = {"bloom": "Bloom filter", "cuckoo": "cuckoo filter"}
KIND_TYPES = {"bloom": FILTER_TYPE, "cuckoo": CUCKOO_TYPE}
BACKUP_SUFFIX = ":scrapy-redis-set"

# One line, as every error of the command; the package README ("From scrapy-redis-bloomfilter:
# not convertible") and --help say more.
BIT_STRING_ADVICE = (
    "{key} is a string of {size:,} bytes, the bit array of a client-side Bloom filter such as "
    "scrapy-redis-bloomfilter's: it cannot be converted (its bits come from that package's own "
    "hashing, and a Bloom filter cannot list what it holds); finish that crawl with it, or start "
    "redis_bf.scrapy.RFPDupeFilter on a key of its own, loaded first with --urls FILE if you "
    "know the URLs fetched so far"
)
SCRAPY_NEEDED = (
    "--urls needs Scrapy and scrapy-redis (the fingerprints are scrapy-redis's), and {missing}: "
    "install them (pip install scrapy scrapy-redis)"
)

# KEYS: the set, the filter built beside it, the name the set moves to with --keep-set.
# ARGV: the set's member count when the copy started, the filter's type, 'keep' or 'free'.
SWAP_SCRIPT = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'set' then
  return redis.error_reply('ERR ' .. KEYS[1] .. ' is no longer a set (' .. kind .. ')')
end
if redis.call('TYPE', KEYS[2])['ok'] ~= ARGV[2] then
  return redis.error_reply('ERR the filter being built at ' .. KEYS[2] .. ' is gone')
end
if redis.call('SCARD', KEYS[1]) ~= tonumber(ARGV[1]) then
  return 0
end
if ARGV[3] == 'keep' then
  if redis.call('EXISTS', KEYS[3]) == 1 then
    return redis.error_reply('ERR ' .. KEYS[3] .. ' exists: the set cannot be kept there')
  end
  redis.call('RENAME', KEYS[1], KEYS[3])
else
  redis.call('UNLINK', KEYS[1])
end
redis.call('RENAME', KEYS[2], KEYS[1])
return 1
"""


class MigrationError(Exception):
    """The key cannot be migrated; the message says why and what to do."""


def other_kind_advice(key: str, found: str, kind: str) -> str:
    """The error for a key that holds a filter of the other kind than ``--kind`` asks."""
    return (
        f"{key} is a {KIND_NAMES[found]}, not a {KIND_NAMES[kind]}: a filter cannot become the "
        "other kind (neither can list what it holds); resume the crawl with it "
        f'(BLOOMFILTER_KIND = "{found}"), or start a {KIND_NAMES[kind]} on a key of its own, '
        "loaded first with --urls FILE if you know the URLs fetched so far"
    )


def sharded_parameters(client: redis.Redis, key: str) -> dict[str, Any] | None:
    """The parameters a sharded ``BloomFilter`` keeps at its key (a short JSON string), or None
    if ``key`` holds anything else."""
    if str(decode(client.type(key))) != "string" or int(client.strlen(key)) > 4096:
        return None
    try:
        stored = json.loads(decode(client.get(key)))
    except (TypeError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(stored, dict) and stored.get("format") == MANIFEST_FORMAT:
        return stored
    return None


@dataclass
class Migration:
    """What a migration did."""

    key: str
    fingerprints: int  # members of the set when it was swapped out
    sent: int  # members sent to the filter (SSCAN may return one twice), over all passes
    new: int  # of those, counted new by the filter
    passes: int
    seconds: float
    info: dict[str, Any]  # BF.INFO (CF.INFO) of the filter now at key
    set_bytes: int | None  # MEMORY USAGE of the set, before (sampled)
    kept_set: str | None  # where the set is, with keep_set


def sibling_key(key: str, suffix: str) -> str:
    """A key next to ``key`` in the same cluster slot (RENAME and scripts need one slot).

    A key with a hash tag keeps it; otherwise the whole key becomes the tag. (A key with a ``}``
    but no tag cannot be matched this way and gets a plain suffix: fine outside a cluster.)
    """
    start = key.find("{")
    if start != -1 and key.find("}", start + 1) > start + 1:
        return key + suffix
    if "}" in key:
        return key + suffix
    return "{" + key + "}" + suffix


class Progress:
    """Progress lines, at most one per ``interval`` seconds (0: one per batch)."""

    def __init__(self, report: Callable[[str], None], interval: float):
        self.report = report
        self.interval = interval
        self.started = time.monotonic()
        self.last = float("-inf")

    def batch(self, sent: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        share = min(100.0, 100.0 * sent / total) if total else 100.0
        rate = sent / max(now - self.started, 1e-6)
        self.report(f"  {sent:,} of {total:,} fingerprints copied ({share:.0f}%), {rate:,.0f}/s")


def migrate_set(
    client: redis.Redis,
    key: str,
    options: FilterOptions | None = None,
    *,
    batch_size: int = 1000,
    keep_set: bool = False,
    max_passes: int = 3,
    report: Callable[[str], None] = print,
    progress_interval: float = 1.0,
    kind: str = "bloom",
) -> Migration | None:
    """Replaces the scrapy-redis set at ``key`` by a Bloom filter (``kind="cuckoo"``: a cuckoo
    filter, of ``options``' capacity and error rate, no window) holding its members.

    Returns None if ``key`` already holds a filter of that kind (nothing to do). Raises
    ``MigrationError`` if it holds anything but a set (a filter of the other kind included), or
    if the set kept changing.
    """
    options = options or FilterOptions(DEFAULT_CAPACITY, DEFAULT_ERROR_RATE)
    if batch_size < 1:
        raise MigrationError(f"a batch of {batch_size} members: it must be at least 1")
    if kind not in KIND_NAMES:
        raise MigrationError(f"a kind of filter {kind!r}: it must be bloom or cuckoo")
    if kind == "cuckoo" and options.window is not None:
        raise MigrationError("a cuckoo filter has no window: --window goes with --kind bloom")
    name = KIND_NAMES[kind]
    key_type = str(decode(client.type(key)))
    for other, other_type in KIND_TYPES.items():
        if key_type == other_type and other != kind:
            raise MigrationError(other_kind_advice(key, other, kind))
    if key_type == KIND_TYPES["cuckoo"]:
        report(f"{key} is already a cuckoo filter: nothing to do")
        return None
    if key_type == FILTER_TYPE:
        report(f"{key} is already a Bloom filter: nothing to do")
        existing = info_dict(client.execute_command("BF.INFO", key)).get("Window")
        if options.window is not None and existing != options.window:
            report(
                f"warning: it has {f'a window of {existing} s' if existing else 'no window'}, "
                f"not the {options.window} s asked for: it stays as it is (delete it to start "
                "afresh)"
            )
        return None
    if key_type == "none":
        raise MigrationError(
            f"{key} does not exist: nothing to migrate (the dupefilter key is "
            "SCHEDULER_DUPEFILTER_KEY, by default <spider>:dupefilter)"
        )
    if key_type == "string":
        sharded = sharded_parameters(client, key)
        if sharded is not None:
            found = str(sharded.get("kind") or "bloom")
            if found != kind and found in KIND_NAMES:
                raise MigrationError(other_kind_advice(key, found, kind))
            report(
                f"{key} is already a {name}, sharded over {sharded.get('shards')} keys: "
                "nothing to do"
            )
            return None
        raise MigrationError(BIT_STRING_ADVICE.format(key=key, size=client.strlen(key)))
    if key_type != "set":
        raise MigrationError(
            f"{key} holds a {key_type}, not a scrapy-redis set: nothing to migrate"
        )

    temp = sibling_key(key, TEMP_SUFFIX)
    backup = sibling_key(key, BACKUP_SUFFIX)
    if keep_set and client.exists(backup):
        raise MigrationError(
            f"{backup} exists: delete or rename it first (--keep-set moves the set there)"
        )
    if client.delete(temp):
        report(f"removed {temp}, left over from an interrupted migration")

    total = int(client.scard(key))
    set_bytes = client.memory_usage(key)
    capacity = max(options.capacity, total)
    report(
        f"{key}: a scrapy-redis set of {total:,} fingerprints"
        + (f" (about {set_bytes:,} bytes)" if set_bytes else "")
    )
    report(
        f"building a {name} at {temp} (capacity {capacity:,}, "
        f"error rate {options.error_rate:g}"
        + (f", window {options.window} s" if options.window else "")
        + ")"
    )
    if kind == "cuckoo":
        reserve = ["CF.RESERVE", temp, *CuckooOptions(capacity, options.error_rate).reserve_args()]
    else:
        # With a window, every fingerprint starts its window now (a set has no times).
        reserve = ["BF.RESERVE", temp, *replace(options, capacity=capacity).reserve_args()]
    client.execute_command(*reserve)

    started = time.monotonic()
    sent = new = 0
    swap = client.register_script(SWAP_SCRIPT)
    for attempt in range(1, max_passes + 1):
        progress = Progress(report, progress_interval)
        pass_sent, pass_new = copy_members(client, key, temp, batch_size, total, progress, kind)
        sent, new = sent + pass_sent, new + pass_new
        try:
            swapped = swap(
                keys=[key, temp, backup],
                args=[total, KIND_TYPES[kind], "keep" if keep_set else "free"],
            )
        except ResponseError as error:
            client.delete(temp)
            raise MigrationError(f"cannot swap the filter in: {error}") from None
        if swapped:
            break
        now = int(client.scard(key))
        if attempt == max_passes:
            client.delete(temp)
            raise MigrationError(
                f"{key} kept changing during {max_passes} copies ({total:,} -> {now:,} "
                "fingerprints): stop the spiders (with SCHEDULER_PERSIST = True the queue is "
                "kept) and run this again"
            )
        report(
            f"the set changed during the copy ({total:,} -> {now:,} fingerprints): "
            "spiders are still adding; copying again"
        )
        total = now
    seconds = time.monotonic() - started

    report(
        f"copied {sent:,} fingerprints in {seconds:.1f} s"
        + (f" ({attempt} passes)" if attempt > 1 else "")
        + f"; the filter counted {new:,} of them new"
    )
    where = f"the set is kept at {backup}" if keep_set else "the set was freed (UNLINK)"
    if kind == "cuckoo":
        info = CuckooFilter(client, key, capacity, options.error_rate).info()
    else:
        info = BloomFilter(client, key, options.capacity, options.error_rate).info()
    report(
        f"swapped: {key} is now a {name} ({info['Number of items inserted']:,} items, "
        f"{info['Size']:,} bytes); {where}"
    )
    return Migration(
        key=key,
        fingerprints=total,
        sent=sent,
        new=new,
        passes=attempt,
        seconds=seconds,
        info=info,
        set_bytes=set_bytes,
        kept_set=backup if keep_set else None,
    )


def copy_members(
    client: redis.Redis,
    key: str,
    temp: str,
    batch_size: int,
    total: int,
    progress: Progress,
    kind: str = "bloom",
) -> tuple[int, int]:
    """One SSCAN pass over the set into the filter at ``temp``: (members sent, counted new).

    Each round trip carries the previous batch's ``BF.INSERT`` (a cuckoo filter's
    ``CF.INSERTNX``: each member once) and the next ``SSCAN``. ``NOCREATE``: if the filter
    vanished, fail rather than create one with the server defaults.
    """
    insert = "CF.INSERTNX" if kind == "cuckoo" else "BF.INSERT"
    answer = cuckoo_added_unique if kind == "cuckoo" else as_bool
    sent = new = 0
    cursor: int | None = 0  # None once the scan is complete
    pending: list[Any] = []
    while cursor is not None or pending:
        pipe = client.pipeline(transaction=False)
        if pending:
            pipe.execute_command(insert, temp, "NOCREATE", "ITEMS", *pending)
        if cursor is not None:
            pipe.sscan(key, cursor, count=batch_size)
        replies = pipe.execute(raise_on_error=False)
        if pending:
            if isinstance(replies[0], ResponseError):
                raise MigrationError(f"{insert} into {temp} failed: {replies[0]}")
            try:
                new += sum(as_bools(replies[0], 0, answer))
            except BloomFilterError as error:
                raise MigrationError(f"{insert} into {temp} failed: {error}") from None
            sent += len(pending)
            progress.batch(sent, total)
        pending = []
        if cursor is not None:
            reply = replies[-1]
            if isinstance(reply, ResponseError):
                raise MigrationError(f"SSCAN {key} failed: {reply}")
            next_cursor, members = reply
            cursor = int(next_cursor) or None
            pending = list(members)
    return sent, new


def load_urls(
    client: redis.Redis,
    key: str,
    urls: Iterable[str],
    options: FilterOptions | None = None,
    *,
    report: Callable[[str], None] = print,
    batch_size: int = 1000,
    kind: str = "bloom",
) -> int:
    """Adds the scrapy-redis fingerprints of GET requests for ``urls`` to the filter at ``key``
    (created with ``options`` if missing; a cuckoo filter with ``kind="cuckoo"``, each
    fingerprint added once), ``batch_size`` to a command; returns how many were new. Needs Scrapy
    and scrapy-redis (the fingerprints are theirs): ``MigrationError`` if either is missing.

    Every line is read and checked first: a line that is not a URL (blank lines and lines
    starting with ``#`` are skipped) raises ``MigrationError`` naming it, and nothing is loaded.
    A key that holds something else than a filter raises ``MigrationError`` too.
    """
    try:
        from scrapy import Request

        from .scrapy import RFPDupeFilter
    except ImportError as error:
        missing = f"{error.name} is not installed" if error.name else str(error)
        raise MigrationError(SCRAPY_NEEDED.format(missing=missing)) from None

    options = options or FilterOptions(DEFAULT_CAPACITY, DEFAULT_ERROR_RATE)
    dupefilter = RFPDupeFilter(
        client,
        key,
        capacity=options.capacity,
        error_rate=options.error_rate,
        window=options.window,
        kind=kind,
    )
    fingerprints: list[str] = []
    for number, line in enumerate(urls, start=1):
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        try:
            fingerprints.append(dupefilter.request_fingerprint(Request(url)))
        except ValueError as error:
            raise MigrationError(
                f"line {number} is not a URL ({url[:80]!r}: {error}): nothing was loaded"
            ) from None
    # Only now, with every line read: the filter is created if missing.
    name = KIND_NAMES[kind]
    sharded = sharded_parameters(client, key)
    if sharded is not None:
        found = KIND_NAMES.get(str(sharded.get("kind") or "bloom"), "filter")
        cls = "CuckooFilter" if found == KIND_NAMES["cuckoo"] else "BloomFilter"
        raise MigrationError(
            f"{key} is a {found} sharded over {sharded.get('shards')} keys: --urls loads "
            f"one-key filters only (load it with redis_bf.{cls}(..., "
            f"shards={sharded.get('shards')}).add_many)"
        )
    key_type = str(decode(client.type(key)))
    for other, other_type in KIND_TYPES.items():
        if key_type == other_type and other != kind:
            raise MigrationError(other_kind_advice(key, other, kind))
    if key_type not in (KIND_TYPES[kind], "none"):
        option = " --kind cuckoo" if kind == "cuckoo" else ""
        hint = (
            f"convert it first ({program_name()}{option} {key}), then load the URLs"
            if key_type == "set"
            else "give another key, or delete it"
        )
        raise MigrationError(f"{key} holds a {key_type}, not a {name}: {hint}")
    dupefilter.open()  # creates the filter if missing, says so in the log (and a window's mismatch)
    loader: BloomFilter | CuckooFilter
    if kind == "cuckoo":
        loader = CuckooFilter(
            client, key, options.capacity, options.error_rate, batch_size=batch_size
        )
        answers = loader.add_many(fingerprints, unique=True)
    else:
        loader = BloomFilter(
            client, key, options.capacity, options.error_rate, window=options.window,
            batch_size=batch_size,
        )  # fmt: skip
        answers = loader.add_many(fingerprints)
    report(f"{key}: {len(answers):,} URLs loaded, {sum(answers):,} of them new to the filter")
    return sum(answers)


def positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def error_rate_arg(text: str) -> float:
    """A false-positive rate: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text}: must be strictly between 0 and 1")
    return value


def window_arg(text: str) -> int | None:
    """A window in whole seconds, 0 for none."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be whole seconds") from None
    if not 0 <= value <= MAX_WINDOW:
        raise argparse.ArgumentTypeError(
            f"{value}: must be from 1 to {MAX_WINDOW} seconds (ten years), or 0 for none"
        )
    return value or None


def kind_arg(text: str) -> str:
    """A kind of filter: bloom or cuckoo."""
    kind = text.strip().lower()
    if kind not in KIND_NAMES:
        raise argparse.ArgumentTypeError(f"{text!r}: must be bloom or cuckoo")
    return kind


def interval_arg(text: str) -> float:
    """Seconds between progress lines: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more seconds")
    return value


class UsageError(Exception):
    """A command line that cannot be used: exit status 2, one line on stderr."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, its errors raised (``UsageError``) rather than printed with the usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def connect(url: str) -> redis.Redis:
    """A client for ``--url``, every part of the URL checked before anything is sent (redis-py
    takes a path that is not a number for database 0, and some parameters only fail later)."""
    try:
        parts = urlsplit(url)
        if parts.scheme in ("redis", "rediss"):
            database = parts.path.strip("/")
            if database and not database.isdigit():
                raise ValueError(f"the database in its path must be a number, not {database!r}")
        client = redis.Redis.from_url(url)
        pool = client.connection_pool
        pool.connection_class(**pool.connection_kwargs)  # a connection object, not connected
    except (TypeError, ValueError, redis.RedisError) as error:
        message = str(error)
        unknown = re.search(r"unexpected keyword argument '(\w+)'", message)
        if unknown:
            message = f"unknown parameter {unknown.group(1)!r}"
        raise UsageError(f"argument --url: {message}") from None
    return client


def read_lines(name: str) -> Iterable[str]:
    """The lines of ``--urls`` (``-``: stdin), decoded as UTF-8; ``MigrationError`` if the file
    cannot be read or a line is not UTF-8 (before anything is loaded: ``load_urls`` reads them
    all first)."""
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as file:
                data = file.read()
    except OSError as error:
        raise MigrationError(f"cannot read --urls {name}: {error.strerror or error}") from None
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise MigrationError(
                f"line {number} of --urls {name} is not UTF-8 text ({error.reason} at byte "
                f"{error.start + 1}): nothing was loaded"
            ) from None


COMMAND = "redis-bf-migrate"


def package_version() -> str:
    """The installed distribution's version; the package's own when it is not installed (run
    from a source tree)."""
    try:
        return metadata.version("redis-bf")
    except metadata.PackageNotFoundError:
        from . import __version__

        return __version__


def program_name() -> str:
    """The command as it was run, for the usage line: ``redis-bf-migrate`` (the console script
    the package installs) or ``python -m redis_bf.migrate``."""
    run_as = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else ""
    return COMMAND if run_as == COMMAND else "python -m redis_bf.migrate"


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """The command line (``redis-bf-migrate``, ``python -m redis_bf.migrate``): returns the exit
    status: 0 done (or nothing to do), 1 failed, 2 a command line that cannot be used; each
    failure is one line on stderr, ``error: ...``. ``--help`` and ``--version`` raise
    ``SystemExit(0)``."""
    prog = program_name()
    try:
        return run(prog, argv, out or sys.stdout)
    except UsageError as error:
        print(f"error: {error} (see {prog} --help)", file=sys.stderr)
        return 2
    except (MigrationError, ModuleMissingError, KeyTypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except redis.AuthenticationError as error:
        print(
            "error: the server refused the credentials of --url "
            f"(redis://user:password@host:port/db gives them): {error}",
            file=sys.stderr,
        )
        return 1
    except (redis.ConnectionError, redis.TimeoutError) as error:
        print(f"error: cannot talk to the server of --url: {error}", file=sys.stderr)
        return 1
    except RedisError as error:
        moved = re.match(r"MOVED \d+ (\S+)", str(error))
        if moved:
            print(
                f"error: the key is served by another node of the cluster, {moved.group(1)}: "
                f"give that node's address (--url redis://{moved.group(1)})",
                file=sys.stderr,
            )
        else:
            print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


def parser_for(prog: str) -> ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description=(
            "Convert a scrapy-redis fingerprint set (<spider>:dupefilter) into a redis-bf Bloom "
            "filter (or, with --kind cuckoo, a cuckoo filter) under the same key, atomically, so "
            "the crawl resumes with redis_bf.scrapy.RFPDupeFilter. Stop the spiders first. With "
            "--urls, load the fingerprints of a list of URLs into a filter instead."
        ),
        epilog=(
            "A string key (a client-side filter such as scrapy-redis-bloomfilter's bit array) "
            "cannot be converted: its bits come from that package's own hashing, and a Bloom "
            "filter cannot list what it holds. Finish that crawl with it, or start the new "
            "dupefilter on a key of its own (optionally loaded with --urls) and accept that "
            "some pages may be fetched once more. Exit status: 0 done, 1 failed, 2 a command "
            "line that cannot be used; each failure is one line on stderr."
        ),
    )
    parser.add_argument("key", help="the dupefilter key, e.g. myspider:dupefilter")
    parser.add_argument(
        "--url", default="redis://127.0.0.1:6379", help="Redis URL (default: %(default)s)"
    )
    parser.add_argument(
        "--capacity",
        type=positive,
        default=DEFAULT_CAPACITY,
        help="BLOOMFILTER_CAPACITY for the new filter, at least 1, raised to the set's size if "
        "smaller (default: %(default)s)",
    )
    parser.add_argument(
        "--error-rate",
        type=error_rate_arg,
        default=DEFAULT_ERROR_RATE,
        help="BLOOMFILTER_ERROR_RATE for the new filter, between 0 and 1 (default: %(default)g)",
    )
    parser.add_argument(
        "--window",
        type=window_arg,
        default=None,
        metavar="SECONDS",
        help="BLOOMFILTER_WINDOW for the new filter: a windowed filter, every fingerprint "
        "remembered for this long from the migration on (default, or 0: no window)",
    )
    parser.add_argument(
        "--kind",
        type=kind_arg,
        default="bloom",
        help="the new filter: bloom (default) or cuckoo (a filter that can forget a request, "
        'for BLOOMFILTER_KIND = "cuckoo"; no --window)',
    )
    parser.add_argument(
        "--batch",
        type=positive,
        default=1000,
        help="members per SSCAN and BF.INSERT (with --urls, fingerprints per BF.INSERT), at "
        "least 1 (default: %(default)s)",
    )
    parser.add_argument(
        "--keep-set",
        action="store_true",
        help=f"keep the set, renamed to {{<key>}}{BACKUP_SUFFIX} (refused if that key exists)",
    )
    parser.add_argument(
        "--progress-interval",
        type=interval_arg,
        default=None,
        help="seconds between progress lines (0: every batch; default: 1)",
    )
    parser.add_argument(
        "--urls",
        metavar="FILE",
        help="instead: add the fingerprints of these URLs (one a line, - for stdin) to the "
        "filter at key (needs Scrapy and scrapy-redis)",
    )
    parser.add_argument("--version", action="version", version=f"{COMMAND} {package_version()}")
    return parser


def run(prog: str, argv: list[str] | None, out: TextIO) -> int:
    """``main`` without its error handling."""
    args = parser_for(prog).parse_args(argv)

    def report(line: str) -> None:
        print(line, file=out, flush=True)

    if args.urls is not None and args.keep_set:
        raise UsageError("--keep-set goes with a set's migration, not with --urls")
    if args.urls is not None and args.progress_interval is not None:
        raise UsageError("--progress-interval goes with a set's migration, not with --urls")
    if args.kind == "cuckoo" and args.window is not None:
        raise UsageError("--window goes with --kind bloom: a cuckoo filter has no window")
    if args.kind == "cuckoo" and args.error_rate < CUCKOO_MIN_ERROR:
        raise UsageError(
            f"argument --error-rate: {args.error_rate:g}: a cuckoo filter's must be at least "
            f"{CUCKOO_MIN_ERROR:g}"
        )
    options = FilterOptions(args.capacity, args.error_rate, args.window)
    client = connect(args.url)
    # Before anything is built: a server without the module says so in one line.
    require_module(client, args.key, cuckoo=args.kind == "cuckoo")
    if args.urls is not None:
        lines = read_lines(args.urls)
        load_urls(
            client, args.key, lines, options, report=report, batch_size=args.batch, kind=args.kind
        )
        return 0
    migration = migrate_set(
        client,
        args.key,
        options,
        batch_size=args.batch,
        keep_set=args.keep_set,
        report=report,
        progress_interval=1.0 if args.progress_interval is None else args.progress_interval,
        kind=args.kind,
    )
    if migration is not None and args.kind == "cuckoo":
        report(
            f'next: set DUPEFILTER_CLASS = "{NEXT_CLASS}" and BLOOMFILTER_KIND = "cuckoo", and '
            "start the spiders again"
        )
    elif migration is not None:
        report(f'next: set DUPEFILTER_CLASS = "{NEXT_CLASS}" and start the spiders again')
    return 0


if __name__ == "__main__":
    sys.exit(main())
