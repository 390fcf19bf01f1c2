"""A cache-penetration guard: answer "certainly absent" without touching the backing store.

Lookups of ids that do not exist go past a cache (there is nothing to cache) and land on the
database, one query each: a scraper enumerating ids, or an attacker asking for random ones, can
flood it that way. The guard keeps every id that exists in a Bloom filter. A lookup asks the filter
first (one BF.EXISTS); "no" is certain (a Bloom filter has no false negatives), so the database is
never asked; "yes" goes on to the cache and the database as before, and is wrong only at the
filter's error rate.

A Bloom filter cannot forget: the id of a user deleted from the database keeps passing the guard.
A cuckoo filter can (CF.DEL): the second guard keeps the same ids in one and deletes an id when its
row is deleted, so a deleted id stops passing, but for the filter's false positives.

Usage: python guard.py [--port 6379] [--users 100000] [--lookups 20000] [--error-rate 0.001]
                       [--deletes N]

It builds a SQLite database of `--users` users, loads their ids into the Bloom filter
`guard:user-ids` with BF.MADD in batches (and into the cuckoo filter `guard:user-ids:cuckoo` with
CF.INSERT), then serves `--lookups` lookups, half for users that exist and half for random ids that
do not, and prints how many reached the database. Then it deletes `--deletes` users (a tenth by
default), looks each deleted id up through both guards, and prints how many reached the database
with each. It deletes its keys at the end.
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


FILTER = "guard:user-ids"  # the Bloom filter
CUCKOO = "guard:user-ids:cuckoo"  # the cuckoo filter, which can forget a deleted user's id
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

    def delete(self, user_id: int):
        self.db.execute("DELETE FROM users WHERE id = ?", (user_id,))


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
        self.remember(user_id)

    def delete_user(self, user_id: int):
        # Store first, then filter: a lookup in between passes the guard and finds no row, as if
        # it came a moment earlier.
        self.store.delete(user_id)
        self.forget(user_id)

    def remember(self, user_id: int):
        self.r.bf().add(FILTER, user_id)

    def forget(self, user_id: int):
        # A Bloom filter cannot: the id keeps passing the guard, one wasted query per lookup,
        # until the filter is rebuilt.
        pass


class CuckooGuard(Guard):
    """The same guard on a cuckoo filter, which can forget: a deleted user's id is deleted from
    the filter too (CF.DEL), and stops passing the guard."""

    def __init__(self, r: redis.Redis, store: UserStore, users: int, error_rate: float):
        self.r, self.store = r, store
        self.refused = 0
        r.delete(CUCKOO)
        # ERROR: redis-bf's cuckoo filter, whose false-positive rate stays at most error_rate
        # however far it grows (buckets of 4; RedisBloom's kind has no such bound).
        r.execute_command("CF.RESERVE", CUCKOO, max(users, 1000), "ERROR", error_rate)
        ids = list(store.ids(users))
        for start in range(0, len(ids), BATCH):
            # NOCREATE: if the key vanished, fail rather than make a filter with server defaults.
            r.execute_command("CF.INSERT", CUCKOO, "NOCREATE", "ITEMS", *ids[start : start + BATCH])

    def get_user(self, user_id: int):
        if not self.r.cf().exists(CUCKOO, user_id):
            self.refused += 1
            return None
        return self.store.get(user_id)

    def remember(self, user_id: int):
        self.r.cf().add(CUCKOO, user_id)  # each id once, so that its delete forgets it

    def forget(self, user_id: int):
        # Forget only ids that were added: deleting one that was not may delete another id that
        # shares its fingerprint.
        self.r.cf().delete(CUCKOO, user_id)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--error-rate", type=float, default=0.001)
    parser.add_argument("--deletes", type=int, default=None, help="users deleted (a tenth)")
    args = parser.parse_args()

    r = connect(args.port)
    store = UserStore(args.users)
    guard = Guard(r, store, args.users, args.error_rate)
    info = r.bf().info(FILTER)
    print(
        f"{args.users:,} users loaded into {FILTER}: {info.size:,} bytes "
        f"at {args.error_rate:.2%} false positives"
    )
    cuckoo = CuckooGuard(r, store, args.users, args.error_rate)
    cuckoo_info = r.cf().info(CUCKOO)  # redis-py: an object in RESP2, a map in RESP3
    cuckoo_size = cuckoo_info[b"Size"] if isinstance(cuckoo_info, dict) else cuckoo_info.size
    print(
        f"{args.users:,} users loaded into {CUCKOO}: {cuckoo_size:,} bytes "
        f"at {args.error_rate:.2%} false positives (a cuckoo filter, which can delete)"
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
    cuckoo.remember(new_id)  # the store has the row already: the cuckoo guard's filter too
    if cuckoo.get_user(new_id) != "newcomer":
        raise SystemExit("a new user was not found by the cuckoo guard")
    print("a user added after loading is found at once")

    # Users deleted from the database: the row goes, and each guard forgets the id (the Bloom
    # one cannot); then every deleted id is looked up once through each guard.
    deletes = args.users // 10 if args.deletes is None else args.deletes
    deleted = random.Random(12).sample(existing, min(deletes, len(existing)))
    for user_id in deleted:
        cuckoo.delete_user(user_id)  # the row, then CF.DEL of the id
        guard.forget(user_id)  # nothing: the Bloom filter keeps it
    reached = {}
    for name, each in (("Bloom filter", guard), ("cuckoo filter", cuckoo)):
        before = store.queries
        for user_id in deleted:
            if each.get_user(user_id) is not None:
                raise SystemExit(f"user {user_id} was deleted but the store still has it")
        reached[name] = store.queries - before
    print(f"deleted {len(deleted):,} users; each deleted id looked up once through each guard")
    share = max(len(deleted), 1)
    print(
        f"lookups of deleted ids that reached the store with the Bloom filter: "
        f"{reached['Bloom filter']:,} of {len(deleted):,} ({reached['Bloom filter'] / share:.3%}: "
        "it cannot forget an id)"
    )
    print(
        f"lookups of deleted ids that reached the store with the cuckoo filter: "
        f"{reached['cuckoo filter']:,} of {len(deleted):,} "
        f"({reached['cuckoo filter'] / share:.3%}, false positives: the filter promises at most "
        f"{args.error_rate:.3%})"
    )
    # Deletes never hide a user that is still there (a cuckoo filter has no false negatives for
    # what it holds).
    gone = set(deleted)
    remaining = [user_id for user_id in existing if user_id not in gone]
    for user_id in random.Random(13).sample(remaining, min(len(remaining), args.lookups // 2)):
        if cuckoo.get_user(user_id) != f"user {user_id}":
            raise SystemExit(f"user {user_id} exists but the cuckoo guard lost it")
    print("every remaining user looked up still passes the cuckoo guard")
    r.delete(FILTER, CUCKOO)


if __name__ == "__main__":
    main()
