"""A cache-penetration guard: answer "certainly absent" without touching the backing store.

Lookups of ids that do not exist go past a cache (there is nothing to cache) and land on the
database, one query each: a scraper enumerating ids, or an attacker asking for random ones, can
flood it that way. The guard keeps every id that exists in a Bloom filter. A lookup asks the filter
first (one BF.EXISTS); "no" is certain (a Bloom filter has no false negatives), so the database is
never asked; "yes" goes on to the cache and the database as before, and is wrong only at the
filter's error rate.

Usage: python guard.py [--port 6379] [--users 100000] [--lookups 20000] [--error-rate 0.001]

It builds a SQLite database of `--users` users, loads their ids into the filter `guard:user-ids`
with BF.MADD in batches, then serves `--lookups` lookups, half for users that exist and half for
random ids that do not, and prints how many reached the database. It deletes its keys at the end.
"""

import argparse
import random
import sqlite3
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


FILTER = "guard:user-ids"
BATCH = 1000


class UserStore:
    """The backing store: SQLite, counting the queries that reach it."""

    def __init__(self, users: int):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        self.db.executemany(
            "INSERT INTO users VALUES (?, ?)",
            ((user_id, f"user {user_id}") for user_id in self.ids(users)),
        )
        self.queries = 0

    @staticmethod
    def ids(users: int):
        """The ids that exist: sparse, as real ids often are (every third number)."""
        return range(3, 3 * users + 1, 3)

    def get(self, user_id: int):
        self.queries += 1
        row = self.db.execute("SELECT name FROM users WHERE id = ?", (user_id,)).fetchone()
        return row[0] if row else None

    def add(self, user_id: int, name: str):
        self.db.execute("INSERT INTO users VALUES (?, ?)", (user_id, name))


class Guard:
    """The Bloom filter in front of the store."""

    def __init__(self, r: redis.Redis, store: UserStore, users: int, error_rate: float):
        self.r, self.store = r, store
        self.refused = 0
        r.delete(FILTER)
        # Room for growth: the filter scales past its capacity if the user base outgrows it.
        r.bf().create(FILTER, error_rate, max(users, 1000))
        ids = list(store.ids(users))
        for start in range(0, len(ids), BATCH):
            r.bf().madd(FILTER, *ids[start : start + BATCH])

    def get_user(self, user_id: int):
        if not self.r.bf().exists(FILTER, user_id):
            self.refused += 1
            return None  # certainly absent: the store is not asked
        return self.store.get(user_id)

    def add_user(self, user_id: int, name: str):
        # Store first, then filter: a lookup in between is refused, as if it came a moment earlier.
        self.store.add(user_id, name)
        self.r.bf().add(FILTER, user_id)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--error-rate", type=float, default=0.001)
    args = parser.parse_args()

    r = connect(args.port)
    store = UserStore(args.users)
    guard = Guard(r, store, args.users, args.error_rate)
    info = r.bf().info(FILTER)
    print(
        f"{args.users:,} users loaded into {FILTER}: {info.size:,} bytes "
        f"at {args.error_rate:.2%} false positives"
    )

    rng = random.Random(11)
    existing = list(store.ids(args.users))
    absent = 0
    found = 0
    wasted = 0
    for lookup in range(args.lookups):
        if lookup % 2 == 0:
            user_id = rng.choice(existing)
            name = guard.get_user(user_id)
            if name != f"user {user_id}":
                raise SystemExit(f"user {user_id} exists but the guard lost it")
            found += 1
        else:
            # Not a multiple of 3: no such user.
            user_id = rng.randrange(1, 3 * args.users) * 3 + 1
            absent += 1
            before = store.queries
            if guard.get_user(user_id) is not None:
                raise SystemExit(f"user {user_id} does not exist")
            wasted += store.queries - before

    print(f"{args.lookups:,} lookups: {found:,} for users that exist, {absent:,} for ids that do not")
    print(
        f"store queries: {store.queries:,} of {args.lookups:,} lookups; "
        f"{guard.refused:,} refused by the filter without a query"
    )
    print(
        f"absent ids that still reached the store (false positives): {wasted:,} of {absent:,} "
        f"({wasted / max(absent, 1):.3%}, the filter promises at most {args.error_rate:.3%})"
    )

    # A new user is found at once.
    new_id = 3 * args.users + 3
    guard.add_user(new_id, "newcomer")
    if guard.get_user(new_id) != "newcomer":
        raise SystemExit("a new user was not found")
    print("a user added after loading is found at once")
    r.delete(FILTER)


if __name__ == "__main__":
    main()
