"""Python helpers for redis-bf, the Redis module with RedisBloom's ``BF.*`` commands.

- ``redis_bf.BloomFilter``: a filter at a key (or spread over ``shards`` keys of a cluster), one
  command per item or per batch; ``redis_bf.asyncio.BloomFilter``: the same for asyncio.
- ``redis_bf.CuckooFilter`` (and ``redis_bf.asyncio.CuckooFilter``): a cuckoo filter, which can
  also forget an item (``delete``).
- ``redis_bf.scrapy.RFPDupeFilter``: a scrapy-redis dupefilter over it (needs Scrapy and
  scrapy-redis, not imported here).
- ``python -m redis_bf.migrate``: converts a scrapy-redis fingerprint set into a filter.
- ``redis_bf.module_path()``: where the module is (``pip install 'redis-bf[server]'`` brings it
  on Linux, or ``pip install --find-links DIR 'redis-bf[server]'`` from a folder of wheels);
  ``redis-bf-server`` (``python -m redis_bf.server``): a server with it, and
  ``redis_bf.testing``: the same for a test session (pytest fixtures).
"""

from ._errors import ErrorRateUnsupportedError
from ._options import CuckooOptions
from .bloom import (
    BloomFilter,
    BloomFilterError,
    FilterFullError,
    FilterMismatchError,
    FilterOptions,
    KeyTypeError,
    ModuleMissingError,
    NotReplicatedError,
)
from .cuckoo import CuckooFilter
from .defaults import DEFAULT_CAPACITY, DEFAULT_ERROR_RATE
from .module import ModuleNotInstalledError, module_path

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_ERROR_RATE",
    "BloomFilter",
    "BloomFilterError",
    "CuckooFilter",
    "CuckooOptions",
    "ErrorRateUnsupportedError",
    "FilterFullError",
    "FilterMismatchError",
    "FilterOptions",
    "KeyTypeError",
    "ModuleMissingError",
    "ModuleNotInstalledError",
    "NotReplicatedError",
    "module_path",
]
