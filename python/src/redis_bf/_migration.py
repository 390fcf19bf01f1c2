"""How ``redis-bf-migrate`` (``redis_bf.migrate``, the command line) turns a scrapy-redis
fingerprint set into a filter under the same key: ``migrate_set`` (the copy beside the set and the
atomic swap, see the command's doc) and ``load_urls`` (``--urls``: the fingerprints of known URLs).
Every refusal is a ``MigrationError`` whose message is the command's one line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import ResponseError

from ._errors import CUCKOO_TYPE, FILTER_TYPE, BloomFilterError
from ._options import CuckooOptions, FilterOptions
from ._replies import as_bool, as_bools, cuckoo_added_unique, decode, info_dict
from ._shards import parse_manifest
from .bloom import BloomFilter
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
    """The manifest a sharded filter keeps at its key (a short JSON string, of any version), as
    a dict, or None if ``key`` holds anything else."""
    if str(decode(client.type(key))) != "string" or int(client.strlen(key)) > 4096:
        return None
    manifest = parse_manifest(client.get(key))
    return None if manifest is None else manifest.fields


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


COMMAND = "redis-bf-migrate"


def program_name() -> str:
    """The command as it was run, for the usage line: ``redis-bf-migrate`` (the console script
    the package installs) or ``python -m redis_bf.migrate``."""
    run_as = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else ""
    return COMMAND if run_as == COMMAND else "python -m redis_bf.migrate"
