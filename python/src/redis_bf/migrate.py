"""Convert a crawl's scrapy-redis fingerprint set into a redis-bf Bloom filter, under the same key.

    python -m redis_bf.migrate [--url redis://host:6379/0] myspider:dupefilter

The set's members are scrapy-redis request fingerprints, the same strings ``redis_bf.scrapy``
adds, so the crawl resumes with everything it had seen. How it goes:

1. The filter is built beside the set, at ``{key}:redis-bf-migrating`` (same cluster slot), with
   ``SSCAN`` and ``BF.INSERT ... NOCREATE ITEMS`` in batches, one round trip per batch, printing
   its progress.
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
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import redis
from redis.exceptions import RedisError, ResponseError

from .bloom import (
    FILTER_TYPE,
    BloomFilter,
    BloomFilterError,
    FilterOptions,
    ModuleMissingError,
    as_bools,
    decode,
    info_dict,
    require_module,
)
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE

TEMP_SUFFIX = ":redis-bf-migrating"
NEXT_CLASS = "redis_bf.scrapy.RFPDupeFilter"
BACKUP_SUFFIX = ":scrapy-redis-set"

BIT_STRING_ADVICE = """\
{key} is a string of {size:,} bytes: the bit array of a client-side Bloom filter, such as
scrapy-redis-bloomfilter's (GETBIT/SETBIT). It cannot be converted: its bits are positions from
that package's own hash functions, and a Bloom filter cannot list the fingerprints it holds, so
there is nothing to replay into the module's hashing. Instead, either:
  - let the crawl that uses it finish as it is, and start the next crawl with
    redis_bf.scrapy.RFPDupeFilter; or
  - switch now (SCHEDULER = "scrapy_redis.scheduler.Scheduler", DUPEFILTER_CLASS =
    "redis_bf.scrapy.RFPDupeFilter"): the new filter gets a key of its own (<spider>:dupefilter,
    where scrapy-redis-bloomfilter uses <spider>:bloomfilter), the request queue carries on
    (SCHEDULER_PERSIST = True), and pages fetched before may be fetched once more; delete {key}
    afterwards to free its memory; or
  - if you know the URLs fetched so far (your items, logs or database), load their fingerprints
    into the new key first: python -m redis_bf.migrate --urls fetched.txt <new key>"""

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


@dataclass
class Migration:
    """What a migration did."""

    key: str
    fingerprints: int  # members of the set when it was swapped out
    sent: int  # members sent to the filter (SSCAN may return one twice), over all passes
    new: int  # of those, counted new by the filter
    passes: int
    seconds: float
    info: dict[str, Any]  # BF.INFO of the filter now at key
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
) -> Migration | None:
    """Replaces the scrapy-redis set at ``key`` by a Bloom filter holding its members.

    Returns None if ``key`` already holds a filter (nothing to do). Raises ``MigrationError`` if
    it holds anything but a set, or if the set kept changing.
    """
    options = options or FilterOptions(DEFAULT_CAPACITY, DEFAULT_ERROR_RATE)
    if batch_size < 1:
        raise MigrationError(f"a batch of {batch_size} members: it must be at least 1")
    kind = str(decode(client.type(key)))
    if kind == FILTER_TYPE:
        report(f"{key} is already a Bloom filter: nothing to do")
        existing = info_dict(client.execute_command("BF.INFO", key)).get("Window")
        if options.window is not None and existing != options.window:
            report(
                f"warning: it has {f'a window of {existing} s' if existing else 'no window'}, "
                f"not the {options.window} s asked for: it stays as it is (delete it to start "
                "afresh)"
            )
        return None
    if kind == "none":
        raise MigrationError(
            f"{key} does not exist: nothing to migrate (the dupefilter key is "
            "SCHEDULER_DUPEFILTER_KEY, by default <spider>:dupefilter)"
        )
    if kind == "string":
        raise MigrationError(BIT_STRING_ADVICE.format(key=key, size=client.strlen(key)))
    if kind != "set":
        raise MigrationError(f"{key} holds a {kind}, not a scrapy-redis set: nothing to migrate")

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
        f"building a Bloom filter at {temp} (capacity {capacity:,}, "
        f"error rate {options.error_rate:g}"
        + (f", window {options.window} s" if options.window else "")
        + ")"
    )
    # With a window, every fingerprint starts its window now (a set has no times).
    client.execute_command("BF.RESERVE", temp, *replace(options, capacity=capacity).reserve_args())

    started = time.monotonic()
    sent = new = 0
    swap = client.register_script(SWAP_SCRIPT)
    for attempt in range(1, max_passes + 1):
        progress = Progress(report, progress_interval)
        pass_sent, pass_new = copy_members(client, key, temp, batch_size, total, progress)
        sent, new = sent + pass_sent, new + pass_new
        try:
            swapped = swap(
                keys=[key, temp, backup],
                args=[total, FILTER_TYPE, "keep" if keep_set else "free"],
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
    info = BloomFilter(client, key, options.capacity, options.error_rate).info()
    report(
        f"swapped: {key} is now a Bloom filter ({info['Number of items inserted']:,} items, "
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
    client: redis.Redis, key: str, temp: str, batch_size: int, total: int, progress: Progress
) -> tuple[int, int]:
    """One SSCAN pass over the set into the filter at ``temp``: (members sent, counted new).

    Each round trip carries the previous batch's ``BF.INSERT`` and the next ``SSCAN``.
    ``NOCREATE``: if the filter vanished, fail rather than create one with the server defaults.
    """
    sent = new = 0
    cursor: int | None = 0  # None once the scan is complete
    pending: list[Any] = []
    while cursor is not None or pending:
        pipe = client.pipeline(transaction=False)
        if pending:
            pipe.execute_command("BF.INSERT", temp, "NOCREATE", "ITEMS", *pending)
        if cursor is not None:
            pipe.sscan(key, cursor, count=batch_size)
        replies = pipe.execute(raise_on_error=False)
        if pending:
            if isinstance(replies[0], ResponseError):
                raise MigrationError(f"BF.INSERT into {temp} failed: {replies[0]}")
            try:
                new += sum(as_bools(replies[0]))
            except BloomFilterError as error:
                raise MigrationError(f"BF.INSERT into {temp} failed: {error}") from None
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
) -> int:
    """Adds the scrapy-redis fingerprints of GET requests for ``urls`` to the filter at ``key``
    (created with ``options`` if missing); returns how many were new. Needs Scrapy and
    scrapy-redis (the fingerprints are theirs).

    Every line is read and checked first: a line that is not a URL (blank lines and lines
    starting with ``#`` are skipped) raises ``MigrationError`` naming it, and nothing is loaded.
    """
    from scrapy import Request

    from .scrapy import RFPDupeFilter

    options = options or FilterOptions(DEFAULT_CAPACITY, DEFAULT_ERROR_RATE)
    dupefilter = RFPDupeFilter(
        client,
        key,
        capacity=options.capacity,
        error_rate=options.error_rate,
        window=options.window,
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
    dupefilter.open()
    answers = dupefilter.filter.add_many(fingerprints)
    report(f"{key}: {len(answers):,} URLs loaded, {sum(answers):,} of them new to the filter")
    return sum(answers)


def positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


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
    status, 0 or 1; ``--help``, ``--version`` and bad arguments raise ``SystemExit`` (0, 0, 2)."""
    parser = argparse.ArgumentParser(
        prog=program_name(),
        description=(
            "Convert a scrapy-redis fingerprint set (<spider>:dupefilter) into a redis-bf Bloom "
            "filter under the same key, atomically, so the crawl resumes with "
            "redis_bf.scrapy.RFPDupeFilter. Stop the spiders first. With --urls, load the "
            "fingerprints of a list of URLs into a filter instead."
        ),
        epilog=(
            "A string key (a client-side filter such as scrapy-redis-bloomfilter's bit array) "
            "cannot be converted: its bits come from that package's own hashing, and a Bloom "
            "filter cannot list what it holds. Finish that crawl with it, or start the new "
            "dupefilter on a key of its own (optionally loaded with --urls) and accept that "
            "some pages may be fetched once more."
        ),
    )
    parser.add_argument("key", help="the dupefilter key, e.g. myspider:dupefilter")
    parser.add_argument(
        "--url", default="redis://127.0.0.1:6379", help="Redis URL (default: %(default)s)"
    )
    parser.add_argument(
        "--capacity",
        type=int,
        default=DEFAULT_CAPACITY,
        help="BLOOMFILTER_CAPACITY for the new filter, raised to the set's size if smaller "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--error-rate",
        type=float,
        default=DEFAULT_ERROR_RATE,
        help="BLOOMFILTER_ERROR_RATE for the new filter (default: %(default)g)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="SECONDS",
        help="BLOOMFILTER_WINDOW for the new filter: a windowed filter, every fingerprint "
        "remembered for this long from the migration on (default, or 0: no window)",
    )
    parser.add_argument(
        "--batch",
        type=positive,
        default=1000,
        help="members per SSCAN and BF.INSERT, at least 1 (default: %(default)s)",
    )
    parser.add_argument(
        "--keep-set",
        action="store_true",
        help=f"keep the set, renamed to {{<key>}}{BACKUP_SUFFIX} (refused if that key exists)",
    )
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=1.0,
        help="seconds between progress lines (0: every batch)",
    )
    parser.add_argument(
        "--urls",
        metavar="FILE",
        help="instead: add the fingerprints of these URLs (one a line, - for stdin) to the "
        "filter at key",
    )
    parser.add_argument("--version", action="version", version=f"{COMMAND} {package_version()}")
    args = parser.parse_args(argv)
    out = out or sys.stdout

    def report(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        options = FilterOptions(args.capacity, args.error_rate, args.window or None)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    client = redis.Redis.from_url(args.url)
    try:
        # Before anything is built: a server without the module says so in one line.
        require_module(client, args.key)
        if args.urls:
            with open(args.urls) if args.urls != "-" else sys.stdin as lines:
                load_urls(client, args.key, lines, options, report=report)
            return 0
        migration = migrate_set(
            client,
            args.key,
            options,
            batch_size=args.batch,
            keep_set=args.keep_set,
            report=report,
            progress_interval=args.progress_interval,
        )
    except (MigrationError, ModuleMissingError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except RedisError as error:
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if migration is not None:
        report(f'next: set DUPEFILTER_CLASS = "{NEXT_CLASS}" and start the spiders again')
    return 0


if __name__ == "__main__":
    sys.exit(main())
