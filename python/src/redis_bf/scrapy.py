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
- ``BLOOMFILTER_LAYOUT`` (``"classic"`` or ``"blocked"``; unset: the server's ``bf.layout``): the
  filter's layout (``redis_bf.BloomFilter``'s ``layout``). A blocked filter answers faster once it
  is bigger than the server's caches (tens of millions of requests), for about 5% more memory.
- ``BLOOMFILTER_CLUSTER_URL`` (a ``redis://host:port`` of any node): keep the filter on that
  Redis Cluster, while scrapy-redis's queue stays on ``REDIS_URL``.
- ``BLOOMFILTER_SHARDS`` (unset: one key): spread the filter over this many keys, which a cluster
  places on all its primaries (``redis_bf.BloomFilter``'s ``shards``). Every process of a crawl
  must give the same count: another one is refused (``FilterMismatchError``).
- ``BLOOMFILTER_KIND`` (``"bloom"``, the default, or ``"cuckoo"``): keep the fingerprints in a
  cuckoo filter instead (``redis_bf.CuckooFilter``, bounded at ``BLOOMFILTER_ERROR_RATE``; one
  ``CF.INSERTNX`` per request), which can forget a request: ``RFPDupeFilter.forget(request)``,
  ``redis_bf.scrapy.forget(spider, request)`` from a callback or an errback, or the downloader
  middleware ``RetryForgetMiddleware``, which forgets the requests that failed and sends them
  again through the dupefilter. No window or layout with it.

Capacity, error rate, window and layout apply only when the filter is created: an existing filter
is used as it is (a warning says so when its window differs from the setting), so a paused crawl
resumes with what it had seen; a sharded filter's error rate and window must match (see above).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import load_object
from scrapy.utils.request import referer_str
from scrapy_redis import defaults as scrapy_redis_defaults
from scrapy_redis.connection import get_redis_from_settings
from scrapy_redis.dupefilter import RFPDupeFilter as SetDupeFilter

from ._options import window_seconds
from .bloom import BloomFilter, KeyTypeError, server_url
from .cuckoo import CuckooFilter
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE

if TYPE_CHECKING:
    import redis
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# scrapy-redis-bloomfilter's settings: a project switching from it may still have them.
FOREIGN_SETTINGS = ("BLOOMFILTER_BIT", "BLOOMFILTER_HASH_NUMBER")
# BLOOMFILTER_KIND's values, and what each is called in the log.
KINDS = {"bloom": "Bloom filter", "cuckoo": "Cuckoo filter"}


def filter_kind(value: Any) -> str:
    """``BLOOMFILTER_KIND``: "bloom" (also unset or empty) or "cuckoo"; ``ValueError`` else."""
    kind = "bloom" if value is None else str(value).strip().lower() or "bloom"
    if kind not in KINDS:
        raise ValueError(f'BLOOMFILTER_KIND must be "bloom" or "cuckoo", not {value!r}')
    return kind


class RFPDupeFilter(SetDupeFilter):  # type: ignore[misc]  # scrapy-redis ships no type hints
    """scrapy-redis's request dupefilter over a redis-bf Bloom filter (or, with
    ``kind="cuckoo"``, a cuckoo filter, which can ``forget`` a request): one command per
    request."""

    logger = logger
    server: redis.Redis
    key: str
    debug: bool
    logdupes: bool
    filter: BloomFilter | CuckooFilter

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        debug: bool = False,
        *,
        capacity: int = DEFAULT_CAPACITY,
        error_rate: float = DEFAULT_ERROR_RATE,
        window: int | None = None,
        layout: str | None = None,
        shards: int | None = None,
        filter_server: Any = None,
        kind: str = "bloom",
    ) -> None:
        super().__init__(server, key, debug)
        self.filter_server = server if filter_server is None else filter_server
        # The reason the crawl was stopped at its start, if it was (refuse()).
        self.refused: KeyTypeError | None = None
        self.kind = filter_kind(kind)
        if self.kind == "cuckoo":
            if window is not None:
                raise ValueError(
                    "BLOOMFILTER_WINDOW goes with a Bloom filter: a cuckoo filter has no window "
                    '(leave BLOOMFILTER_KIND unset, or "bloom", for one)'
                )
            if layout is not None:
                raise ValueError(
                    "BLOOMFILTER_LAYOUT goes with a Bloom filter: a cuckoo filter has no layout "
                    '(leave BLOOMFILTER_KIND unset, or "bloom", for one)'
                )
            self.filter = CuckooFilter(self.filter_server, key, capacity, error_rate, shards=shards)
        else:
            self.filter = BloomFilter(
                self.filter_server,
                key,
                capacity,
                error_rate,
                window=window,
                layout=layout,
                shards=shards,
            )

    @property
    def can_forget(self) -> bool:
        """True if the filter can forget a request (a cuckoo filter: ``BLOOMFILTER_KIND``)."""
        return isinstance(self.filter, CuckooFilter)

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
            "layout": settings.get("BLOOMFILTER_LAYOUT") or None,
            "shards": settings.getint("BLOOMFILTER_SHARDS") or None,
            "filter_server": filter_server(settings),
            "kind": filter_kind(settings.get("BLOOMFILTER_KIND")),
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
        try:
            instance.open()  # scrapy-redis's scheduler does not call open()
        except KeyTypeError as error:
            instance.refuse(spider, error)
        return instance

    def refuse(self, spider: Spider, error: KeyTypeError) -> None:
        """The key holds something else: the crawl stops before it fetches anything, with one
        error line that says what to do. (An exception here would bury that line among the
        tracebacks of Scrapy's own failures to close a spider that never opened.)"""
        self.refused = error
        self.logger.error("%s", error)
        crawler = spider.crawler

        def close(spider: Spider) -> Any:
            reason = "dupefilter key holds another type"
            engine: Any = crawler.engine
            if hasattr(engine, "close_spider_async"):  # Scrapy 2.14 and newer
                return deferred_from_coro(engine.close_spider_async(reason=reason))
            return engine.close_spider(spider, reason)

        # Kept by the dupefilter: Scrapy's signals hold their receivers weakly.
        self._close_on_open = close
        crawler.signals.connect(close, signal=scrapy_signals.spider_opened)

    def open(self) -> None:
        """Reserves the filter if the key is missing; leaves an existing filter alone."""
        try:
            created = self.filter.create()
        except KeyTypeError as error:
            raise _explain(error, server_url(self.filter_server), self.kind) from None
        info = self.filter.info()
        if isinstance(self.filter, CuckooFilter):
            cuckoo = self.filter.options
            self.logger.info(
                "Cuckoo filter dupefilter: created %s (capacity %d, error rate %g, %d bytes)"
                if created
                else "Cuckoo filter dupefilter: resuming with %s (%d requests seen, %d bytes)",
                self.key,
                *(
                    (cuckoo.capacity, cuckoo.error_rate or 0.0)
                    if created
                    else (info.get("Number of items inserted"),)
                ),
                info.get("Size"),
            )
            return
        options = self.filter.options
        window = f", window {options.window} s" if options.window else ""
        window += f", layout {options.layout}" if options.layout else ""
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
        self.filter.drop()

    def request_seen(self, request: Request) -> bool:
        """True if the request was (probably) seen before; records it otherwise."""
        if self.refused is not None:
            return True  # the crawl is stopping: nothing is scheduled
        fingerprint = self.request_fingerprint(request)
        if isinstance(self.filter, CuckooFilter):
            return not self.filter.add_unique(fingerprint)
        return not self.filter.add(fingerprint)

    def forget(self, request: Request) -> bool:
        """Forgets the request (``CF.DEL`` of its fingerprint): the next request for it is new
        again, and scheduled. True if the filter held it; False if it did not (nothing changed).

        Only a cuckoo filter can (``BLOOMFILTER_KIND = "cuckoo"``): with a Bloom filter this
        raises ``NotImplementedError``. Forget only requests this dupefilter took in (not
        ``dont_filter`` ones, which it never saw): forgetting one it never held may, at the
        filter's error rate, forget another request that shares its fingerprint's bits."""
        if not isinstance(self.filter, CuckooFilter):
            raise NotImplementedError(
                f"the dupefilter's {self.key} is a Bloom filter, which cannot forget a request: "
                'set BLOOMFILTER_KIND = "cuckoo" for a filter that can (on a new key)'
            )
        return self.filter.delete(self.request_fingerprint(request))

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


def _explain(error: KeyTypeError, url: str, kind: str = "bloom") -> KeyTypeError:
    """The error for a dupefilter key that holds something else, with what to do about it (`url`:
    the server's, for the command to run; `kind`: ``BLOOMFILTER_KIND``)."""
    other = {"MBbloom--": "bloom", "MBbloomCF": "cuckoo"}.get(error.key_type)
    if error.key_type == "set":
        option = " --kind cuckoo" if kind == "cuckoo" else ""
        hint = (
            "it is a scrapy-redis fingerprint set: convert it with "
            f"`python -m redis_bf.migrate --url {url}{option} {error.key}`, or delete it to "
            "start the crawl afresh"
        )
    elif other is not None and other != kind:
        hint = (
            f'set BLOOMFILTER_KIND = "{other}" to resume with it (a filter cannot be turned '
            "into the other kind: neither can list what it holds), or use another "
            "SCHEDULER_DUPEFILTER_KEY, or delete it to start the crawl afresh"
        )
    elif error.key_type == "string":
        hint = (
            "a string is what client-side Bloom filters such as scrapy-redis-bloomfilter keep; "
            "it cannot be converted (see `python -m redis_bf.migrate --help`): use another "
            "SCHEDULER_DUPEFILTER_KEY, or delete it to start the crawl afresh"
        )
    else:
        hint = "use another SCHEDULER_DUPEFILTER_KEY, or delete the key"
    return KeyTypeError(error.key, error.key_type, hint, expected=error.expected)


def dupefilter_of(crawler: Crawler) -> Any:
    """The dupefilter of the running crawl: its scheduler's ``df`` (Scrapy's scheduler and
    scrapy-redis's both keep it there). ``RuntimeError`` before the spider has started."""
    try:
        engine = getattr(crawler, "engine", None)
    except RuntimeError:  # Scrapy 2.19 before the crawl starts
        engine = None
    scheduler = getattr(engine, "scheduler", None)  # Scrapy 2.19 and newer
    if scheduler is None:  # before: the engine's slot
        slot = getattr(engine, "slot", None) or getattr(engine, "_slot", None)
        scheduler = getattr(slot, "scheduler", None)
    dupefilter = getattr(scheduler, "df", None)
    if dupefilter is None:
        raise RuntimeError("the crawl has no scheduler with a dupefilter yet: is it running?")
    return dupefilter


def forget(spider: Spider | Crawler, request: Request) -> bool:
    """Makes the running crawl's dupefilter forget ``request`` (``RFPDupeFilter.forget``), so
    that it is scheduled again the next time it is requested: a link to it, the next run of the
    crawl, or a callback or errback that yields it again (without ``dont_filter``). True if the
    dupefilter held it.

    ``spider`` is the spider (or its crawler). The dupefilter must be this package's with
    ``BLOOMFILTER_KIND = "cuckoo"``: ``TypeError`` for another dupefilter class,
    ``NotImplementedError`` for a Bloom filter."""
    crawler = getattr(spider, "crawler", spider)
    dupefilter = dupefilter_of(crawler)  # type: ignore[arg-type]
    if not isinstance(dupefilter, RFPDupeFilter):
        raise TypeError(
            f"the crawl's dupefilter is {type(dupefilter).__module__}."
            f"{type(dupefilter).__qualname__}, which cannot forget: set DUPEFILTER_CLASS = "
            '"redis_bf.scrapy.RFPDupeFilter" and BLOOMFILTER_KIND = "cuckoo"'
        )
    forgotten: bool = dupefilter.forget(request)
    stats = getattr(crawler, "stats", None)
    if forgotten and stats is not None:
        stats.inc_value("dupefilter/forgotten")
    return forgotten


class RetryForgetMiddleware:
    """A downloader middleware: a request that failed (a response status in
    ``FORGET_HTTP_CODES``, by default ``RETRY_HTTP_CODES``, or a download error) once Scrapy's
    ``RetryMiddleware`` has given up on it (or with ``RETRY_ENABLED = False``) is forgotten by
    the dupefilter and sent again through it, at most ``FORGET_RETRY_TIMES`` times (default 1)
    per request, ``RETRY_PRIORITY_ADJUST`` lower (the failed response then goes no further, as
    with ``RetryMiddleware``). After the last try the failure goes on to the spider as before
    (HttpErrorMiddleware, its errback), and the request stays forgotten: the next link to it, or
    the next run of the crawl, schedules it again.

    Needs this package's dupefilter with ``BLOOMFILTER_KIND = "cuckoo"``; with another (a Bloom
    filter cannot forget) it logs a warning and stays out (``NotConfigured``). Enable it after
    ``RetryMiddleware`` (550), so that it sees what that one gave up on::

        DOWNLOADER_MIDDLEWARES = {"redis_bf.scrapy.RetryForgetMiddleware": 540}

    Stats: ``dupefilter/forgotten``, ``forget_retry/count``, ``forget_retry/max_reached``.
    """

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        self.crawler = crawler
        codes = settings.getlist("FORGET_HTTP_CODES") or settings.getlist("RETRY_HTTP_CODES")
        self.codes = {int(code) for code in codes}
        self.max_times = settings.getint("FORGET_RETRY_TIMES", 1)
        self.priority_adjust = settings.getint("RETRY_PRIORITY_ADJUST", -1)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RetryForgetMiddleware:
        """The middleware, or ``NotConfigured`` (which Scrapy logs as a warning, "Disabled
        redis_bf.scrapy.RetryForgetMiddleware: <why>") if the dupefilter cannot forget."""
        settings = crawler.settings
        dupefilter = settings.get("DUPEFILTER_CLASS")
        dupefilter_class = load_object(dupefilter) if isinstance(dupefilter, str) else dupefilter
        if not (isinstance(dupefilter_class, type) and issubclass(dupefilter_class, RFPDupeFilter)):
            raise NotConfigured(
                f"the dupefilter is {dupefilter}, not {__name__}.RFPDupeFilter: it cannot forget "
                "requests"
            )
        if filter_kind(settings.get("BLOOMFILTER_KIND")) != "cuckoo":
            raise NotConfigured(
                "the dupefilter keeps a Bloom filter, which cannot forget requests: failed "
                'requests stay seen (set BLOOMFILTER_KIND = "cuckoo")'
            )
        return cls(crawler)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        if response.status in self.codes:
            return self.failed(request, f"HTTP {response.status}") or response
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | None:
        if isinstance(exception, IgnoreRequest):
            return None
        return self.failed(request, type(exception).__name__)

    def failed(self, request: Request, reason: str) -> Request | None:
        """Forgets the request; the request to send again through the dupefilter, or None once
        it has had its ``FORGET_RETRY_TIMES``."""
        forget(self.crawler, request)
        stats = self.crawler.stats
        tries = int(request.meta.get("forget_retry_times", 0)) + 1
        if tries > self.max_times:
            if stats is not None:
                stats.inc_value("forget_retry/max_reached")
            logger.debug(
                "Forgot %(request)s (%(reason)s): the next request for it is new",
                {"request": request, "reason": reason},
            )
            return None
        if stats is not None:
            stats.inc_value("forget_retry/count")
        logger.debug(
            "Forgot %(request)s (%(reason)s) and sent it again through the dupefilter "
            "(%(tries)d of %(max)d)",
            {"request": request, "reason": reason, "tries": tries, "max": self.max_times},
        )
        again: Request = request.replace(dont_filter=False)
        again.meta["forget_retry_times"] = tries
        again.priority = request.priority + self.priority_adjust
        return again
