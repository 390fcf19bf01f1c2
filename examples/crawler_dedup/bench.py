"""Runs the crawler front end three ways over the same synthetic crawl and compares them.

Usage: python bench.py [--port 6379] [--urls 1000000] [--error-rate 0.01]

The crawl is `--urls` discovered URLs, of which 10% are URLs discovered before (links to pages
already seen). Each approach (see frontier.py) answers "fetch it?" for every URL, one call per URL,
as a crawler asks. For each it prints URLs per second, Redis round trips per URL, the server memory
its key takes (MEMORY USAGE, and used_memory before and after), and the measured false-positive
rate: the share of new URLs it wrongly called "seen" during the crawl (pages it would never fetch),
and the rate once the crawl is done, on fresh URLs. A URL seen before and called new (a false
negative) would be a bug: the script stops if one happens.

It runs against whatever server is on --port (it must have the module): it uses the keys
`crawl:*` and deletes them, and leaves everything else alone. A run of 1,000,000 URLs takes from a
quarter of an hour to more than half an hour, most of it in the client-side filter's k round trips
per URL: every PROGRESS_SECONDS it says on standard error how far each approach has come.
"""

import argparse
import random
import sys
import time

import redis

from frontier import APPROACHES, connect


def synthetic_crawl(count: int, seed: int = 7):
    """`count` URLs over 5,000 hosts, every tenth one a URL discovered before."""
    rng = random.Random(seed)
    urls, stream = [], []
    for index in range(count):
        if index % 10 == 9:
            stream.append(urls[rng.randrange(len(urls))])
        else:
            host = rng.randrange(5000)
            url = f"https://www.site{host}.example/articles/{index}?ref=home&page={index % 97}"
            urls.append(url)
            stream.append(url)
    return stream


PROGRESS_SECONDS = 10


def progress(name: str, done: int, total: int, elapsed: float) -> None:
    """One line on standard error: how far an approach has come, and its time left at this pace."""
    rate = done / elapsed
    left = (total - done) / rate
    print(
        f"{name}: {done:,} of {total:,} URLs, {rate:,.0f} URLs/s, "
        f"about {left / 60:.1f} min left for this approach",
        file=sys.stderr,
        flush=True,
    )


def used_memory(r: redis.Redis) -> int:
    return r.info("memory")["used_memory"]


def run(r: redis.Redis, approach, stream, distinct: int, error_rate: float):
    key = f"crawl:{approach.__name__}"
    r.delete(key)
    before = used_memory(r)
    seen = approach(r, key, distinct, error_rate)
    known = set()
    false_positives = new_urls = 0
    start = time.perf_counter()
    reported = start
    for done, url in enumerate(stream, 1):
        first = seen.first_time(url)
        if url in known:
            if first:
                raise SystemExit(f"{seen.name}: a URL seen before was called new: {url}")
        else:
            known.add(url)
            new_urls += 1
            if not first:
                false_positives += 1
        if done % 1000 == 0 and time.perf_counter() - reported >= PROGRESS_SECONDS:
            reported = time.perf_counter()
            progress(seen.name, done, len(stream), reported - start)
    elapsed = time.perf_counter() - start
    # The rate once the crawl is done (the filter at its capacity): fresh URLs, asked in batches
    # without adding them. Not part of the timing.
    fresh = [f"https://fresh.example/{index}" for index in range(max(distinct // 2, 1000))]
    skipped = 0
    for batch in range(0, len(fresh), 1000):
        skipped += sum(not fetch for fetch in seen.would_fetch(fresh[batch : batch + 1000]))
    result = {
        "name": seen.name,
        "urls_per_second": len(stream) / elapsed,
        "round_trips_per_url": seen.round_trips / len(stream),
        "key_bytes": seen.memory(),
        "used_memory_growth": used_memory(r) - before,
        "false_positive_rate": false_positives / new_urls,
        "false_positives": false_positives,
        "new_urls": new_urls,
        "rate_when_full": skipped / len(fresh),
    }
    r.delete(key)
    return result


def size(count: int) -> str:
    for unit, bytes_ in (("MiB", 1048576), ("KiB", 1024)):
        if abs(count) >= bytes_:
            return f"{count / bytes_:.1f} {unit}"
    return f"{count} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--error-rate", type=float, default=0.01)
    args = parser.parse_args()

    r = connect(args.port)
    stream = synthetic_crawl(args.urls)
    distinct = len(set(stream))
    print(
        f"{args.urls:,} URLs discovered, {distinct:,} distinct; "
        f"Bloom filters sized for {distinct:,} at {args.error_rate:.2%}; "
        f"redis {r.info('server')['redis_version']}, redis-py {redis.__version__}"
    )
    print(
        "| approach | URLs/s | round trips/URL | key memory | used_memory growth | "
        "new URLs skipped during the crawl | rate when full |"
    )
    print("|---|---|---|---|---|---|---|", flush=True)
    for approach in APPROACHES:
        result = run(r, approach, stream, distinct, args.error_rate)
        print(
            f"| {result['name']} | {result['urls_per_second']:,.0f} | "
            f"{result['round_trips_per_url']:.1f} | {size(result['key_bytes'])} | "
            f"{size(result['used_memory_growth'])} | "
            f"{result['false_positive_rate']:.3%} ({result['false_positives']:,} of "
            f"{result['new_urls']:,}) | {result['rate_when_full']:.2%} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
