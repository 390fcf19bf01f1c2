//! Core microbenchmarks: ns per add and per lookup, one item at a time and in batches of 100, for a
//! filter of 1 MiB (in cache) and of 1 GiB (in DRAM), next to the `bloomfilter` crate (the engine
//! of valkey-bloom) with the same number of bits and hash functions.
//!
//! `cargo bench -p filters --bench core`; `make bench` runs it and folds the results into its
//! report.

use bloomfilter::Bloom;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use filters::bloom::{Chain, Growth};

/// Items as applications send them: short keys.
fn item(index: u64) -> [u8; 16] {
    let mut bytes = *b"key:000000000000";
    bytes[4..12].copy_from_slice(&index.to_le_bytes());
    bytes
}

/// A filter of `bits` bits (one NONSCALING sub-filter at 1%, 7 hashes), ours and theirs, with
/// `fill` items in each, so that lookups and adds touch every page.
struct Pair {
    ours: Chain,
    theirs: Bloom<[u8]>,
}

const HASHES: u32 = 7;

fn pair(bits: u64, fill: u64) -> Pair {
    // 1% NONSCALING: 9.585 bits per item and 7 hashes.
    let capacity = (bits as f64 / 9.585) as u64;
    let mut ours = Chain::new(capacity, 0.01, Growth::Fixed, u64::MAX).unwrap();
    let shape = *ours.filters()[0].shape();
    assert_eq!(shape.hash_count, HASHES);
    // bloomfilter picks k = round(m/n * ln 2): ask for the n that gives the same k.
    let items_for_k = (shape.bits as f64 * std::f64::consts::LN_2 / f64::from(HASHES)) as usize;
    let mut theirs =
        Bloom::new_with_seed((shape.bits / 8) as usize, items_for_k, &[7; 32]).unwrap();
    assert_eq!(theirs.number_of_hash_functions(), HASHES);
    assert_eq!(theirs.len(), shape.bits);
    for index in 0..fill {
        let item = item(index);
        ours.add(&item, u64::MAX).unwrap();
        theirs.set(&item[..]);
    }
    Pair { ours, theirs }
}

fn bench_size(c: &mut Criterion, label: &str, bits: u64, fill: u64) {
    let mut pair = pair(bits, fill);
    let mut group = c.benchmark_group(label);
    group.throughput(Throughput::Elements(1));
    let mut next = fill;
    group.bench_function("add/ours", |b| {
        b.iter(|| {
            next += 1;
            black_box(pair.ours.add(&item(next), u64::MAX).ok())
        })
    });
    group.bench_function("add/bloomfilter", |b| {
        b.iter(|| {
            next += 1;
            black_box(pair.theirs.check_and_set(&item(next)[..]))
        })
    });
    let mut probe = 0;
    group.bench_function("lookup/ours", |b| {
        b.iter(|| {
            probe = (probe + 7919) % fill;
            black_box(pair.ours.contains(&item(probe)))
        })
    });
    group.bench_function("lookup/bloomfilter", |b| {
        b.iter(|| {
            probe = (probe + 7919) % fill;
            black_box(pair.theirs.check(&item(probe)[..]))
        })
    });
    // Batches of 100 items, as BF.MADD / BF.MEXISTS receive them: present items for lookups,
    // new ones for adds.
    group.throughput(Throughput::Elements(100));
    let cursor = std::cell::Cell::new(0u64);
    let present_batch = || -> Vec<[u8; 16]> {
        let start = cursor.get();
        cursor.set((start + 7919 * 100) % fill);
        (0..100).map(|i| item((start + i * 7919) % fill)).collect()
    };
    let fresh = std::cell::Cell::new(next);
    let new_batch = || -> Vec<[u8; 16]> {
        let start = fresh.get();
        fresh.set(start + 100);
        (start..start + 100).map(item).collect()
    };
    group.bench_function("lookup-batch100/ours", |b| {
        b.iter_batched(
            present_batch,
            |items| {
                let mut found = 0u32;
                pair.ours
                    .contains_many(items.iter().map(|i| &i[..]), |hit| found += u32::from(hit));
                black_box(found)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("lookup-batch100/bloomfilter", |b| {
        b.iter_batched(
            present_batch,
            |items| {
                let found: u32 = items
                    .iter()
                    .map(|i| u32::from(pair.theirs.check(&i[..])))
                    .sum();
                black_box(found)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("add-batch100/ours", |b| {
        b.iter_batched(
            new_batch,
            |items| {
                let mut added = 0u32;
                pair.ours
                    .add_many(items.iter().map(|i| &i[..]), u64::MAX, |result| {
                        added += u32::from(result == Ok(true));
                        true
                    });
                black_box(added)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("add-batch100/bloomfilter", |b| {
        b.iter_batched(
            new_batch,
            |items| {
                let added: u32 = items
                    .iter()
                    .map(|i| u32::from(!pair.theirs.check_and_set(&i[..])))
                    .sum();
                black_box(added)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn in_cache(c: &mut Criterion) {
    // 1 MiB of bits, a third full.
    bench_size(c, "1MiB", 8 << 20, 300_000);
}

fn in_dram(c: &mut Criterion) {
    // 1 GiB of bits, with 10 million items: every page touched, every lookup a cache miss.
    bench_size(c, "1GiB", 8 << 30, 10_000_000);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    targets = in_cache, in_dram
}
criterion_main!(benches);
