"""One real Scrapy crawl of a harness site, through the scrapy-redis scheduler, in a process of
its own (Twisted's reactor cannot start twice in one process).

``run(site_url, redis_url, ...)`` starts ``python crawl.py ...`` and returns the crawl's stats
(Scrapy's, plus ``harness/pages`` parsed and ``harness/requests`` yielded) and its log. The spider
starts from ``/p/0`` with a request the dupefilter checks (``dont_filter=False``, so a resumed
crawl does not fetch it again) and follows every link; at the end it records the RESP version its
Redis connections speak (``harness/resp``).

With the setting ``HARNESS_ERRBACK_FORGET = True`` every request gets an errback that counts the
failure (``harness/failed``), makes the dupefilter forget the request
(``redis_bf.scrapy.forget``) and yields it again, once (``harness/resent``): the retry that
python/README.md shows for a spider's own code.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass
class Crawl:
    stats: dict[str, Any]
    log: str
    seconds: float  # the whole process, start-up included

    def __getitem__(self, name: str) -> Any:
        return self.stats.get(name)


def run(
    site_url: str,
    redis_url: str,
    *,
    spider: str = "site",
    settings: dict[str, Any] | None = None,
    timeout: float = 300,
    python: str = sys.executable,
) -> Crawl:
    """Runs a crawl to its end (or to ``CLOSESPIDER_PAGECOUNT``); fails if the process fails."""
    out = (
        Path(os.environ.get("TMPDIR", "/tmp"))
        / f"redis-bf-crawl-{os.getpid()}-{time.monotonic_ns()}.json"
    )
    command = [
        python,
        str(HERE / "crawl.py"),
        "--site", site_url,
        "--redis-url", redis_url,
        "--spider", spider,
        "--settings", json.dumps(settings or {}),
        "--stats-out", str(out),
    ]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        seconds = time.monotonic() - started
        log = done.stdout + done.stderr
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"the crawl failed (exit {done.returncode}):\n{log[-6000:]}")
        stats = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    return Crawl(stats, log, seconds)


def main() -> None:
    import scrapy
    from scrapy.crawler import CrawlerProcess

    parser = argparse.ArgumentParser()
    parser.add_argument("--site", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--spider", default="site")
    parser.add_argument("--settings", default="{}")
    parser.add_argument("--stats-out", required=True)
    args = parser.parse_args()

    class SiteSpider(scrapy.Spider):
        name = args.spider

        async def start(self) -> Any:
            yield scrapy.Request(
                f"{args.site}/p/0", dont_filter=False, errback=self.errback_of(self.settings)
            )

        def errback_of(self, settings: Any) -> Any:
            return self.failed if settings.getbool("HARNESS_ERRBACK_FORGET") else None

        def parse(self, response: Any) -> Any:
            self.crawler.stats.inc_value("harness/pages")
            errback = self.errback_of(self.settings)
            for href in response.css("a::attr(href)").getall():
                self.crawler.stats.inc_value("harness/requests")
                yield response.follow(href, callback=self.parse, errback=errback)

        def failed(self, failure: Any) -> Any:
            from redis_bf.scrapy import forget

            request = failure.request
            self.crawler.stats.inc_value("harness/failed")
            if request.meta.get("forgotten"):
                return  # failed again after its second chance: leave it
            forget(self, request)  # the dupefilter takes it as new again
            self.crawler.stats.inc_value("harness/resent")
            yield request.replace(meta={**request.meta, "forgotten": True})

        def closed(self, reason: str) -> None:
            # The protocol that a client made from the crawl's settings speaks, as the
            # dupefilter's and the scheduler's do.
            from scrapy_redis.connection import get_redis_from_settings

            client = get_redis_from_settings(self.settings)
            reply = client.execute_command("CLIENT", "INFO")
            text = reply.decode() if isinstance(reply, bytes) else str(reply)
            fields = dict(field.split("=", 1) for field in text.split() if "=" in field)
            self.crawler.stats.set_value("harness/resp", int(fields["resp"]))
            client.close()

    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "redis_bf.scrapy.RFPDupeFilter",
        "REDIS_URL": args.redis_url,
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "LOGSTATS_INTERVAL": 3600,
    }
    settings.update(json.loads(args.settings))
    process = CrawlerProcess(settings, install_root_handler=True)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler)
    process.start()
    stats = {
        name: value if isinstance(value, (int, float, str)) else str(value)
        for name, value in crawler.stats.get_stats().items()
    }
    Path(args.stats_out).write_text(json.dumps(stats))


if __name__ == "__main__":
    main()
