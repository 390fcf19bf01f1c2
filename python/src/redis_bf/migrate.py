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
import math
import re
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import NoReturn, TextIO
from urllib.parse import urlsplit

import redis
from redis.exceptions import RedisError

from ._errors import KeyTypeError, ModuleMissingError
from ._migration import (
    BACKUP_SUFFIX,
    COMMAND,
    KIND_NAMES,
    NEXT_CLASS,
    Migration,
    MigrationError,
    load_urls,
    migrate_set,
    program_name,
    sibling_key,
)
from ._options import CUCKOO_MIN_ERROR, MAX_WINDOW, FilterOptions
from .bloom import require_module
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE

# The engine's names, importable from here as before the command line had a file of its own.
__all__ = [
    "Migration",
    "MigrationError",
    "load_urls",
    "main",
    "migrate_set",
    "sibling_key",
]


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


def package_version() -> str:
    """The installed distribution's version; the package's own when it is not installed (run
    from a source tree)."""
    try:
        return metadata.version("redis-bf")
    except metadata.PackageNotFoundError:
        from . import __version__

        return __version__


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
