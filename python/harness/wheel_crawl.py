"""The crawls of the wheel test (tests/wheel.rs), run with the python of a virtual environment
into which ``redis-bf[server,scrapy]`` was installed from wheels alone: a 300-page site crawled
through the scrapy-redis scheduler twice, with the dupefilter's Bloom filter and with
``BLOOMFILTER_KIND = "cuckoo"``, against the server on ``--port``. Prints one JSON line: for each
kind, the pages fetched more than once and those never fetched (both empty when the dedup works),
the pages parsed, and the TYPE of the dupefilter's key.

    python wheel_crawl.py --port 6379
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis  # noqa: E402

from crawl import run  # noqa: E402
from website import Site  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    redis_url = f"redis://127.0.0.1:{args.port}"
    client = redis.Redis(port=args.port)
    results = {}
    for kind in ("bloom", "cuckoo"):
        spider = f"wheel-{kind}"
        settings: dict[str, object] = {"SCHEDULER_PERSIST": True}
        if kind == "cuckoo":
            settings["BLOOMFILTER_KIND"] = "cuckoo"
        with Site(pages=300) as site:
            crawl = run(site.url, redis_url, spider=spider, settings=settings)
            fetched = site.fetched()
            results[kind] = {
                "twice": sorted(path for path, count in fetched.items() if count > 1),
                "never": sorted(path for path in site.paths if fetched[path] == 0),
                "pages": crawl["harness/pages"],
                "type": client.type(f"{spider}:dupefilter").decode(),
            }
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
