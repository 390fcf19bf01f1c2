"""How a filter is created, checked before any command is sent (the spec's "options",
docs/sharding.md): ``FilterOptions`` for a Bloom filter, ``CuckooOptions`` for a cuckoo filter,
each spelling out its ``*.RESERVE`` and ``*.INSERT`` arguments, its shard's options
(``resized``) and what every process of a sharded filter must give alike (``identity``, kept in
the manifest). No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

MAX_WINDOW = 315_576_000  # the longest window the module takes: ten years, in seconds


def window_seconds(value: Any, name: str = "window") -> int | None:
    """A window as whole seconds, or None for none (None, an empty string, or 0).

    Takes an int, a float or str holding whole seconds, or a ``datetime.timedelta``.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if not seconds.is_integer():
        raise ValueError(f"{name} must be whole seconds, not {value!r}")
    return int(seconds) or None


# The layouts BF.RESERVE and BF.INSERT take (LAYOUT), as the package spells them.
LAYOUTS = ("classic", "blocked")


@dataclass(frozen=True)
class FilterOptions:
    """How a missing filter is created.

    The one place that spells out the creation arguments, for ``BF.RESERVE`` and for ``BF.INSERT``:
    a new creation option is one more field here and one more pair in both lists.

    ``window`` (whole seconds or a ``timedelta``, optional) makes a windowed filter: an item is
    remembered for at least ``window`` seconds and forgotten by 1.25 x ``window``, and
    ``capacity`` counts the items of one window. It is kept as seconds; None, 0 and
    ``timedelta(0)`` mean no window.

    ``layout`` (``"classic"`` or ``"blocked"``, optional) is the filter's layout (``LAYOUT``): a
    blocked filter keeps an item's bits in one cache line, faster on filters bigger than the
    caches for about 5% more memory, and RedisBloom cannot read it. None: the server's
    ``bf.layout``. Like the rest, it applies only when the filter is created.
    """

    capacity: int
    error_rate: float
    window: int | None = None
    layout: str | None = None

    def __init__(
        self,
        capacity: int,
        error_rate: float,
        window: int | timedelta | None = None,
        layout: str | None = None,
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise TypeError(f"capacity must be an int, not {type(capacity).__name__}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        if not 0.0 < float(error_rate) < 1.0:
            raise ValueError(f"error_rate must be strictly between 0 and 1, not {error_rate}")
        if window is not None and not isinstance(window, timedelta):
            if isinstance(window, bool) or not isinstance(window, int):
                raise TypeError(
                    f"window must be an int (seconds) or a timedelta, not {type(window).__name__}"
                )
        # None, 0 and timedelta(0) alike: no window (as the dupefilter's setting and
        # redis-bf-migrate --window take them).
        seconds = None if window is None else window_seconds(window)
        if seconds is not None and not 1 <= seconds <= MAX_WINDOW:
            raise ValueError(
                f"window must be from 1 to {MAX_WINDOW} seconds (ten years), or 0 or None for "
                f"none, not {window!r}"
            )
        if layout is not None and layout not in LAYOUTS:
            raise ValueError(
                f"layout must be 'classic' or 'blocked' (or None for the server's bf.layout), "
                f"not {layout!r}"
            )
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "error_rate", error_rate)
        object.__setattr__(self, "window", seconds)
        object.__setattr__(self, "layout", layout)

    def optional_args(self) -> list[Any]:
        """The creation arguments after the error rate and capacity: ``WINDOW``, ``LAYOUT``."""
        window = [] if self.window is None else ["WINDOW", self.window]
        layout = [] if self.layout is None else ["LAYOUT", self.layout.upper()]
        return [*window, *layout]

    def reserve_args(self) -> list[Any]:
        """``BF.RESERVE key <these>``."""
        return [float(self.error_rate), self.capacity, *self.optional_args()]

    def insert_args(self) -> list[Any] | None:
        """``BF.INSERT key <these> ITEMS ...``: applied only when the call creates the filter."""
        return ["CAPACITY", self.capacity, "ERROR", float(self.error_rate), *self.optional_args()]

    def resized(self, capacity: int) -> FilterOptions:
        """The same filter for another capacity (a shard's)."""
        return FilterOptions(capacity, self.error_rate, self.window, self.layout)

    def identity(self) -> dict[str, Any]:
        """What every process of a sharded filter must give alike (kept at its key)."""
        return {"error_rate": float(self.error_rate), "window": self.window}

    def describe(self) -> str:
        """The parameters, for a ``repr``."""
        window = "" if self.window is None else f", window={self.window}"
        layout = "" if self.layout is None else f", layout={self.layout!r}"
        return f"capacity={self.capacity}, error_rate={self.error_rate}{window}{layout}"


# A cuckoo filter's parameters, as the module takes them (src/cuckoo/create.rs).
CUCKOO_MIN_ERROR = 1e-12
BOUNDED_BUCKET_SIZE = 4  # a filter with an error rate (ERROR) has buckets of 4 slots
BOUNDED_MAX_ITERATIONS = 500  # and, unless told, these: what CF.INSERT ... ERROR makes
BOUNDED_EXPANSION = 2
# RedisBloom's kind (no error rate): its defaults, spelled out on every creation so that the
# server's bf.cf-* configs never decide.
REDISBLOOM_BUCKET_SIZE = 2
REDISBLOOM_MAX_ITERATIONS = 20
REDISBLOOM_EXPANSION = 1


def whole(name: str, value: Any, low: int, high: int) -> int:
    """An int parameter within ``low..high``: ``TypeError`` or ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, not {value}")
    return value


@dataclass(frozen=True)
class CuckooOptions:
    """How a missing cuckoo filter is created.

    ``error_rate`` (the default, 0.01) makes this module's bounded filter (``ERROR``): its
    false-positive rate stays at most ``error_rate`` however far it grows, with buckets of 4, up to
    ``max_iterations`` evictions (500) before it grows, by ``expansion`` (2) each time. Then
    ``CF.INSERT key CAPACITY c ERROR e ITEMS ...`` says all of it, and every write carries it.

    ``error_rate=None`` makes RedisBloom's kind: ``bucket_size`` (2), ``max_iterations`` (20) and
    ``expansion`` (1), RedisBloom's defaults, spelled out; its false-positive rate grows with every
    sub-filter. ``CF.INSERT`` cannot carry those, so a write creates a missing key with a
    ``CF.RESERVE`` first, and inserts with ``NOCREATE`` (so does a bounded filter given another
    ``max_iterations`` or ``expansion``): a missing key is never created with the server's
    ``bf.cf-*`` defaults either way.
    """

    capacity: int
    error_rate: float | None = 0.01
    bucket_size: int = BOUNDED_BUCKET_SIZE
    max_iterations: int = BOUNDED_MAX_ITERATIONS
    expansion: int = BOUNDED_EXPANSION

    def __init__(
        self,
        capacity: int,
        error_rate: float | None = 0.01,
        *,
        bucket_size: int | None = None,
        max_iterations: int | None = None,
        expansion: int | None = None,
    ) -> None:
        if error_rate is not None:
            if isinstance(error_rate, bool) or not isinstance(error_rate, int | float):
                raise TypeError(f"error_rate must be a float, not {type(error_rate).__name__}")
            if not CUCKOO_MIN_ERROR <= float(error_rate) < 1.0:
                raise ValueError(
                    f"error_rate must be from {CUCKOO_MIN_ERROR:g} up to, not including, 1 (or "
                    f"None for RedisBloom's kind of cuckoo filter), not {error_rate}"
                )
            if bucket_size is not None:
                raise ValueError(
                    "bucket_size goes with error_rate=None: a cuckoo filter with an error rate "
                    "has buckets of 4"
                )
            bucket_size = BOUNDED_BUCKET_SIZE
            if max_iterations is None:
                max_iterations = BOUNDED_MAX_ITERATIONS
            if expansion is None:
                expansion = BOUNDED_EXPANSION
        else:
            if bucket_size is None:
                bucket_size = REDISBLOOM_BUCKET_SIZE
            if max_iterations is None:
                max_iterations = REDISBLOOM_MAX_ITERATIONS
            if expansion is None:
                expansion = REDISBLOOM_EXPANSION
        whole("bucket_size", bucket_size, 1, 255)
        whole("max_iterations", max_iterations, 1, 65535)
        whole("expansion", expansion, 0, 32768)
        # The module keeps an expansion as a power of two (3 is 4).
        expansion = 0 if expansion == 0 else 1 << (expansion - 1).bit_length()
        whole("capacity", capacity, 2 * bucket_size, 2**63 - 1)
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "error_rate", None if error_rate is None else float(error_rate))
        object.__setattr__(self, "bucket_size", bucket_size)
        object.__setattr__(self, "max_iterations", max_iterations)
        object.__setattr__(self, "expansion", expansion)

    @property
    def bounded(self) -> bool:
        """A filter with an error rate (this module's kind)."""
        return self.error_rate is not None

    def reserve_args(self) -> list[Any]:
        """``CF.RESERVE key <these>``: every parameter spelled out."""
        args: list[Any] = [self.capacity]
        if not self.bounded:
            args += ["BUCKETSIZE", self.bucket_size]
        args += ["MAXITERATIONS", self.max_iterations, "EXPANSION", self.expansion]
        if self.error_rate is not None:
            args += ["ERROR", self.error_rate]
        return args

    def insert_args(self) -> list[Any] | None:
        """``CF.INSERT key <these> ITEMS ...`` when they say the whole creation (a bounded filter
        with the bounded defaults); None when they cannot (``CF.RESERVE`` then comes first)."""
        if (
            self.error_rate is None
            or self.max_iterations != BOUNDED_MAX_ITERATIONS
            or self.expansion != BOUNDED_EXPANSION
        ):
            return None
        return ["CAPACITY", self.capacity, "ERROR", self.error_rate]

    def buckets(self) -> int:
        """The first sub-filter's buckets: ``capacity / bucket size`` up to a power of two."""
        wanted = max(1, self.capacity // self.bucket_size)
        return 1 << (wanted - 1).bit_length()

    def resized(self, capacity: int) -> CuckooOptions:
        """The same filter for another capacity (a shard's: at least two buckets)."""
        return CuckooOptions(
            max(capacity, 2 * self.bucket_size),
            self.error_rate,
            bucket_size=None if self.bounded else self.bucket_size,
            max_iterations=self.max_iterations,
            expansion=self.expansion,
        )

    def identity(self) -> dict[str, Any]:
        """What every process of a sharded filter must give alike (kept at its key)."""
        return {
            "error_rate": self.error_rate,
            "bucket_size": self.bucket_size,
            "max_iterations": self.max_iterations,
            "expansion": self.expansion,
        }

    def describe(self) -> str:
        """The parameters, for a ``repr``: those that are not the kind's defaults."""
        text = f"capacity={self.capacity}, error_rate={self.error_rate}"
        defaults = (
            (BOUNDED_BUCKET_SIZE, BOUNDED_MAX_ITERATIONS, BOUNDED_EXPANSION)
            if self.bounded
            else (REDISBLOOM_BUCKET_SIZE, REDISBLOOM_MAX_ITERATIONS, REDISBLOOM_EXPANSION)
        )
        for name, value, default in zip(
            ("bucket_size", "max_iterations", "expansion"),
            (self.bucket_size, self.max_iterations, self.expansion),
            defaults,
            strict=True,
        ):
            if value != default:
                text += f", {name}={value}"
        return text
