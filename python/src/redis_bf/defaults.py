"""The defaults for crawling, shared by the Scrapy dupefilter and the migration command.

A false positive of a crawler's dedup filter is a page that is never fetched, so the defaults favour
a low error rate over a small filter (the arithmetic is in the package README, "Defaults"):

- ``DEFAULT_ERROR_RATE`` = 1e-6: a scaling filter keeps its compounded false-positive rate below
  this at any fill, so a crawl of N distinct requests expects to lose at most N x 1e-6 pages
  (at most 10 at 10M URLs, 100 at 100M), for about 5.3 bytes per URL at 100M.
- ``DEFAULT_CAPACITY`` = 100,000: the first sub-filter (about 369 KiB); the filter doubles its
  capacity each time it fills, so the default serves any crawl size. A crawl that knows its size
  saves memory by reserving for it (``BLOOMFILTER_CAPACITY``).
"""

DEFAULT_CAPACITY = 100_000
DEFAULT_ERROR_RATE = 1e-6
