"""A scrapy-redis dupefilter that keeps request fingerprints in a redis-bf Bloom filter.

One setting switches a scrapy-redis crawl over::

    SCHEDULER = "scrapy_redis.scheduler.Scheduler"
    DUPEFILTER_CLASS = "redis_bf.scrapy.RFPDupeFilter"

It is scrapy-redis's ``RFPDupeFilter`` with the set replaced by a filter: the same key
(``SCHEDULER_DUPEFILTER_KEY``, by default ``<spider>:dupefilter``), the same request fingerprints
(scrapy-redis's, so a set converts with ``python -m redis_bf.migrate``), the same clearing on close
and flush, plus Scrapy's ``dupefilter/filtered`` stat and duplicate logging (``DUPEFILTER_DEBUG``).
Each request costs one command: ``BF.INSERT <key> CAPACITY c ERROR e ITEMS <fingerprint>``, a
``BF.ADD`` that also says how to create the filter if the key is missing.

Settings:

- ``BLOOMFILTER_CAPACITY`` (default 100,000): the distinct requests to size the first sub-filter
  for; the filter grows past it, so this saves memory, it does not cap the crawl.
- ``BLOOMFILTER_ERROR_RATE`` (default 1e-6): the false-positive rate, that is the share of new
  requests wrongly taken for seen (pages never fetched), at most, at any fill.
- ``BLOOMFILTER_WINDOW`` (whole seconds or a ``timedelta``; unset or 0: none): recrawl after a
  window. A request is taken for seen for at least this long after it was first scheduled and
  forgotten by 1.25 times it, so a long-running or repeated crawl (``SCHEDULER_PERSIST = True``)
  fetches each page again once its window has passed, never twice within it;
  ``BLOOMFILTER_CAPACITY`` then counts the requests of one window. Memory is about twice that of a
  filter without a window.
- ``BLOOMFILTER_CLUSTER_URL`` (a ``redis://host:port`` of any node): keep the filter on that
  Redis Cluster, while scrapy-redis's queue stays on ``REDIS_URL``.
- ``BLOOMFILTER_SHARDS`` (unset: one key): spread the filter over this many keys, which a cluster
  places on all its primaries (``redis_bf.BloomFilter``'s ``shards``). Every process of a crawl
  must give the same count: another one is refused (``FilterMismatchError``).

Capacity, error rate and window apply only when the filter is created: an existing filter is used
as it is (a warning says so when its window differs from the setting), so a paused crawl resumes
with what it had seen; a sharded filter's error rate and window must match (see above).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import referer_str
from scrapy_redis import defaults as scrapy_redis_defaults
from scrapy_redis.connection import get_redis_from_settings
from scrapy_redis.dupefilter import RFPDupeFilter as SetDupeFilter

from ._core import window_seconds
from .bloom import BloomFilter, KeyTypeError, server_url
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE

if TYPE_CHECKING:
    import redis
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# scrapy-redis-bloomfilter's settings: a project switching from it may still have them.
FOREIGN_SETTINGS = ("BLOOMFILTER_BIT", "BLOOMFILTER_HASH_NUMBER")


class RFPDupeFilter(SetDupeFilter):  # type: ignore[misc]  # scrapy-redis ships no type hints
    """scrapy-redis's request dupefilter over a redis-bf Bloom filter: one command per request."""

    logger = logger
    server: redis.Redis
    key: str
    debug: bool
    logdupes: bool

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        debug: bool = False,
        *,
        capacity: int = DEFAULT_CAPACITY,
        error_rate: float = DEFAULT_ERROR_RATE,
        window: int | None = None,
        shards: int | None = None,
        filter_server: Any = None,
    ) -> None:
        super().__init__(server, key, debug)
        self.filter_server = server if filter_server is None else filter_server
        self.filter = BloomFilter(
            self.filter_server, key, capacity, error_rate, window=window, shards=shards
        )

    @staticmethod
    def filter_settings(settings: BaseSettings) -> dict[str, Any]:
        """The ``BLOOMFILTER_*`` settings as constructor arguments."""
        for name in FOREIGN_SETTINGS:
            if settings.get(name) is not None:
                logger.warning(
                    "%s is a scrapy-redis-bloomfilter setting: redis_bf ignores it "
                    "(set BLOOMFILTER_CAPACITY and BLOOMFILTER_ERROR_RATE)",
                    name,
                )
        return {
            "capacity": settings.getint("BLOOMFILTER_CAPACITY", DEFAULT_CAPACITY),
            "error_rate": settings.getfloat("BLOOMFILTER_ERROR_RATE", DEFAULT_ERROR_RATE),
            "window": window_seconds(settings.get("BLOOMFILTER_WINDOW"), "BLOOMFILTER_WINDOW"),
            "shards": settings.getint("BLOOMFILTER_SHARDS") or None,
            "filter_server": filter_server(settings),
        }

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RFPDupeFilter:
        """For Scrapy's own scheduler: the one-time key ``dupefilter:<timestamp>``."""
        key = scrapy_redis_defaults.DUPEFILTER_KEY % {"timestamp": int(time.time())}
        return cls(
            get_redis_from_settings(settings),
            key=key,
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            **cls.filter_settings(settings),
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RFPDupeFilter:
        return cls.from_settings(crawler.settings)

    @classmethod
    def from_spider(cls, spider: Spider) -> RFPDupeFilter:
        """For scrapy-redis's scheduler: the key ``SCHEDULER_DUPEFILTER_KEY % {"spider": name}``."""
        settings = spider.settings
        pattern = settings.get(
            "SCHEDULER_DUPEFILTER_KEY", scrapy_redis_defaults.SCHEDULER_DUPEFILTER_KEY
        )
        instance = cls(
            get_redis_from_settings(settings),
            key=pattern % {"spider": spider.name},
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            **cls.filter_settings(settings),
        )
        instance.open()  # scrapy-redis's scheduler does not call open()
        return instance

    def open(self) -> None:
        """Reserves the filter if the key is missing; leaves an existing filter alone."""
        options = self.filter.options
        try:
            created = self.filter.create()
        except KeyTypeError as error:
            raise _explain(error, server_url(self.filter_server)) from None
        info = self.filter.info()
        window = f", window {options.window} s" if options.window else ""
        if created:
            self.logger.info(
                "Bloom filter dupefilter: created %s (capacity %d, error rate %g%s, %d bytes)",
                self.key,
                options.capacity,
                options.error_rate,
                window,
                info.get("Size"),
            )
        else:
            # Only a window asked for is checked: without the setting, any filter is used as it is.
            existing = info.get("Window")
            if options.window is not None and existing != options.window:
                self.logger.warning(
                    "Bloom filter dupefilter: %s exists with %s, not the window of %d s of "
                    "BLOOMFILTER_WINDOW: it is used as it is (delete it to start one with the "
                    "window)",
                    self.key,
                    f"a window of {existing} s" if existing else "no window",
                    options.window,
                )
            self.logger.info(
                "Bloom filter dupefilter: resuming with %s (%d requests seen, capacity %d, "
                "%d bytes)",
                self.key,
                info.get("Number of items inserted"),
                info.get("Capacity"),
                info.get("Size"),
            )

    def clear(self) -> None:
        """Deletes the filter (where it is: the dupefilter's cluster, or scrapy-redis's server)."""
        self.filter.delete()

    def request_seen(self, request: Request) -> bool:
        """True if the request was (probably) seen before; records it otherwise."""
        return not self.filter.add(self.request_fingerprint(request))

    def log(self, request: Request, spider: Spider) -> None:
        """Scrapy's duplicate logging and its ``dupefilter/filtered`` stat."""
        if self.debug:
            msg = "Filtered duplicate request: %(request)s (referer: %(referer)s)"
            args = {"request": request, "referer": referer_str(request)}
            self.logger.debug(msg, args, extra={"spider": spider})
        elif self.logdupes:
            msg = (
                "Filtered duplicate request: %(request)s"
                " - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)"
            )
            self.logger.debug(msg, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        crawler = getattr(spider, "crawler", None)
        if crawler is not None and crawler.stats is not None:
            crawler.stats.inc_value("dupefilter/filtered")


def filter_server(settings: BaseSettings) -> Any:
    """The Redis Cluster named by ``BLOOMFILTER_CLUSTER_URL`` (a client for it), or None: the
    filter then lives on scrapy-redis's own server."""
    url = settings.get("BLOOMFILTER_CLUSTER_URL")
    if not url:
        return None
    from redis.cluster import RedisCluster

    return RedisCluster.from_url(url)


def _explain(error: KeyTypeError, url: str) -> KeyTypeError:
    """The error for a dupefilter key that holds something else, with what to do about it (`url`:
    the server's, for the command to run)."""
    if error.key_type == "set":
        hint = (
            "it is a scrapy-redis fingerprint set: convert it with "
            f"`python -m redis_bf.migrate --url {url} {error.key}`, or delete it to start the "
            "crawl afresh"
        )
    elif error.key_type == "string":
        hint = (
            "a string is what client-side Bloom filters such as scrapy-redis-bloomfilter keep; "
            "it cannot be converted (see `python -m redis_bf.migrate --help`): use another "
            "SCHEDULER_DUPEFILTER_KEY, or delete it to start the crawl afresh"
        )
    else:
        hint = "use another SCHEDULER_DUPEFILTER_KEY, or delete the key"
    return KeyTypeError(error.key, error.key_type, hint)
