"""A feed that never shows a user the same video twice within 30 days.

Each user has a windowed filter of what they were shown: `BF.RESERVE shown:<user> 0.001 5000
WINDOW 2592000` (5,000 videos a month at 0.1%). Building a page of the feed is two commands: one
`BF.MEXISTS` over the ranked candidates says which were shown (1), and one `BF.INSERT` records the
videos the page shows (creating the user's filter on their first page). A video comes back as new between 30 and 37.5 days after it was shown, and
the filter frees old history itself: nothing grows without end, and no job prunes it.

Usage: python feed.py [--port 6379] [--users 100] [--window 3]

The demonstration uses a window of seconds instead of days. Each user refreshes their feed every
tenth of a window for three windows, each refresh ranking 50 candidates out of a catalogue of 400
videos and showing the first 10 not shown before. It checks that no video was shown to a user
twice within a window, that videos come back after it, and prints the memory per user. It
deletes its keys at the end.
"""

import argparse
import random
import sys
import time

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


PAGE = 10
CANDIDATES = 50
CATALOGUE = 400


def build_page(r, user, ranked, window):
    """The first PAGE of the ranked candidates the user has not been shown within the window."""
    key = f"shown:{user}"
    shown = r.execute_command("BF.MEXISTS", key, *ranked)  # all 0 while the key is missing
    page = [video for video, seen in zip(ranked, shown) if not seen][:PAGE]
    if page:
        # Created on the user's first page with CAPACITY, ERROR and WINDOW. The key of a user
        # who stops coming back goes two windows after their last page (an idle windowed filter
        # would otherwise stay, empty: 96 bytes and its key's own).
        pipe = r.pipeline(transaction=False)
        pipe.execute_command(
            "BF.INSERT", key, "CAPACITY", 5000, "ERROR", 0.001, "WINDOW", window, "ITEMS", *page
        )
        pipe.expire(key, 2 * window)
        pipe.execute()
    return page


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--window", type=int, default=3, help="seconds (30 days: 2592000)")
    args = parser.parse_args()
    r = connect(args.port)
    users = [f"user:{n}" for n in range(args.users)]
    r.delete(*(f"shown:{user}" for user in users))
    rng = random.Random(30)
    shown = {user: {} for user in users}  # user -> video -> times shown
    start = time.monotonic()
    for refresh in range(30):
        time.sleep(max(0.0, start + refresh * args.window / 10 - time.monotonic()))
        for user in users:
            candidates = rng.sample(range(CATALOGUE), CANDIDATES)
            sent = time.monotonic()
            page = build_page(r, user, [f"video:{v}" for v in candidates], args.window)
            # Logged as (before the page was asked for, after it was recorded).
            now = (sent, time.monotonic())
            for video in page:
                shown[user].setdefault(video, []).append(now)
    memory = [r.memory_usage(f"shown:{user}") or 0 for user in users]
    # Shown again sooner than a window after it was first shown. The server stamps a write in
    # whole milliseconds (one at 2.4025 s is stamped 2.402 s, and its item answers 1 until 4.402 s),
    # so what comes back within a millisecond of the window's end is not counted.
    twice = sum(
        1
        for videos in shown.values()
        for times in videos.values()
        for a, b in zip(times, times[1:])
        if b[1] - a[0] < args.window - 0.001
    )
    again = sum(1 for videos in shown.values() for times in videos.values() if len(times) > 1)
    total = sum(len(times) for videos in shown.values() for times in videos.values())
    print(f"{args.users} users, 30 refreshes over 3 windows of {args.window} s")
    print(f"videos shown: {total:,}; shown twice within a window: {twice}")
    print(f"shown again after their window: {again:,}")
    print(f"memory per user: {sum(memory) / len(memory):,.0f} bytes")
    r.delete(*(f"shown:{user}" for user in users))


if __name__ == "__main__":
    main()
