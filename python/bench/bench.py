"""The crawler benchmark of issue #16, rerun: one real Scrapy crawl per dupefilter.

scrapy 2.19.0 + scrapy-redis 0.9.1 (the scrapy-redis scheduler, its priority queue in Redis,
SCHEDULER_PERSIST so the dedup key can be measured after) over a generated local site
(harness/website.py: 5,000 pages, 24 links a page, 120,001 dedup checks), each approach on a fresh
redis-server with the module. Printed as one table:

- pages fetched: distinct pages the site served (a page fetched twice is reported too);
- dedup key memory: MEMORY USAGE of the dupefilter's key at the end (SAMPLES 0: exact);
- Redis commands per check: the dedup commands the server counted (INFO commandstats: SADD,
  GETBIT/SETBIT, BF.*) over the requests the spider sent to the scheduler;
- wall: Scrapy's elapsed_time_seconds (the crawl, not the process start-up).

First the sharded filter's row (sharded.py): items a second through a 12-shard filter on a
three-primary cluster against one key on one server, and memory per item. Then the crawls. Then
the defaults table (sizing.py): the filter the defaults grow into at 5,000, 10M and 100M
distinct URLs, filled for real, and the pages each would lose.

    scripts/python-bench.sh [--pages 5000] [--runs 1] [--sizes 5000,10000000,100000000]
        [--sharded 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "harness"))
sys.path.insert(0, str(HERE))

from redis_bf import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE  # noqa: E402

import crawl as crawl_harness  # noqa: E402
import sharded  # noqa: E402
import sizing  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from website import Site  # noqa: E402

DEDUP_COMMANDS = ("sadd", "sismember", "getbit", "setbit", "bf.")


@dataclass
class Approach:
    name: str
    key: str
    settings: dict[str, Any]
    setup: list[list[Any]] = field(default_factory=list)  # commands before the crawl


APPROACHES = [
    Approach(
        "scrapy-redis set of SHA-1 fingerprints",
        "site:dupefilter",
        {"DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter"},
    ),
    Approach(
        "scrapy-redis-bloomfilter 0.8.1 (GETBIT/SETBIT, 2^30 bits, 6 hashes)",
        "site:bloomfilter",
        {
            "SCHEDULER": "scrapy_redis_bloomfilter.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy_redis_bloomfilter.dupefilter.RFPDupeFilter",
        },
    ),
    Approach(
        "a 20-line BF.ADD dupefilter, filter auto-created with module defaults",
        "site:dupefilter",
        {"DUPEFILTER_CLASS": "naive_dupefilter.BFAddDupeFilter"},
    ),
    Approach(
        "the same after BF.RESERVE k 0.001 10000",
        "site:dupefilter",
        {"DUPEFILTER_CLASS": "naive_dupefilter.BFAddDupeFilter"},
        [["BF.RESERVE", "site:dupefilter", 0.001, 10000]],
    ),
    Approach(
        "redis_bf.scrapy.RFPDupeFilter, no settings",
        "site:dupefilter",
        {"DUPEFILTER_CLASS": "redis_bf.scrapy.RFPDupeFilter"},
    ),
]


@dataclass
class Run:
    fetched: int
    twice: int
    memory: int
    per_check: float
    wall: float


def run_once(approach: Approach, pages: int) -> Run:
    with RedisServer("bench") as server, Site(pages) as site:
        client = server.client(socket_timeout=None)
        for command in approach.setup:
            client.execute_command(*command)
        crawl = crawl_harness.run(
            site.url,
            server.url,
            settings={**approach.settings, "SCHEDULER_PERSIST": True, "LOG_LEVEL": "WARNING"},
            timeout=3600,
        )
        hits = site.fetched()
        checks = 1 + int(crawl["harness/requests"])
        calls = sum(
            int(stats["calls"])
            for name, stats in client.info("commandstats").items()
            if name.lower().removeprefix("cmdstat_").startswith(DEDUP_COMMANDS)
        )
        return Run(
            fetched=sum(1 for path in site.paths if hits[path] > 0),
            twice=sum(1 for path in site.paths if hits[path] > 1),
            memory=int(client.memory_usage(approach.key, samples=0) or 0),
            per_check=calls / checks,
            wall=float(crawl["elapsed_time_seconds"]),
        )


def span(values: list[float], text: Any) -> str:
    low, high = min(values), max(values)
    return text(low) if text(low) == text(high) else f"{text(low)}-{text(high)}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument(
        "--runs", type=int, default=1, help="crawls per approach (ranges when more than one)"
    )
    parser.add_argument(
        "--sizes", default="5000,10000000,100000000", help="sizing table rows ('' to skip)"
    )
    parser.add_argument(
        "--sharded",
        type=int,
        default=1_000_000,
        help="items through the sharded filter on a cluster against one key (0 to skip)",
    )
    args = parser.parse_args()
    if args.sharded:
        print(sharded.table(args.sharded), flush=True)
        print()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), os.environ.get("PYTHONPATH")])
    )

    site = Site(args.pages)
    print(
        f"{args.pages:,} pages, {site.links_per_page} links a page "
        f"({site.requests_per_crawl:,} dedup checks), {args.runs} crawl(s) per approach; "
        f"module {os.environ.get('REDIS_BF_MODULE', 'target/release')}",
        flush=True,
    )
    rows = [
        "| dupefilter | pages fetched | dedup key memory | Redis commands per check | wall |",
        "|---|---|---|---|---|",
    ]
    runs_by_name: dict[str, list[Run]] = {}
    for approach in APPROACHES:
        runs = []
        for number in range(args.runs):
            run = run_once(approach, args.pages)
            print(f"  {approach.name}, run {number + 1}: {run}", file=sys.stderr, flush=True)
            runs.append(run)
        runs_by_name[approach.name] = runs
        fetched = span([r.fetched for r in runs], lambda v: f"{v:,}")
        if runs[0].fetched < args.pages:
            lost = [100 * (args.pages - r.fetched) / args.pages for r in runs]
            fetched = (
                f"**{fetched} ({span(lost, lambda v: f'{v:.1f}')}% of the site never crawled)**"
            )
        if any(r.twice for r in runs):
            fetched += f" ({max(r.twice for r in runs)} fetched twice)"
        rows.append(
            f"| {approach.name} | {fetched} | {span([r.memory for r in runs], sizing.size_text)} | "
            f"{span([r.per_check for r in runs], lambda v: f'{v:.2f}')} | "
            f"{span([r.wall for r in runs], lambda v: f'{v:.0f}')} s |"
        )
    print("\n".join(rows), flush=True)

    sizes = [int(size) for size in args.sizes.split(",") if size]
    if sizes:
        set_run = runs_by_name[APPROACHES[0].name][0]
        bit_run = runs_by_name[APPROACHES[1].name][0]
        with RedisServer("bench-sizing") as server:
            print()
            print(
                sizing.table(
                    server.client(socket_timeout=None),
                    sizes,
                    DEFAULT_CAPACITY,
                    DEFAULT_ERROR_RATE,
                    set_bytes_per_item=set_run.memory / set_run.fetched,
                    bitstring_bytes=bit_run.memory,
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
