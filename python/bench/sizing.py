"""What the dupefilter's defaults cost and lose at 5,000, 10M and 100M distinct URLs, measured.

For each size N, a real filter is reserved with the defaults (``BF.RESERVE k 1e-06 100000``, as
the dupefilter does) and filled inside the server (a Lua script, batches of ``BF.MADD``) with N
distinct fingerprint-like items (the SHA-1 hex of ``url:<i>``, as scrapy-redis fingerprints look).
Reported: the chain it grew into and its ``Size`` (``BF.INFO``); the pages a crawl would lose,
three ways: the bound (N x error rate: a scaling filter's compounded rate stays below the error
rate), the expectation from the sub-filters' real bits and hash counts (``BF.DEBUG``), integrated
over the fill, and the count measured in the fill itself (items ``BF.MADD`` answered 0 for when
they were added the first time: exactly the pages a crawl would never fetch).

The two usual alternatives at the same sizes, for comparison: a scrapy-redis set (bytes per
fingerprint as measured by the crawl benchmark, times N: an estimate) and scrapy-redis-bloomfilter's
fixed 2^30-bit string with 6 hashes (expected losses from the textbook formula, a lower bound: its
first hash function is the sum of the characters, which only makes it worse).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

import redis

FILL = """
local key, prefix, first, last = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local batch, new = {}, 0
for i = first, last do
  batch[#batch + 1] = redis.sha1hex(prefix .. i)
  if #batch == 1000 or i == last then
    local answers = redis.call('BF.MADD', key, unpack(batch))
    for j = 1, #answers do new = new + answers[j] end
    batch = {}
  end
end
return new
"""


@dataclass
class SubFilter:
    bits: int
    hashes: int
    capacity: int


@dataclass
class Sized:
    items: int
    info: dict[str, Any]
    subfilters: list[SubFilter]
    lost_in_fill: int
    seconds: float


def subfilters(client: redis.Redis, key: str) -> list[SubFilter]:
    """Bits, hashes and capacity of each sub-filter, from BF.DEBUG's ``name:value`` fields."""
    found = []
    for line in client.execute_command("BF.DEBUG", key)[1:]:
        fields = dict(
            re.findall(r"(\w+):([0-9.e+-]+)", line.decode() if isinstance(line, bytes) else line)
        )
        found.append(SubFilter(int(fields["bits"]), int(fields["hashes"]), int(fields["capacity"])))
    return found


def false_positive_rate(chain: list[SubFilter], items: float) -> float:
    """The chance that an absent item is taken for present, with ``items`` added in order."""
    absent, left = 1.0, items
    for sub in chain:
        held = min(left, sub.capacity)
        left -= held
        absent *= 1 - (1 - math.exp(-sub.hashes * held / sub.bits)) ** sub.hashes
        if left <= 0:
            break
    return 1 - absent


def expected_lost(chain: list[SubFilter], items: int, steps: int = 4000) -> float:
    """Expected new items taken for seen over a whole fill of ``items`` (midpoint rule)."""
    return (
        sum(false_positive_rate(chain, items * (i + 0.5) / steps) for i in range(steps))
        * items
        / steps
    )


def bitstring_expected_lost(
    items: int, bits: int = 1 << 30, hashes: int = 6, steps: int = 4000
) -> float:
    chain = [SubFilter(bits, hashes, items)]
    return expected_lost(chain, items, steps)


def measure(client: redis.Redis, items: int, capacity: int, error_rate: float) -> Sized:
    key = f"sizing:{items}"
    client.execute_command("BF.RESERVE", key, error_rate, capacity)
    fill = client.register_script(FILL)
    started = time.monotonic()
    new = 0
    step = 1_000_000
    for first in range(0, items, step):
        new += int(fill(keys=[key], args=["url:", first, min(items, first + step) - 1]))
    seconds = time.monotonic() - started
    reply = client.execute_command("BF.INFO", key)
    info = {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}
    sized = Sized(items, info, subfilters(client, key), items - new, seconds)
    client.delete(key)
    return sized


def size_text(size: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


def table(
    client: redis.Redis,
    sizes: list[int],
    capacity: int,
    error_rate: float,
    set_bytes_per_item: float | None = None,
    bitstring_bytes: int | None = None,
) -> str:
    rows = [
        f"Defaults: BLOOMFILTER_CAPACITY {capacity:,}, BLOOMFILTER_ERROR_RATE {error_rate:g} "
        "(filled for real, in the server)",
        "",
        "| distinct URLs | filter grown to | Size (BF.INFO) | bytes per URL | pages lost: bound "
        "(N x rate) | expected | measured in the fill |",
        "|---|---|---|---|---|---|---|",
    ]
    for items in sizes:
        sized = measure(client, items, capacity, error_rate)
        size = int(sized.info["Size"])
        rows.append(
            f"| {items:,} | {len(sized.subfilters)} sub-filter(s), "
            f"capacity {int(sized.info['Capacity']):,}, "
            f"{sized.subfilters[0].hashes} to {sized.subfilters[-1].hashes} hashes "
            f"| {size_text(size)} | {size / items:.2f} | {items * error_rate:.3g} | "
            f"{expected_lost(sized.subfilters, items):.3g} | {sized.lost_in_fill:,} |"
        )
    if set_bytes_per_item or bitstring_bytes:
        rows += ["", "The alternatives at the same sizes:", ""]
        rows += [
            "| distinct URLs | scrapy-redis set (estimate) | scrapy-redis-bloomfilter: memory "
            "| its expected pages lost (at least) |",
            "|---|---|---|---|",
        ]
        for items in sizes:
            set_cell = size_text(items * set_bytes_per_item) if set_bytes_per_item else "-"
            bit_cell = size_text(bitstring_bytes) if bitstring_bytes else "128.0 MiB"
            lost = bitstring_expected_lost(items)
            rows.append(f"| {items:,} | {set_cell}, none lost | {bit_cell} | {lost:,.3g} |")
    return "\n".join(rows)
