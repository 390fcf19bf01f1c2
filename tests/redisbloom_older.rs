//! RedisBloom's older RDB encodings (0 to 3), which have no fixture: filters in them are built
//! here by the rules RedisBloom followed (see the fixtures' README in
//! `tests/data/redisbloom-2.4.23`) and restored from forged DUMP payloads. Each answers by its own
//! release's hashing, grows as RedisBloom grew it, survives our own save and load; damaged ones
//! are refused, never loaded half-way. (RedisBloom 2.4's own files: `redisbloom.rs`.)

mod common;

use common::payload::{Envelope, Field};
use common::{bf_info_field, debug_fields_of, present, Conn, Forged, Frame, Server};
use filters::hash::{murmur2, murmur64a};

/// RedisBloom's sizing constants.
#[allow(clippy::approx_constant)]
const LN_2: f64 = 0.693147180559945;
const LN_2_SQUARED: f64 = 0.480453013918201;

/// One sub-filter the way a RedisBloom release built and filled it.
struct OldLink {
    entries: u64,
    error: f64,
    hashes: u64,
    bpe: f64,
    /// The probe modulus.
    bits: u64,
    /// log2 of a power-of-two size, or 0.
    n2: u64,
    data: Vec<u8>,
    items: u64,
}

/// How a release hashed: 64-bit MurmurHash64A, or 32-bit MurmurHash2 with 32- or 64-bit probe
/// arithmetic.
#[derive(Clone, Copy, PartialEq)]
enum OldHashing {
    Murmur64,
    Murmur32 { arithmetic32: bool },
}

fn probes(hashing: OldHashing, item: &[u8], hashes: u64, bits: u64) -> Vec<u64> {
    match hashing {
        OldHashing::Murmur64 => {
            let a = murmur64a(item, 0xc6a4_a793_5bd1_e995);
            let b = murmur64a(item, a);
            (0..hashes)
                .map(|i| a.wrapping_add(i.wrapping_mul(b)) % bits)
                .collect()
        }
        OldHashing::Murmur32 { arithmetic32 } => {
            let a = murmur2(item, 0x9747_b28c);
            let b = murmur2(item, a);
            (0..hashes)
                .map(|i| {
                    if arithmetic32 {
                        u64::from(a.wrapping_add((i as u32).wrapping_mul(b))) % bits
                    } else {
                        u64::from(a).wrapping_add(i.wrapping_mul(u64::from(b))) % bits
                    }
                })
                .collect()
        }
    }
}

impl OldLink {
    /// A sub-filter for `entries` items at `error`, rounded up to a power of two (capacity
    /// raised to fill it) if `round`.
    fn new(entries: u64, error: f64, round: bool) -> OldLink {
        let bpe = error.ln().abs() / LN_2_SQUARED;
        let hashes = (LN_2 * bpe).ceil() as u64;
        let wanted = entries as f64 * bpe;
        let (bits, n2, entries) = if round {
            let n2 = wanted.log2().floor() as u64 + 1;
            let bits = 1u64 << n2;
            let spare = (bits as f64 - wanted).trunc();
            (bits, n2, entries + (spare / bpe) as u64)
        } else {
            (wanted as u64, 0, entries)
        };
        OldLink {
            entries,
            error,
            hashes,
            bpe,
            bits,
            n2,
            data: vec![0; bits.div_ceil(8) as usize],
            items: 0,
        }
    }

    fn has(&self, hashing: OldHashing, item: &[u8]) -> bool {
        probes(hashing, item, self.hashes, self.bits)
            .iter()
            .all(|bit| self.data[(bit >> 3) as usize] & (1 << (bit % 8)) != 0)
    }

    fn add(&mut self, hashing: OldHashing, item: &[u8]) {
        let mut new = false;
        for bit in probes(hashing, item, self.hashes, self.bits) {
            let byte = &mut self.data[(bit >> 3) as usize];
            new |= *byte & (1 << (bit % 8)) == 0;
            *byte |= 1 << (bit % 8);
        }
        self.items += u64::from(new);
    }

    /// The fields RDB encoding `encver` holds for this sub-filter; `bits_field` is what the
    /// release wrote for the bit count (some wrote 0 for a power-of-two size).
    fn fields(&self, encver: u64, bits_field: u64) -> Vec<Field> {
        let mut fields = vec![
            Field::Unsigned(self.entries),
            Field::Double(self.error),
            Field::Unsigned(self.hashes),
            Field::Double(self.bpe),
        ];
        if encver >= 1 {
            fields.push(Field::Unsigned(bits_field));
            fields.push(Field::Unsigned(self.n2));
        }
        fields.push(Field::Buffer(self.data.clone()));
        fields.push(Field::Unsigned(self.items));
        fields
    }
}

/// An envelope for RDB encoding version `encver` of the `MBbloom--` type, from a real DUMP.
fn envelope(conn: &mut Conn, encver: u64) -> Envelope {
    conn.call(&["BF.ADD", "template", "x"]);
    let payload = conn.call(&["DUMP", "template"]).bytes();
    Envelope::from_dump(&payload).with_encoding_version(encver)
}

fn restore(conn: &mut Conn, key: &str, payload: Vec<u8>) -> Frame {
    conn.call(&[
        b"RESTORE".to_vec(),
        key.as_bytes().to_vec(),
        b"0".to_vec(),
        payload,
    ])
}

fn items(prefix: &str, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| format!("{prefix}:{i}").into_bytes())
        .collect()
}

/// The probes every test of the older encodings asks each filter about.
fn absent() -> Vec<Vec<u8>> {
    items("absent", 20_000)
}

/// Encoding 0 (ReBloom 1.0), restored at `v0`: 32-bit hashing, 32-bit probe arithmetic, no
/// rounding (958 bits, not a whole number of bytes), no options, bits and n2 not stored. Its
/// one sub-filter, and the items in it.
fn restore_encoding_0(conn: &mut Conn) -> (OldLink, Vec<Vec<u8>>) {
    let hashing = OldHashing::Murmur32 { arithmetic32: true };
    let mut link = OldLink::new(100, 0.01, false);
    assert_eq!((link.bits, link.hashes), (958, 7));
    let added = items("v0", 90);
    for item in &added {
        link.add(hashing, item);
    }
    let mut fields = vec![Field::Unsigned(link.items), Field::Unsigned(1)];
    fields.extend(link.fields(0, 0));
    let payload = envelope(conn, 0).payload(&fields);
    assert_eq!(restore(conn, "v0", payload), Frame::ok());
    (link, added)
}

/// Encoding 1, restored at `v1`: 32-bit hashing with power-of-two sizes (bit count written as 0,
/// n2 stored). Its one sub-filter, and the items in it.
fn restore_encoding_1(conn: &mut Conn) -> (OldLink, Vec<Vec<u8>>) {
    let hashing = OldHashing::Murmur32 {
        arithmetic32: false,
    };
    let mut link = OldLink::new(100, 0.01, true);
    assert_eq!((link.bits, link.n2, link.entries), (1024, 10, 106));
    let added = items("v1", 106);
    for item in &added {
        link.add(hashing, item);
    }
    let mut fields = vec![Field::Unsigned(link.items), Field::Unsigned(1)];
    fields.extend(link.fields(1, 0));
    let payload = envelope(conn, 1).payload(&fields);
    assert_eq!(restore(conn, "v1", payload), Frame::ok());
    (link, added)
}

/// Adds 50 items to `v1`, which grows it; the items.
fn grow_encoding_1(conn: &mut Conn) -> Vec<Vec<u8>> {
    let more = items("v1-more", 50);
    for item in &more {
        conn.call(&[b"BF.ADD".to_vec(), b"v1".to_vec(), item.clone()]);
    }
    more
}

/// Encoding 2 or 3 (ReBloom 1.1 to 2.0), restored at `v2` or `v3`: option flags, 64-bit hashing
/// (flag 4), power-of-two sizes, growth 2 not stored; two sub-filters, the second with the error
/// rule of those releases (0.01 * 0.5^2), which differs from today's. The sub-filters, and the
/// items in them.
fn restore_encoding_2_or_3(conn: &mut Conn, encver: u64) -> (OldLink, OldLink, Vec<Vec<u8>>) {
    let hashing = OldHashing::Murmur64;
    let mut first = OldLink::new(50, 0.01, true);
    let mut second = OldLink::new(first.entries * 2, 0.0025, true);
    let added = items(&format!("v{encver}"), (first.entries + 30) as usize);
    for item in &added[..first.entries as usize] {
        first.add(hashing, item);
    }
    for item in &added[first.entries as usize..] {
        if !first.has(hashing, item) {
            second.add(hashing, item);
        }
    }
    let mut fields = vec![
        Field::Unsigned(first.items + second.items),
        Field::Unsigned(2),
        Field::Unsigned(4),
    ];
    fields.extend(first.fields(encver, first.bits));
    fields.extend(second.fields(encver, second.bits));
    let payload = envelope(conn, encver).payload(&fields);
    assert_eq!(restore(conn, &format!("v{encver}"), payload), Frame::ok());
    (first, second, added)
}

#[test]
fn encoding_0_answers_by_32_bit_hashing_and_either_probe_arithmetic() {
    let server = Server::start();
    let mut conn = server.conn();
    let absent = absent();
    let (link, added) = restore_encoding_0(&mut conn);
    let hashing = OldHashing::Murmur32 { arithmetic32: true };
    assert_eq!(present(&mut conn, "v0", &added).len(), added.len());
    // Found if set under 32-bit arithmetic, as this release set them, or under the 64-bit
    // arithmetic of every later one.
    let later = OldHashing::Murmur32 {
        arithmetic32: false,
    };
    let expected: Vec<usize> = (0..absent.len())
        .filter(|&i| link.has(hashing, &absent[i]) || link.has(later, &absent[i]))
        .collect();
    assert_eq!(present(&mut conn, "v0", &absent), expected);
    assert_eq!(conn.call(&["BF.CARD", "v0"]), Frame::Int(link.items as i64));
    // 32-bit hashing shows as RedisBloom shows it.
    assert_eq!(debug_fields_of(&mut conn, "v0")[1]["hashwidth"], "32");
}

#[test]
fn encoding_1_answers_by_its_rules_and_grows_as_redisbloom_grew_it() {
    let server = Server::start();
    let mut conn = server.conn();
    let absent = absent();
    let (link, added) = restore_encoding_1(&mut conn);
    let hashing = OldHashing::Murmur32 {
        arithmetic32: false,
    };
    assert_eq!(present(&mut conn, "v1", &added).len(), added.len());
    let expected: Vec<usize> = (0..absent.len())
        .filter(|&i| link.has(hashing, &absent[i]))
        .collect();
    assert_eq!(present(&mut conn, "v1", &absent), expected);
    // It grows as RedisBloom grows such a chain (no option 1: power-of-two sizes): 212 items
    // at 0.005 want 2337.9 bits, so 4096, with room for 159 more.
    let grown = OldLink::new(212, 0.005, true);
    assert_eq!((grown.bits, grown.entries), (4096, 371));
    let more = grow_encoding_1(&mut conn);
    assert_eq!(present(&mut conn, "v1", &more).len(), more.len());
    assert_eq!(
        bf_info_field(&mut conn, "v1", "Capacity"),
        Frame::Int((link.entries + grown.entries) as i64)
    );
    let second = &debug_fields_of(&mut conn, "v1")[2];
    assert_eq!(second["bits"], "4096");
    assert_eq!(second["hashes"], grown.hashes.to_string());
}

#[test]
fn encodings_2_and_3_answer_by_64_bit_hashing_and_their_error_rule() {
    let server = Server::start();
    let mut conn = server.conn();
    let absent = absent();
    for encver in [2u64, 3] {
        let hashing = OldHashing::Murmur64;
        let (first, second, added) = restore_encoding_2_or_3(&mut conn, encver);
        let key = format!("v{encver}");
        assert_eq!(present(&mut conn, &key, &added).len(), added.len());
        let expected: Vec<usize> = (0..absent.len())
            .filter(|&i| first.has(hashing, &absent[i]) || second.has(hashing, &absent[i]))
            .collect();
        assert_eq!(present(&mut conn, &key, &absent), expected, "{key}");
        assert_eq!(
            bf_info_field(&mut conn, &key, "Expansion rate"),
            Frame::Int(2)
        );
        assert_eq!(
            bf_info_field(&mut conn, &key, "Number of items inserted"),
            Frame::Int((first.items + second.items) as i64)
        );
        assert_eq!(debug_fields_of(&mut conn, &key)[1]["hashwidth"], "64");
    }
}

#[test]
fn older_encodings_survive_our_own_save_and_load() {
    let server = Server::start();
    let mut conn = server.conn();
    let absent = absent();
    restore_encoding_0(&mut conn);
    restore_encoding_1(&mut conn);
    grow_encoding_1(&mut conn);
    for encver in [2u64, 3] {
        restore_encoding_2_or_3(&mut conn, encver);
    }
    let keys = ["v0", "v1", "v2", "v3"];
    let before: Vec<Vec<usize>> = keys
        .iter()
        .map(|key| present(&mut conn, key, &absent))
        .collect();
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    let after: Vec<Vec<usize>> = keys
        .iter()
        .map(|key| present(&mut conn, key, &absent))
        .collect();
    assert_eq!(after, before);
}

/// Damaged payloads of the older encodings, each with its encoding version and the error RESTORE
/// refuses it with.
fn damaged_older_payloads() -> Vec<Forged<(u64, Vec<Field>)>> {
    let link = OldLink::new(100, 0.01, true);
    vec![
        (
            "items do not add up",
            (
                1,
                [
                    vec![Field::Unsigned(5), Field::Unsigned(1)],
                    link.fields(1, 0),
                ]
                .concat(),
            ),
            "ERR Bad data format",
        ),
        (
            "bit array too short",
            (
                1,
                [
                    vec![Field::Unsigned(0), Field::Unsigned(1)],
                    OldLink {
                        data: vec![0; 100],
                        ..OldLink::new(100, 0.01, true)
                    }
                    .fields(1, 0),
                ]
                .concat(),
            ),
            "ERR Bad data format",
        ),
        (
            "no sub-filters",
            (
                4,
                vec![
                    Field::Unsigned(0),
                    Field::Unsigned(0),
                    Field::Unsigned(5),
                    Field::Unsigned(2),
                ],
            ),
            "ERR Bad data format",
        ),
    ]
}

#[test]
fn damaged_older_payloads_are_refused_never_loaded_half_way() {
    let server = Server::start();
    let mut conn = server.conn();
    for (what, (encver, fields), error) in damaged_older_payloads() {
        let payload = envelope(&mut conn, encver).payload(&fields);
        assert_eq!(
            restore(&mut conn, "bad", payload),
            Frame::error(error),
            "{what}"
        );
        assert_eq!(conn.call(&["EXISTS", "bad"]), Frame::Int(0), "{what}");
    }
}

/// RedisBloom's encoding 4 fields of a chain of `count` one-item sub-filters (64-bit hashing,
/// EXPANSION 1), each at `ratio` times the error rate of the one before, from 1%.
fn forged_chain(count: usize, ratio: f64) -> Vec<Field> {
    let mut fields = vec![
        Field::Unsigned(0),
        Field::Unsigned(count as u64),
        Field::Unsigned(5),
        Field::Unsigned(1),
    ];
    let mut error = 0.01;
    for _ in 0..count {
        let link = OldLink::new(1, error, false);
        let bits = link.bits.max(1).next_multiple_of(64);
        let data = vec![0; (bits / 8) as usize];
        fields.extend(OldLink { bits, data, ..link }.fields(4, bits));
        error *= ratio;
    }
    fields
}

/// A forged import can no longer hold more sub-filters than RedisBloom makes (it halves the error
/// rate with each one, so its chains end near 1,070): every loader checks the links against one
/// another, and a declared count over 1,100 is refused before a link is read.
#[test]
fn forged_chains_longer_than_redisbloom_makes_are_refused_by_every_loader() {
    let server = Server::start();
    let mut conn = server.conn();
    let forty = envelope(&mut conn, 4).payload(&forged_chain(40, 0.5));
    assert_eq!(restore(&mut conn, "ok", forty), Frame::ok());
    let filters = bf_info_field(&mut conn, "ok", "Number of filters");
    assert_eq!(filters, Frame::Int(40));
    // The red team's shape: links that all keep the same rate (there, 2,000,000 of them).
    let flat = envelope(&mut conn, 4).payload(&forged_chain(40, 1.0));
    assert_eq!(
        restore(&mut conn, "flat", flat),
        Frame::error("ERR Bad data format")
    );
    let mut declared = forged_chain(2, 0.5);
    declared[1] = Field::Unsigned(2_000_000);
    let declared = envelope(&mut conn, 4).payload(&declared);
    assert_eq!(
        restore(&mut conn, "long", declared),
        Frame::error("ERR Bad data format")
    );
    assert_eq!(conn.call(&["EXISTS", "flat", "long"]), Frame::Int(0));
    log_says(
        &server,
        "more sub-filters than RedisBloom ever makes (1,100)",
    );

    // A RedisBloom SCANDUMP header (2.4's layout) of 1,101 links: refused by its count.
    let mut header = Vec::new();
    header.extend(0u64.to_le_bytes());
    header.extend(1101u32.to_le_bytes());
    header.extend(5u32.to_le_bytes());
    header.extend(1u32.to_le_bytes());
    header.resize(20 + 53 * 1101, 0);
    assert_eq!(
        common::loadchunk(&mut conn, "chunks", 1, &header),
        Frame::error("ERR invalid chunk: more sub-filters than RedisBloom ever makes (1,100)")
    );
    assert_eq!(conn.call(&["EXISTS", "chunks"]), Frame::Int(0));
}

/// Asserts that the server's log holds `text` (why a RESTORE was refused: the reply only says
/// "Bad data format").
fn log_says(server: &Server, text: &str) {
    let log = server.log();
    assert!(log.contains(text), "the log does not say {text:?}:\n{log}");
}
