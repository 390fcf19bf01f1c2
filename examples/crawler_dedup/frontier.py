"""A crawler's front end: decide, for each URL discovered, whether to fetch it.

The question is "have I seen this URL before?", asked once per URL, millions of times. Three ways
to answer it from Redis, each behind the same method, `first_time(url) -> bool`:

- `BloomSeen`: redis-bf. One `BF.ADD` per URL; its reply is the answer (1: new, fetch it).
- `ExactSeen`: the usual exact way, a Redis set of request fingerprints (SHA-1 of the URL, as
  Scrapy's RFPDupeFilter keeps them). One `SADD` per URL; exact, and costly in memory.
- `ClientBloomSeen`: the usual do-it-yourself Bloom filter over a Redis string, with the hashing
  in the client and one `SETBIT` per probe: k round trips per URL, and a string that Redis caps at
  512 MB.

Every class counts the commands it sends, so the benchmark can report round trips per URL.
"""

import hashlib
import math
import sys

import redis


def connect(port: int) -> redis.Redis:
    """A client of the server at 127.0.0.1:`port`, which must have the Bloom filter module: a
    server without it (a packaged redis-server on 6379, say) stops the example with one line."""
    r = redis.Redis(host="127.0.0.1", port=port)
    try:
        r.execute_command("BF.EXISTS", "example:probe", "x")
    except redis.ResponseError as error:
        if "unknown command" not in str(error):
            raise
        sys.exit(
            f"error: the Redis server at 127.0.0.1:{port} has no Bloom filter module loaded: "
            "start one with `make run` (it prints its port) and pass that port with --port"
        )
    return r


class BloomSeen:
    """redis-bf: one BF.ADD per URL."""

    name = "redis-bf BF.ADD"

    def __init__(self, r: redis.Redis, key: str, capacity: int, error_rate: float):
        self.r, self.key = r, key
        # NONSCALING: sized for the crawl, with the same bits and hash count as the client-side
        # filter below, so that the two are compared like for like.
        r.bf().create(key, error_rate, capacity, noScale=True)
        self.round_trips = 0

    def first_time(self, url: str) -> bool:
        self.round_trips += 1
        return bool(self.r.bf().add(self.key, url))

    def memory(self) -> int:
        return self.r.memory_usage(self.key)

    def would_fetch(self, urls) -> list:
        """Measurement only: whether each URL would be called new now, without adding it."""
        return [not found for found in self.r.bf().mexists(self.key, *urls)]


class ExactSeen:
    """A Redis set of 20-byte SHA-1 fingerprints: one SADD per URL."""

    name = "set of SHA-1 fingerprints (SADD)"

    def __init__(self, r: redis.Redis, key: str, capacity: int, error_rate: float):
        self.r, self.key = r, key
        self.round_trips = 0

    def first_time(self, url: str) -> bool:
        self.round_trips += 1
        fingerprint = hashlib.sha1(url.encode()).digest()
        return self.r.sadd(self.key, fingerprint) == 1

    def memory(self) -> int:
        return self.r.memory_usage(self.key, samples=0)

    def would_fetch(self, urls) -> list:
        fingerprints = [hashlib.sha1(url.encode()).digest() for url in urls]
        return [not found for found in self.r.smismember(self.key, fingerprints)]


class ClientBloomSeen:
    """A Bloom filter over a Redis string: hashing in the client, one SETBIT per probe."""

    name = "client-side Bloom (SETBIT x k)"

    def __init__(self, r: redis.Redis, key: str, capacity: int, error_rate: float):
        self.r, self.key = r, key
        # The textbook sizing: m = -n ln p / ln(2)^2 bits, k = ceil(ln 2 * m / n).
        bits_per_item = -math.log(error_rate) / math.log(2) ** 2
        self.bits = int(capacity * bits_per_item) // 64 * 64 + 64
        self.hashes = math.ceil(math.log(2) * bits_per_item)
        self.round_trips = 0

    def probes(self, url: str):
        # Double hashing over two 64-bit halves of a SHA-256: probe i is h1 + i * h2 (mod m).
        digest = hashlib.sha256(url.encode()).digest()
        h1 = int.from_bytes(digest[:8], "little")
        h2 = int.from_bytes(digest[8:16], "little") | 1
        return [(h1 + i * h2) % self.bits for i in range(self.hashes)]

    def first_time(self, url: str) -> bool:
        new = False
        for bit in self.probes(url):
            self.round_trips += 1
            # SETBIT answers the bit's old value: any 0 means the URL was not there.
            if self.r.setbit(self.key, bit, 1) == 0:
                new = True
        return new

    def memory(self) -> int:
        return self.r.memory_usage(self.key, samples=0)

    def would_fetch(self, urls) -> list:
        pipe = self.r.pipeline(transaction=False)
        for url in urls:
            for bit in self.probes(url):
                pipe.getbit(self.key, bit)
        bits = pipe.execute()
        k = self.hashes
        return [not all(bits[i * k : (i + 1) * k]) for i in range(len(urls))]


APPROACHES = [BloomSeen, ExactSeen, ClientBloomSeen]


def crawl(seen, discovered):
    """The front end itself: yields the URLs to fetch, each once."""
    for url in discovered:
        if seen.first_time(url):
            yield url
