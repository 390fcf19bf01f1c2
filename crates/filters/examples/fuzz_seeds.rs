//! Writes seed inputs for the fuzzers (`fuzz/corpus/stored`, `fuzz/corpus/chunks`,
//! `fuzz/corpus/older_stored`, `fuzz/corpus/redisbloom`): the stored form and the dump of a few
//! real chains and windowed filters (their iterators tagged), a windowed filter and a chain as the
//! older revisions stored them, a RedisBloom 2.4 dump header, and RedisBloom's RDB layouts of one
//! sub-filter in every encoding version; and for the cuckoo targets (`fuzz/corpus/cuckoo_stored`,
//! `fuzz/corpus/cuckoo_header`, `fuzz/corpus/cuckoo_chunks`), the stored form, header and chunks of
//! a few cuckoo filters of both kinds (RedisBloom's and bounded), grown, with deletes, and two
//! being restored.
//! `cargo run -p filters --example fuzz_seeds`.

use filters::bloom::dump::{dump_tag, header, next_iterator, tagged};
use filters::bloom::sizing::{bits_per_item, hash_count, Layout};
use filters::bloom::stored::{to_bytes, ByteSink, FieldSink};
use filters::bloom::window::{Window, Windowed, WindowedShape};
use filters::bloom::{Chain, Filter, Growth};
use std::path::Path;

/// The header chunk RedisBloom 2.4.23 returned for `BF.RESERVE k 0.001 1000` holding 500 items
/// (tests/data/redisbloom-2.4.23, key fx:reserved).
const REDISBLOOM_HEADER: &str = "f401000000000000010000000500000002000000c007000000000000003e000000000000f401000000000000fca9f1d24d62403f2e92f414fca32f400b000000e80300000000000000";

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let chains = [
        (100, 0.01, Growth::Scaling { expansion: 2 }, 0),
        (10, 0.01, Growth::Scaling { expansion: 2 }, 40),
        (5, 0.1, Growth::Scaling { expansion: 1 }, 30),
        (50, 0.001, Growth::Fixed, 50),
    ];
    let mut filters: Vec<Filter> = chains
        .into_iter()
        .map(|(capacity, error, growth, items)| {
            let mut chain = Chain::new(capacity, error, growth, u64::MAX).unwrap();
            for i in 0..items {
                chain.add(format!("item:{i}").as_bytes(), u64::MAX).unwrap();
            }
            Filter::Chain(chain)
        })
        .collect();
    // A windowed filter of three generations.
    let window = Window::seconds(60).unwrap();
    let shape = WindowedShape::new(40, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    let mut windowed = Filter::from(Windowed::new(shape));
    for i in 0..60u64 {
        let now = 1_800_000_000_000 + i * 1000;
        windowed
            .add(format!("item:{i}").as_bytes(), now, u64::MAX)
            .unwrap();
    }
    filters.push(windowed);
    // A windowed filter past its budget (a window's capacity in one slot, then more), whose
    // oldest parts expired: a first part number above 0.
    let shape = WindowedShape::new(16, 0.01, Growth::Scaling { expansion: 2 }, window).unwrap();
    let mut busy = Filter::from(Windowed::new(shape));
    for i in 0..40u64 {
        let now = 1_800_000_000_000 + i * 100;
        busy.add(format!("busy:{i}").as_bytes(), now, u64::MAX)
            .unwrap();
    }
    busy.expire(1_800_000_000_000 + 60_000 + 500);
    filters.push(busy);
    // Blocked: a chain grown twice (one-line blocks), and a windowed filter (encoding 104).
    let growth = Growth::Scaling { expansion: 2 };
    let mut blocked = Chain::with_layout(Layout::Blocked, 10, 0.01, growth, u64::MAX).unwrap();
    for i in 0..40 {
        blocked
            .add(format!("item:{i}").as_bytes(), u64::MAX)
            .unwrap();
    }
    filters.push(Filter::Chain(blocked));
    let shape = WindowedShape::new(40, 0.01, Growth::Scaling { expansion: 4 }, window)
        .unwrap()
        .with_layout(Layout::Blocked);
    let mut blocked = Filter::from(Windowed::new(shape));
    for i in 0..30u64 {
        let now = 1_800_000_000_000 + i * 1000;
        blocked
            .add(format!("item:{i}").as_bytes(), now, u64::MAX)
            .unwrap();
    }
    filters.push(blocked);
    for (index, filter) in filters.iter().enumerate() {
        write(&root.join("stored"), index, &to_bytes(filter));
        // The chunks target's framing: u16 header length, header, then (u64 iterator, u16 length,
        // bytes) per data chunk.
        let head = header(filter);
        let mut input = (head.len() as u16).to_le_bytes().to_vec();
        input.extend_from_slice(&head);
        let tag = dump_tag(filter);
        for (offset, chunk) in filter.loaded_chunks() {
            let iterator = tagged(tag, next_iterator(offset, chunk.len()));
            input.extend_from_slice(&iterator.to_le_bytes());
            input.extend_from_slice(&(chunk.len() as u16).to_le_bytes());
            input.extend_from_slice(&chunk);
        }
        write(&root.join("chunks"), index, &input);
    }

    // The older revisions: a windowed filter of the first release (102: per generation a slot and
    // a chain; one generation of one sub-filter of 5 items, 3 taken), and a chain of 100.
    let shape = WindowedShape::new(16, 0.01, Growth::Scaling { expansion: 4 }, window).unwrap();
    let first = shape
        .part_shape(filters::bloom::window::Rule::Legacy, 0)
        .unwrap();
    let mut sink = ByteSink::default();
    sink.bytes.push(2);
    for value in [1, 60, 16] {
        sink.unsigned(value);
    }
    sink.double(0.01);
    for value in [4, 1, 1_800_000_000_000 / window.slot_millis(), 1] {
        sink.unsigned(value);
    }
    sink.unsigned(first.capacity);
    sink.double(first.error);
    for value in [u64::from(first.hash_count), first.bits, 3] {
        sink.unsigned(value);
    }
    for len in filters::bits::piece_lengths(first.bits) {
        sink.buffer(&vec![0x24; len]);
    }
    sink.unsigned(0);
    write(&root.join("older_stored"), 0, &sink.bytes);
    let mut revision_100 = vec![0u8];
    let chain_form = to_bytes(&filters[1]);
    // Revision 102 and later start with the kind (9 bytes) and end with the restoring state.
    revision_100.extend_from_slice(&chain_form[9..chain_form.len() - 9]);
    write(&root.join("older_stored"), 1, &revision_100);
    let mut revision_101 = vec![1u8];
    revision_101.extend_from_slice(&chain_form[9..]);
    write(&root.join("older_stored"), 2, &revision_101);
    let mut revision_102 = vec![2u8];
    revision_102.extend_from_slice(&chain_form);
    write(&root.join("older_stored"), 3, &revision_102);
    // Revision 103 through the older-revisions target: a chain and a windowed filter.
    let mut revision_103 = vec![3u8];
    revision_103.extend_from_slice(&chain_form);
    write(&root.join("older_stored"), 4, &revision_103);
    let mut revision_103 = vec![3u8];
    revision_103.extend_from_slice(&to_bytes(&filters[4]));
    write(&root.join("older_stored"), 5, &revision_103);

    let head = hex(REDISBLOOM_HEADER);
    let mut input = (head.len() as u16).to_le_bytes().to_vec();
    input.extend_from_slice(&head);
    input.extend_from_slice(&(1u64 + 1984).to_le_bytes());
    input.extend_from_slice(&1984u16.to_le_bytes());
    input.extend(std::iter::repeat_n(0x5a, 1984));
    write(&root.join("chunks"), 100, &input);

    // One sub-filter of 100 items at 1% in each RDB encoding RedisBloom wrote: 958 bits before
    // rounding existed (0), a power of two since (1 to 3), not rounded again in 4.
    for encver in 0u8..5 {
        let (error, bpe) = (0.01, bits_per_item(0.01));
        let (bits, n2, entries) = match encver {
            0 | 4 => ((100.0 * bpe) as u64, 0, 100),
            _ => (1024, 10, 106),
        };
        let bits = if encver == 4 {
            bits.next_multiple_of(64)
        } else {
            bits
        };
        let mut sink = ByteSink::default();
        sink.bytes.push(encver);
        sink.unsigned(0);
        sink.unsigned(1);
        if encver >= 2 {
            sink.unsigned(if encver == 4 { 5 } else { 4 });
        }
        if encver >= 4 {
            sink.unsigned(2);
        }
        sink.unsigned(entries);
        sink.double(error);
        sink.unsigned(u64::from(hash_count(error)));
        sink.double(bpe);
        if encver >= 1 {
            sink.unsigned(bits);
            sink.unsigned(n2);
        }
        sink.buffer(&vec![0; bits.div_ceil(8) as usize]);
        sink.unsigned(0);
        write(&root.join("redisbloom"), usize::from(encver), &sink.bytes);
    }

    cuckoo_seeds(&root);
}

/// The cuckoo targets' seeds.
fn cuckoo_seeds(root: &Path) {
    use filters::cuckoo::{dump, stored, Bound, Cuckoo, Limits, Params};
    /// Buckets, bucket size, max iterations, expansion, bounded error rate, items, deletes.
    type Shape = (u64, u64, u64, u64, Option<f64>, u32, u32);
    let shapes: [Shape; 7] = [
        (4, 2, 20, 1, None, 3, 0),
        (4, 2, 20, 2, None, 60, 5),
        (8, 4, 500, 4, None, 200, 20),
        (2, 1, 3, 1, None, 40, 0),
        (16, 2, 20, 0, None, 20, 2),
        (4, 4, 50, 2, Some(0.01), 120, 10),
        (8, 4, 500, 1, Some(0.001), 100, 0),
    ];
    let mut filters: Vec<Cuckoo> = shapes
        .into_iter()
        .map(
            |(buckets, size, iterations, expansion, error, items, deletes)| {
                let params = Params::new(size, iterations, expansion).unwrap();
                let bound = error.map(|error| Bound::for_error(error).unwrap());
                let mut filter = Cuckoo::new(buckets, params, bound, u64::MAX).unwrap();
                for i in 0..items {
                    let _ = filter.add(format!("item:{i}").as_bytes(), &Limits::NONE);
                }
                for i in 0..deletes {
                    filter.delete(format!("item:{}", i * 3).as_bytes());
                }
                filter
            },
        )
        .collect();
    // Two filters being restored: the header and the first data chunk of a grown one (in two
    // pieces), and a bounded one with no data yet.
    for source in [1, 5] {
        let mut restoring = dump::Header::parse(&dump::header(&filters[source]))
            .unwrap()
            .into_filter()
            .unwrap();
        if source == 1 {
            let chunk = filters[source].chunk(0).unwrap().to_vec();
            let (a, b) = chunk.split_at(chunk.len() / 2);
            restoring.load_chunk(0, a).unwrap();
            restoring.load_chunk(a.len() as u64, b).unwrap();
        }
        filters.push(restoring);
    }
    for (index, filter) in filters.iter().enumerate() {
        let mut sink = ByteSink::default();
        stored::save(filter, &mut sink);
        write(&root.join("cuckoo_stored"), index, &sink.bytes);
        let head = dump::header(filter);
        write(&root.join("cuckoo_header"), index, &head);
        // The chunks target's framing, as for the Bloom filter's: the chunks a filter in use
        // dumps, the ones that arrived for one being restored; for the grown one, also cut in
        // pieces of 5 bytes (a chunk may have any length within its sub-filter).
        let mut input = (head.len() as u16).to_le_bytes().to_vec();
        input.extend_from_slice(&head);
        let mut pieces = input.clone();
        for (offset, chunk) in filter.loaded_chunks() {
            let iterator = next_iterator(offset, chunk.len());
            input.extend_from_slice(&iterator.to_le_bytes());
            input.extend_from_slice(&(chunk.len() as u16).to_le_bytes());
            input.extend_from_slice(&chunk);
            for (at, piece) in chunk.chunks(5).enumerate() {
                let iterator = next_iterator(offset + at as u64 * 5, piece.len());
                pieces.extend_from_slice(&iterator.to_le_bytes());
                pieces.extend_from_slice(&(piece.len() as u16).to_le_bytes());
                pieces.extend_from_slice(piece);
            }
        }
        write(&root.join("cuckoo_chunks"), index, &input);
        if index == 1 {
            write(&root.join("cuckoo_chunks"), 100 + index, &pieces);
        }
    }
    // RedisBloom 2.4.23's own dump of CF.RESERVE sd 8 holding a, b, c (header and one chunk).
    let head = hex(
        "030000000000000004000000000000000000000000000000010000000000000002001400\
                    0100",
    );
    let chunk = hex("0000c4cb00001000");
    write(&root.join("cuckoo_header"), 100, &head);
    let mut input = (head.len() as u16).to_le_bytes().to_vec();
    input.extend_from_slice(&head);
    input.extend_from_slice(&next_iterator(0, chunk.len()).to_le_bytes());
    input.extend_from_slice(&(chunk.len() as u16).to_le_bytes());
    input.extend_from_slice(&chunk);
    write(&root.join("cuckoo_chunks"), 100, &input);
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
        .collect()
}

fn write(dir: &Path, index: usize, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("seed-{index}")), bytes).unwrap();
}
