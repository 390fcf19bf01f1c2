"""Recrawl after a window: fetch each page again once it is a week old, never twice within the week.

A crawler that revisits a site wants "have I fetched this URL in the last 7 days?", not "ever".
The popular recipe puts a TTL on the whole filter key: at expiry every URL is new again, and the
crawler refetches the whole site in one burst. A windowed filter forgets each URL on its own
schedule instead: `BF.INSERT key CAPACITY c ERROR e WINDOW 604800 ITEMS url` remembers a URL at
least a week after it was added and forgets it within a week and a quarter. (The write says how to
make the filter, so a key that was deleted comes back windowed.)

Usage: python recrawl.py [--port 6379] [--urls 20000] [--window 2]

The demonstration runs on a short window (seconds, not a week) for three windows: every tenth of a
window the crawler discovers links to 30% of the site's URLs (drawn at random, so with repeats). It prints, per round, how many discoveries were fetched, and shows that no URL is fetched
twice within a window, and that each is fetched again once its window has passed. It compares
the whole-key TTL recipe, which refetches everything at once. It deletes its keys at the end.
"""

import argparse
import random
import time

import redis

from frontier import connect

KEY = "recrawl:seen"
TTL_KEY = "recrawl:seen-ttl"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--urls", type=int, default=20000)
    parser.add_argument("--window", type=int, default=2, help="seconds (a week: 604800)")
    args = parser.parse_args()
    r = connect(args.port)
    r.delete(KEY, TTL_KEY)
    window = args.window
    # Capacity is URLs per window: here every URL may be fetched within one.
    make = ("CAPACITY", args.urls, "ERROR", 0.001, "WINDOW", window)

    urls = [f"https://shop.example/item/{n}" for n in range(args.urls)]
    rng = random.Random(7)
    fetched_at = {}  # url -> times it was fetched (the crawler's own log, for the checks)
    ttl_fetches = []  # fetches per tick with the whole-key TTL recipe
    ttl_fetched_at = {}
    ticks = 30  # three windows, ten ticks each
    start = time.monotonic()
    for tick in range(ticks):
        time.sleep(max(0.0, start + tick * window / 10 - time.monotonic()))
        # Each tick discovers links to 30% of the URLs, at random (some several times).
        discovered = rng.choices(urls, k=args.urls // 10 * 3)
        pipe = r.pipeline(transaction=False)
        for url in discovered:
            pipe.execute_command("BF.INSERT", KEY, *make, "ITEMS", url)
        sent = time.monotonic()
        replies = pipe.execute()
        # A fetch is logged as (before the command was sent, after its reply): the server added
        # the URL in between.
        now = (sent, time.monotonic(), tick)
        for url, (new,) in zip(discovered, replies):
            if new:
                fetched_at.setdefault(url, []).append(now)
        # The TTL recipe: a plain filter whose key expires a window after it was created. NOCREATE:
        # the key may expire between any two commands, and must then be made again with its TTL.
        sent = time.monotonic()
        try:
            answers = r.execute_command("BF.INSERT", TTL_KEY, "NOCREATE", "ITEMS", *discovered)
        except redis.ResponseError as error:
            if "not found" not in str(error):
                raise
            pipe = r.pipeline(transaction=True)
            pipe.execute_command("BF.RESERVE", TTL_KEY, 0.001, args.urls)
            pipe.expire(TTL_KEY, window)
            pipe.execute_command("BF.MADD", TTL_KEY, *discovered)
            answers = pipe.execute()[-1]
        now = (sent, time.monotonic(), tick)
        ttl_fetches.append(sum(answers))
        for url, new in zip(discovered, answers):
            if new:
                ttl_fetched_at.setdefault(url, []).append(now)

    def twice_within(log):
        # Certainly within: the second reply came less than a window after the first was sent,
        # by more than the millisecond the server stamps writes in.
        within = window - 0.001
        return sum(1 for ts in log.values() for a, b in zip(ts, ts[1:]) if b[1] - a[0] < within)

    times = [t for ts in fetched_at.values() for t in ts]
    refetched = sum(1 for ts in fetched_at.values() if len(ts) > 1)
    gaps = [b[0] - a[0] for ts in fetched_at.values() for a, b in zip(ts, ts[1:])]
    per_tick = [0] * ticks
    for _, _, tick in times:
        per_tick[tick] += 1
    print(f"{len(urls):,} URLs, window {window} s, {ticks} ticks of {window / 10:g} s")
    print(
        f"windowed filter: {len(times):,} fetches; "
        f"fetched twice within a window: {twice_within(fetched_at)}"
    )
    print(f"fetched again after their window: {refetched:,} URLs")
    if gaps:
        print(f"time between two fetches of a URL: {min(gaps):.2f} s to {max(gaps):.2f} s")
    print("fetches per tick, windowed:      " + " ".join(str(n) for n in per_tick))
    print("fetches per tick, whole-key TTL: " + " ".join(str(n) for n in ttl_fetches))
    later = ticks // 3  # after the first window, when refetching starts
    print(
        f"largest tick after the first window: windowed {max(per_tick[later:]):,}, "
        f"whole-key TTL {max(ttl_fetches[later:]):,} (the TTL recipe refetches everything "
        "when the key expires)"
    )
    print(
        f"whole-key TTL: fetched twice within a window: {twice_within(ttl_fetched_at):,} "
        "(a URL fetched just before the key expired is fetched again just after)"
    )
    print(f"memory: {r.memory_usage(KEY):,} bytes (the key never expires by itself)")
    r.delete(KEY, TTL_KEY)


if __name__ == "__main__":
    main()
