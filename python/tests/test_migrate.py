"""python -m redis_bf.migrate: a scrapy-redis fingerprint set becomes a filter under the same key
(SSCAN + BF.INSERT, swapped in by one script), with its progress output; spiders still adding are
caught; a bit string is refused with advice; a crawl stopped on the set resumes on the filter. With
--kind cuckoo, a cuckoo filter (CF.INSERTNX: each fingerprint held once), and a crawl resumes on
it with BLOOMFILTER_KIND = "cuckoo"."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter as SetDupeFilter

from redis_bf import FilterOptions
from redis_bf._core import cuckoo_info
from redis_bf.migrate import MigrationError, migrate_set, sibling_key
from redis_bf.scrapy import RFPDupeFilter

from conftest import PAGES, info, run_crawl

KEY = "shop:dupefilter"
TEMP = "{shop:dupefilter}:redis-bf-migrating"
BACKUP = "{shop:dupefilter}:scrapy-redis-set"


def fingerprint(url: str) -> str:
    return str(SetDupeFilter(None, "unused").request_fingerprint(Request(url)))


def fill_set(client: redis.Redis, count: int, start: int = 0) -> list[str]:
    """The set scrapy-redis's dupefilter would hold after seeing these URLs."""
    fingerprints = [
        fingerprint(f"http://shop.example/item/{n}") for n in range(start, start + count)
    ]
    for i in range(0, len(fingerprints), 1000):
        client.sadd(KEY, *fingerprints[i : i + 1000])
    return fingerprints


def migrate_command(server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redis_bf.migrate", "--url", server.url, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def held(client: redis.Redis, items: list[str]) -> list[bool]:
    return [bool(answer) for answer in client.execute_command("BF.MEXISTS", KEY, *items)]


def test_a_set_becomes_a_filter_under_its_key(server: Any) -> None:
    r = server.client()
    fingerprints = fill_set(r, 5000)
    done = migrate_command(server, "--batch", "1000", "--progress-interval", "0", KEY)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert re.fullmatch(
        r"shop:dupefilter: a scrapy-redis set of 5,000 fingerprints \(about [\d,]+ bytes\)",
        lines[0],
    )
    assert lines[1] == f"building a Bloom filter at {TEMP} (capacity 100,000, error rate 1e-06)"
    progress = [
        re.fullmatch(r"  ([\d,]+) of 5,000 fingerprints copied \((\d+)%\), [\d,]+/s", line)
        for line in lines[2:-3]
    ]
    assert all(progress) and len(progress) >= 2, lines
    copied = [int(match[1].replace(",", "")) for match in progress if match]
    assert copied == sorted(copied) and copied[-1] == 5000
    assert re.fullmatch(
        r"copied 5,000 fingerprints in [\d.]+ s; the filter counted 5,000 of them new", lines[-3]
    )
    size = info(r, KEY)["Size"]
    assert lines[-2] == (
        f"swapped: shop:dupefilter is now a Bloom filter (5,000 items, {size:,} bytes); "
        "the set was freed (UNLINK)"
    )
    assert lines[-1] == (
        'next: set DUPEFILTER_CLASS = "redis_bf.scrapy.RFPDupeFilter" and start the spiders again'
    )

    assert r.type(KEY) == b"MBbloom--"
    assert r.keys("*") == [KEY.encode()]  # no temporary key, no backup left
    assert held(r, fingerprints) == [True] * 5000
    assert info(r, KEY)["Capacity"] == 100_000
    assert info(r, KEY)["Number of items inserted"] == 5000

    # Run again: nothing to do.
    again = migrate_command(server, KEY)
    assert (again.returncode, again.stdout) == (
        0,
        "shop:dupefilter is already a Bloom filter: nothing to do\n",
    )


def test_the_filter_is_sized_for_the_set_and_the_options(server: Any, protocol: int) -> None:
    r = server.client(protocol)
    fingerprints = fill_set(r, 3000)
    lines: list[str] = []
    result = migrate_set(r, KEY, FilterOptions(2000, 0.001), batch_size=500, report=lines.append)
    assert result is not None
    assert (result.fingerprints, result.sent, result.passes) == (3000, 3000, 1)
    assert result.kept_set is None
    # At 0.1% a few fingerprints may already answer "held" (false positives): not counted new.
    assert result.new == info(r, KEY)["Number of items inserted"] >= 2990
    assert lines[1] == f"building a Bloom filter at {TEMP} (capacity 3,000, error rate 0.001)"
    r.execute_command("BF.RESERVE", "reference", 0.001, 3000)
    assert info(r, KEY)["Size"] == info(r, "reference")["Size"]
    assert held(r, fingerprints) == [True] * 3000


def test_a_set_becomes_a_windowed_filter_with_window(server: Any) -> None:
    r = server.client()
    fingerprints = fill_set(r, 500)
    done = migrate_command(server, "--window", "604800", "--progress-interval", "0", KEY)
    assert done.returncode == 0, done.stderr
    assert (
        f"building a Bloom filter at {TEMP} (capacity 100,000, error rate 1e-06, window 604800 s)"
        in done.stdout
    )
    assert info(r, KEY)["Window"] == 604800
    assert held(r, fingerprints) == [True] * 500
    # Every fingerprint starts its week now; the key itself never expires by itself.
    assert r.ttl(KEY) == -1
    assert info(r, KEY)["Number of items inserted"] == 500
    again = migrate_command(server, "--window", "60", KEY)
    assert again.returncode == 0, again.stderr
    assert (
        f"{KEY} is already a Bloom filter: nothing to do\n"
        "warning: it has a window of 604800 s, not the 60 s asked for: it stays as it is "
        "(delete it to start afresh)\n"
    ) == again.stdout
    refused = migrate_command(server, "--window", "-5", "other")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "error: argument --window: -5: must be from 1 to 315576000 seconds (ten years), or 0 for "
        "none (see python -m redis_bf.migrate --help)\n"
    )


def test_keep_set(server: Any) -> None:
    r = server.client()
    fill_set(r, 300)
    done = migrate_command(server, "--keep-set", KEY)
    assert done.returncode == 0, done.stderr
    assert f"the set is kept at {BACKUP}" in done.stdout
    assert r.type(KEY) == b"MBbloom--"
    assert r.scard(BACKUP) == 300


def test_a_set_kept_by_an_earlier_migration_is_never_overwritten(server: Any) -> None:
    r = server.client()
    r.sadd(BACKUP, "kept-before")
    fill_set(r, 300)
    # Without --keep-set the set is freed where it is: the kept one stays as it was.
    done = migrate_command(server, KEY)
    assert done.returncode == 0, done.stderr
    assert r.type(KEY) == b"MBbloom--"
    assert r.smembers(BACKUP) == {b"kept-before"}
    # With --keep-set it is refused before anything is built.
    r.delete(KEY)
    fill_set(r, 300)
    done = migrate_command(server, "--keep-set", KEY)
    assert done.returncode == 1
    assert f"{BACKUP} exists: delete or rename it first" in done.stderr
    assert r.type(KEY) == b"set"
    assert r.exists(TEMP) == 0
    assert r.smembers(BACKUP) == {b"kept-before"}


def test_a_batch_of_zero_is_refused_and_leaves_nothing(server: Any) -> None:
    r = server.client()
    fill_set(r, 10)
    done = migrate_command(server, "--batch", "0", KEY)
    assert done.returncode == 2
    assert done.stderr == (
        "error: argument --batch: 0: must be at least 1 (see python -m redis_bf.migrate --help)\n"
    )
    with pytest.raises(MigrationError, match="a batch of 0 members: it must be at least 1"):
        migrate_set(r, KEY, batch_size=0)
    assert r.type(KEY) == b"set"
    assert r.exists(TEMP) == 0


def test_spiders_still_adding_make_it_copy_again(server: Any) -> None:
    r = server.client()
    fingerprints = fill_set(r, 2000)
    added: list[str] = []

    def spider_adds_during_the_first_copy(line: str) -> None:
        lines.append(line)
        if "fingerprints copied" in line and not added:
            added.extend(fill_set(r, 10, start=100_000))

    lines: list[str] = []
    result = migrate_set(
        r, KEY, batch_size=500, report=spider_adds_during_the_first_copy, progress_interval=0
    )
    assert result is not None
    assert (result.fingerprints, result.passes) == (2010, 2)
    assert (
        "the set changed during the copy (2,000 -> 2,010 fingerprints): spiders are still adding; "
        "copying again" in lines
    )
    assert held(r, fingerprints + added) == [True] * 2010
    assert info(r, KEY)["Number of items inserted"] == 2010


def test_it_gives_up_if_the_set_keeps_changing(server: Any) -> None:
    r = server.client()
    fill_set(r, 1000)
    count = iter(range(200_000, 300_000, 10))

    def spider_keeps_adding(line: str) -> None:
        if "fingerprints copied" in line:
            fill_set(r, 1, start=next(count))

    with pytest.raises(MigrationError, match=r"kept changing during 3 copies .* stop the spiders"):
        migrate_set(r, KEY, batch_size=500, report=spider_keeps_adding, progress_interval=0)
    assert r.type(KEY) == b"set"  # untouched but for the spider's additions
    assert r.scard(KEY) > 1000
    assert r.exists(TEMP, BACKUP) == 0


def test_a_bit_string_cannot_be_converted(server: Any) -> None:
    r = server.client()
    r.setbit("shop:bloomfilter", (1 << 20) - 1, 1)
    done = migrate_command(server, "shop:bloomfilter")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "error: shop:bloomfilter is a string of 131,072 bytes, the bit array of a client-side "
        "Bloom filter such as scrapy-redis-bloomfilter's: it cannot be converted (its bits come "
        "from that package's own hashing, and a Bloom filter cannot list what it holds); finish "
        "that crawl with it, or start redis_bf.scrapy.RFPDupeFilter on a key of its own, loaded "
        "first with --urls FILE if you know the URLs fetched so far\n"
    )
    assert r.strlen("shop:bloomfilter") == 1 << 17
    assert r.keys("*") == [b"shop:bloomfilter"]


def test_a_missing_key_or_another_type(server: Any) -> None:
    done = migrate_command(server, "nothing:dupefilter")
    assert (done.returncode, done.stdout) == (1, "")
    assert "nothing:dupefilter does not exist: nothing to migrate" in done.stderr
    server.client().rpush("shop:requests", "x")
    done = migrate_command(server, "shop:requests")
    assert done.returncode == 1
    assert "shop:requests holds a list, not a scrapy-redis set" in done.stderr


def test_load_urls(server: Any, tmp_path: Path) -> None:
    urls = [f"http://shop.example/item/{n}" for n in range(100)]
    listing = tmp_path / "fetched.txt"
    listing.write_text(
        "# fetched before the switch\n" + "\n".join(urls[:60]) + "\n\n" + urls[0] + "#top\n"
    )
    done = migrate_command(server, "--urls", str(listing), "shop:new")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "shop:new: 61 URLs loaded, 60 of them new to the filter\n"
    df = RFPDupeFilter(server.client(), "shop:new")
    assert [df.request_seen(Request(url)) for url in urls] == [True] * 60 + [False] * 40


def test_a_line_that_is_not_a_url_loads_nothing(server: Any, tmp_path: Path) -> None:
    listing = tmp_path / "fetched.txt"
    good = [f"http://shop.example/item/{n}" for n in range(3000)]
    listing.write_text(
        "\n".join(good[:2500]) + "\nshop.example/no-scheme\n" + "\n".join(good[2500:])
    )
    done = migrate_command(server, "--urls", str(listing), "shop:new")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "error: line 2501 is not a URL ('shop.example/no-scheme': Missing scheme in request url"
    )
    assert done.stderr.rstrip().endswith("nothing was loaded")
    assert server.client().exists("shop:new") == 0


def test_sibling_keys_share_the_slot() -> None:
    assert sibling_key("shop:dupefilter", ":x") == "{shop:dupefilter}:x"
    assert sibling_key("{tenant}:shop:dupefilter", ":x") == "{tenant}:shop:dupefilter:x"
    assert sibling_key("odd}key", ":x") == "odd}key:x"


def test_a_crawl_stopped_on_a_set_resumes_on_the_filter(site: Any, server: Any) -> None:
    r = server.client()
    first = run_crawl(
        site,
        server,
        DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
        SCHEDULER_PERSIST=True,
        CLOSESPIDER_PAGECOUNT=PAGES // 2,
    )
    assert first["finish_reason"] == "closespider_pagecount"
    assert r.type("site:dupefilter") == b"set"
    fingerprints = r.scard("site:dupefilter")
    queued = r.zcard("site:requests")
    assert fingerprints == first["harness/pages"] + queued

    done = migrate_command(server, "site:dupefilter")
    assert done.returncode == 0, done.stderr
    assert f"copied {fingerprints:,} fingerprints" in done.stdout

    second = run_crawl(site, server, SCHEDULER_PERSIST=True)
    assert f"resuming with site:dupefilter ({fingerprints} requests seen" in second.log
    assert site.fetched() == Counter({path: 1 for path in site.paths})
    assert first["harness/pages"] + second["harness/pages"] == PAGES
    assert info(r, "site:dupefilter")["Number of items inserted"] == PAGES


def test_the_docs_quote_the_figures_migrate_prints(server: Any) -> None:
    """python/README.md's transcript and docs/migrating.md quote a migration of 4,997
    fingerprints under a key as long as this one: the filter's figures exactly as migrate prints
    them; the set's (MEMORY USAGE, which moves with the set's hash table) to within a tenth."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "python/README.md").read_text()
    migrating = " ".join((root / "docs/migrating.md").read_text().split())
    fill_set(server.client(), 4997)
    done = migrate_command(server, KEY)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.replace(KEY, "site:dupefilter")
    for wanted in (
        "building a Bloom filter at {site:dupefilter}:redis-bf-migrating (capacity 100,000, "
        "error rate 1e-06)",
        "swapped: site:dupefilter is now a Bloom filter (4,997 items, 377,848 bytes)",
    ):
        assert wanted in printed, printed
        assert wanted in readme, wanted
    # And with --kind cuckoo (python/README.md quotes its lines too).
    server.client().delete(KEY)
    fill_set(server.client(), 4997, start=10_000)
    server.client().rename(KEY, "cuckoo:dupefilter")
    done = migrate_command(server, "--kind", "cuckoo", "cuckoo:dupefilter")
    assert done.returncode == 0, done.stderr
    printed_cuckoo = done.stdout.replace("cuckoo:dupefilter", "site:dupefilter")
    for wanted in (
        "building a cuckoo filter at {site:dupefilter}:redis-bf-migrating (capacity 100,000, "
        "error rate 1e-06)",
        "swapped: site:dupefilter is now a cuckoo filter (4,997 items, 458,864 bytes); the set "
        "was freed (UNLINK)",
        'next: set DUPEFILTER_CLASS = "redis_bf.scrapy.RFPDupeFilter" and BLOOMFILTER_KIND = '
        '"cuckoo", and start the spiders again',
    ):
        assert wanted in printed_cuckoo, printed_cuckoo
        assert wanted in readme, wanted
    set_line = r"a scrapy-redis set of 4,997 fingerprints \(about ([\d,]+) bytes\)"
    measured = re.search(set_line, printed)
    quoted = re.search(set_line, readme)
    per_url = re.search(r"`<spider>:dupefilter`: about (\d+) bytes per URL", migrating)
    assert measured is not None and quoted is not None and per_url is not None
    set_bytes = int(measured.group(1).replace(",", ""))
    for figure in (int(quoted.group(1).replace(",", "")), int(per_url.group(1)) * 4997):
        assert abs(figure - set_bytes) <= set_bytes / 10, (figure, set_bytes)


def cuckoo_held(client: redis.Redis, items: list[str]) -> list[int]:
    """CF.COUNT of each item: the copies of its fingerprint the filter holds."""
    pipe = client.pipeline(transaction=False)
    for item in items:
        pipe.execute_command("CF.COUNT", KEY, item)
    return [int(copies) for copies in pipe.execute()]


def test_a_set_becomes_a_cuckoo_filter_with_kind_cuckoo(server: Any) -> None:
    r = server.client()
    fingerprints = fill_set(r, 5000)
    done = migrate_command(server, "--kind", "cuckoo", "--progress-interval", "0", KEY)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == f"building a cuckoo filter at {TEMP} (capacity 100,000, error rate 1e-06)"
    assert re.fullmatch(
        r"copied 5,000 fingerprints in [\d.]+ s; the filter counted 5,000 of them new", lines[-3]
    )
    cuckoo = cuckoo_info(r.execute_command("CF.INFO", KEY))
    assert lines[-2] == (
        f"swapped: shop:dupefilter is now a cuckoo filter (5,000 items, {cuckoo['Size']:,} "
        "bytes); the set was freed (UNLINK)"
    )
    assert lines[-1] == (
        'next: set DUPEFILTER_CLASS = "redis_bf.scrapy.RFPDupeFilter" and BLOOMFILTER_KIND = '
        '"cuckoo", and start the spiders again'
    )
    assert r.type(KEY) == b"MBbloomCF"
    assert r.keys("*") == [KEY.encode()]
    assert cuckoo_held(r, fingerprints) == [1] * 5000  # each once: forgetting it forgets it
    assert cuckoo["Error rate"] == 1e-6
    r.execute_command("CF.RESERVE", "reference", 100_000, "ERROR", 1e-6)
    assert r.execute_command("CF.DEBUG", "reference").replace(b"items:0", b"items:5000") == (
        r.execute_command("CF.DEBUG", KEY)
    )
    r.delete("reference")
    again = migrate_command(server, "--kind", "cuckoo", KEY)
    assert (again.returncode, again.stdout) == (
        0,
        f"{KEY} is already a cuckoo filter: nothing to do\n",
    )
    # Asked for the other kind: refused, with what to do.
    bloom = migrate_command(server, KEY)
    assert (bloom.returncode, bloom.stdout) == (1, "")
    assert bloom.stderr == (
        f"error: {KEY} is a cuckoo filter, not a Bloom filter: a filter cannot become the other "
        "kind (neither can list what it holds); resume the crawl with it (BLOOMFILTER_KIND = "
        '"cuckoo"), or start a Bloom filter on a key of its own, loaded first with --urls FILE '
        "if you know the URLs fetched so far\n"
    )
    r.delete(KEY)
    r.execute_command("BF.ADD", KEY, "x")
    cuckoo_on_bloom = migrate_command(server, "--kind", "cuckoo", KEY)
    assert cuckoo_on_bloom.returncode == 1
    assert cuckoo_on_bloom.stderr.startswith(
        f"error: {KEY} is a Bloom filter, not a cuckoo filter: a filter cannot become the other "
    )


def test_a_second_pass_into_a_cuckoo_filter_adds_each_fingerprint_once(server: Any) -> None:
    r = server.client()
    fingerprints = fill_set(r, 2000)
    added: list[str] = []

    def spider_adds_during_the_first_copy(line: str) -> None:
        if "fingerprints copied" in line and not added:
            added.extend(fill_set(r, 10, start=100_000))

    result = migrate_set(
        r,
        KEY,
        FilterOptions(1000, 0.001),
        batch_size=500,
        report=spider_adds_during_the_first_copy,
        progress_interval=0,
        kind="cuckoo",
    )
    assert result is not None
    assert (result.fingerprints, result.passes) == (2010, 2)
    assert result.sent >= 4010  # every member twice, and SSCAN may return one more than once
    assert result.new == result.info["Number of items inserted"] >= 2000  # held: not added twice
    assert cuckoo_held(r, fingerprints + added) == [1] * 2010
    with pytest.raises(MigrationError, match="a cuckoo filter has no window"):
        migrate_set(r, "other", FilterOptions(1000, 0.001, 60), kind="cuckoo")


def test_load_urls_into_a_cuckoo_filter(server: Any, tmp_path: Path) -> None:
    urls = [f"http://shop.example/item/{n}" for n in range(100)]
    listing = tmp_path / "fetched.txt"
    listing.write_text("\n".join(urls + urls[:10]) + "\n")
    done = migrate_command(server, "--kind", "cuckoo", "--urls", str(listing), "shop:new")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "shop:new: 110 URLs loaded, 100 of them new to the filter\n"
    r = server.client()
    assert r.type("shop:new") == b"MBbloomCF"
    for url in urls[:3]:
        assert r.execute_command("CF.COUNT", "shop:new", fingerprint(url)) == 1


def test_a_crawl_stopped_on_a_set_resumes_on_a_cuckoo_filter(site: Any, server: Any) -> None:
    r = server.client()
    first = run_crawl(
        site,
        server,
        DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
        SCHEDULER_PERSIST=True,
        CLOSESPIDER_PAGECOUNT=PAGES // 2,
    )
    fingerprints = r.scard("site:dupefilter")
    done = migrate_command(server, "--kind", "cuckoo", "site:dupefilter")
    assert done.returncode == 0, done.stderr
    second = run_crawl(site, server, SCHEDULER_PERSIST=True, BLOOMFILTER_KIND="cuckoo")
    assert f"resuming with site:dupefilter ({fingerprints} requests seen" in second.log
    assert site.fetched() == Counter({path: 1 for path in site.paths})
    assert first["harness/pages"] + second["harness/pages"] == PAGES
