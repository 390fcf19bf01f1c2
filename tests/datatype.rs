//! The `MBbloom--` data type's callbacks (`src/bloom/datatype.rs`) against a real server: RDB save and
//! load (DEBUG RELOAD, a restart, DUMP and RESTORE) keep every bit; RESTORE takes a hand-built
//! payload and refuses forged and truncated ones; COPY makes an independent filter; MEMORY USAGE
//! agrees with what the allocator charged.

mod common;

use common::payload::{Envelope, Field};
use common::{Forged, Frame, Server};

#[test]
fn debug_reload_and_a_restart_keep_every_bit() {
    let mut server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "chain", "0.01", "10", "EXPANSION", "3"]),
        Frame::ok()
    );
    for i in 0..200 {
        conn.call(&["BF.ADD", "chain", &format!("item:{i}")]);
    }
    assert_eq!(
        conn.call(&["BF.RESERVE", "fixed", "0.001", "50", "NONSCALING"]),
        Frame::ok()
    );
    conn.call(&["BF.ADD", "fixed", "only"]);
    let dumps = |conn: &mut common::Conn| {
        ["chain", "fixed"].map(|key| {
            (
                conn.call(&["DUMP", key]),
                conn.call(&["DEBUG", "DIGEST-VALUE", key]),
            )
        })
    };
    let before = dumps(&mut conn);
    assert_eq!(conn.call(&["DEBUG", "RELOAD"]), Frame::ok());
    assert_eq!(dumps(&mut conn), before);
    drop(conn);
    server.restart();
    let mut conn = server.conn();
    assert_eq!(dumps(&mut conn), before);
    for i in 0..200 {
        assert_eq!(
            conn.call(&["BF.EXISTS", "chain", &format!("item:{i}")]),
            Frame::Int(1)
        );
    }
    assert_eq!(conn.call(&["BF.EXISTS", "fixed", "only"]), Frame::Int(1));
    // The reloaded filter keeps working: it still refuses what a full filter refuses.
    assert_eq!(conn.call(&["BF.ADD", "chain", "item:0"]), Frame::Int(0));
}

#[test]
fn dump_and_restore_round_trip_bit_exactly() {
    let server = Server::start();
    let mut conn = server.conn();
    for i in 0..500 {
        conn.call(&["BF.ADD", "source", &format!("{i}")]);
    }
    let payload = conn.call(&["DUMP", "source"]).bytes();
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"copy", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["DEBUG", "DIGEST-VALUE", "copy"]),
        conn.call(&["DEBUG", "DIGEST-VALUE", "source"])
    );
    assert_eq!(conn.call(&["DUMP", "copy"]).bytes(), payload);
    for i in 0..500 {
        assert_eq!(
            conn.call(&["BF.EXISTS", "copy", &format!("{i}")]),
            Frame::Int(1)
        );
    }
}

#[test]
fn copy_makes_an_independent_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    conn.call(&["BF.ADD", "original", "a"]);
    assert_eq!(conn.call(&["COPY", "original", "duplicate"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "duplicate", "a"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.ADD", "duplicate", "b"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "original", "b"]), Frame::Int(0));
    assert_eq!(conn.call(&["BF.EXISTS", "duplicate", "b"]), Frame::Int(1));
}

#[test]
fn memory_usage_is_within_one_percent_of_what_the_allocator_charged() {
    let server = Server::start();
    let mut conn = server.conn();
    // The server resizes each client's reply buffer on a timer (by up to 16 KB): that would show
    // in used_memory between two readings.
    assert_eq!(
        conn.call(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]),
        Frame::ok()
    );
    // The server allocates once for the first key of a database and for the latency histogram of
    // each command on its first call: run them once before measuring.
    assert_eq!(
        conn.call(&["BF.RESERVE", "warm-up", "0.01", "10"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "warm-up", "x"]), Frame::Int(1));
    conn.call(&["MEMORY", "USAGE", "warm-up"]);
    common::used_memory(&mut conn);
    // One big filter: 1,000,000 items at 0.1% (1.9 MB of bits).
    let before = common::used_memory(&mut conn);
    assert_eq!(
        conn.call(&["BF.RESERVE", "big", "0.001", "1000000"]),
        Frame::ok()
    );
    let charged = common::used_memory(&mut conn) - before;
    let reported = conn.call(&["MEMORY", "USAGE", "big"]).int();
    let gap = (reported - charged).abs() as f64 / charged as f64;
    assert!(gap < 0.01, "reported {reported}, charged {charged}");
    // Many small ones: placeholder keys first, so the main hash table neither grows nor shrinks
    // while the filters are created in their place.
    // (Pipelined on a connection of their own, closed before measuring: the server shrinks a
    // big query buffer some time later, which would show in used_memory.)
    let mut filler = server.conn();
    for i in 0..2000 {
        filler.send(&["SET", &format!("placeholder:{i}"), "x"]);
    }
    for _ in 0..2000 {
        filler.read();
    }
    drop(filler);
    // Ours and the one asking.
    while server.info_field("clients", "connected_clients") != "2" {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for i in 0..1000 {
        conn.call(&["DEL", &format!("placeholder:{i}")]);
    }
    let before = common::used_memory(&mut conn);
    for i in 0..1000 {
        assert_eq!(
            conn.call(&["BF.ADD", &format!("small:{i:04}"), "x"]),
            Frame::Int(1)
        );
    }
    let charged = common::used_memory(&mut conn) - before;
    let reported: i64 = (0..1000)
        .map(|i| {
            conn.call(&["MEMORY", "USAGE", &format!("small:{i:04}")])
                .int()
        })
        .sum();
    // MEMORY USAGE of any module key leaves out 40 bytes the server itself spends on it: the
    // object header (16) and module-value holder (16) it wraps the value in, and the difference
    // between its dict entry's size (24) and what the allocator charges for it (32). Everything
    // the filter allocated is counted, to the byte.
    assert_eq!(
        charged - reported,
        40 * 1000,
        "reported {reported}, charged {charged}"
    );
}

/// Byte lengths of the pieces a bit array of `bits` bits is saved in (the layout of
/// `filters::bits`): equal strides of the largest power of two up to an eighth of the array
/// (256 bytes to 16 MiB), then the remainder's binary digits from 128 bytes up, then the rest.
fn bf_pieces(bits: u64) -> Vec<usize> {
    let stride = (63 - (bits / 8).max(1).leading_zeros()).clamp(11, 27);
    let mut pieces = vec![1usize << (stride - 3); (bits >> stride) as usize];
    let tail = bits & ((1 << stride) - 1);
    pieces.extend(
        (10..stride)
            .rev()
            .filter(|d| tail & (1 << d) != 0)
            .map(|d| 1usize << (d - 3)),
    );
    if tail & 1023 != 0 {
        pieces.push((tail & 1023) as usize / 8);
    }
    pieces
}

/// A real payload of a small filter, for its envelope.
fn envelope(conn: &mut common::Conn) -> (Envelope, Vec<u8>) {
    assert_eq!(
        conn.call(&["BF.RESERVE", "model", "0.01", "100"]),
        Frame::ok()
    );
    conn.call(&["BF.ADD", "model", "x"]);
    let payload = conn.call(&["DUMP", "model"]).bytes();
    (Envelope::from_dump(&payload), payload)
}

/// The fields of a valid one-sub-filter chain: 100 items at 0.5% (a scaling chain made with
/// p = 1%), with an empty bit array.
fn valid_fields(items: u64) -> Vec<Field> {
    // 100 items at 0.005: 1102.9 bits -> 1152, 8 hashes; pieces of 128 + 16 bytes.
    vec![
        Field::Unsigned(0),
        Field::Unsigned(2),
        Field::Unsigned(1),
        Field::Unsigned(100),
        Field::Double(0.005),
        Field::Unsigned(8),
        Field::Unsigned(1152),
        Field::Unsigned(items),
        Field::Buffer(vec![0; 128]),
        Field::Buffer(vec![0; 16]),
    ]
}

/// The stored form of encoding version 102: the kind (0: a chain), a chain's fields, then its
/// restoring state (0: in use).
fn in_use(fields: Vec<Field>) -> Vec<Field> {
    restoring_at(fields, 0)
}

/// [`in_use`] with restoring field `restoring`.
fn restoring_at(fields: Vec<Field>, restoring: u64) -> Vec<Field> {
    let mut stored = vec![Field::Unsigned(0)];
    stored.extend(fields);
    stored.push(Field::Unsigned(restoring));
    stored
}

#[test]
fn restore_accepts_a_hand_built_valid_filter() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    let payload = envelope.payload(&in_use(valid_fields(0)));
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"built", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.EXISTS", "built", "x"]), Frame::Int(0));
    assert_eq!(conn.call(&["BF.ADD", "built", "x"]), Frame::Int(1));
    // Encoding versions 100 (the chain alone) and 101 (and its restoring state) are still read.
    let payload = envelope
        .with_encoding_version(100)
        .payload(&valid_fields(0));
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"old", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "old", "x"]), Frame::Int(1));
    let mut fields = valid_fields(0);
    fields.push(Field::Unsigned(0));
    let payload = envelope.with_encoding_version(101).payload(&fields);
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"older", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "older", "x"]), Frame::Int(1));
    // A filter stored while being restored, its one data chunk still to come.
    let payload = envelope.payload(&restoring_at(valid_fields(0), 1));
    assert_eq!(
        conn.call(&[&b"RESTORE"[..], b"half", b"0", &payload]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["BF.EXISTS", "half", "x"]),
        Frame::error(
            "ERR filter is being restored by BF.LOADCHUNK (0 of 144 bytes loaded): it answers \
             once its last chunk has arrived"
        )
    );
}

/// What RESTORE answers a payload its loader refuses.
const BAD_DATA: &str = "ERR Bad data format";

/// [`valid_fields`] with field `index` replaced.
fn valid_but(index: usize, field: Field) -> Vec<Field> {
    let mut fields = valid_fields(0);
    fields[index] = field;
    fields
}

/// Chains no real filter is: each field of a valid chain wrong in turn, pieces missing, sub-filters
/// that growth does not make, a huge filter claimed with no data behind it.
fn forged_chains() -> Vec<Forged<Vec<Field>>> {
    let mut missing_piece = valid_fields(0);
    missing_piece.pop();
    let mut two_claimed = valid_fields(0);
    two_claimed[2] = Field::Unsigned(2);
    let mut fixed_with_two = valid_fields(100);
    fixed_with_two[1] = Field::Unsigned(0);
    fixed_with_two[2] = Field::Unsigned(2);
    fixed_with_two.extend(valid_fields(0)[3..].iter().cloned());
    let mut breaks_growth = valid_fields(100);
    breaks_growth[2] = Field::Unsigned(2);
    breaks_growth.extend(valid_fields(0)[3..].iter().cloned());
    // A consistent header that claims a petabyte-scale filter, with no data behind it: refused
    // when the first piece is missing, before anything is allocated for it.
    let mut huge = valid_fields(0);
    huge.truncate(8);
    let (hashes, bits) = common::sizing(1 << 50, 0.005);
    huge[3] = Field::Unsigned(1 << 50);
    huge[5] = Field::Unsigned(hashes);
    huge[6] = Field::Unsigned(bits);
    // Two sub-filters where the older one still has room: not something growth makes.
    let mut early_growth = valid_fields(50);
    early_growth[2] = Field::Unsigned(2);
    let (hashes, bits) = common::sizing(200, 0.0025);
    early_growth.extend([
        Field::Unsigned(200),
        Field::Double(0.0025),
        Field::Unsigned(hashes),
        Field::Unsigned(bits),
        Field::Unsigned(0),
    ]);
    early_growth.extend(
        bf_pieces(bits)
            .into_iter()
            .map(|len| Field::Buffer(vec![0; len])),
    );
    vec![
        (
            "unknown hash family",
            valid_but(0, Field::Unsigned(7)),
            BAD_DATA,
        ),
        (
            "expansion over 32768",
            valid_but(1, Field::Unsigned(40000)),
            BAD_DATA,
        ),
        ("no sub-filters", valid_but(2, Field::Unsigned(0)), BAD_DATA),
        ("zero capacity", valid_but(3, Field::Unsigned(0)), BAD_DATA),
        ("error rate 0", valid_but(4, Field::Double(0.0)), BAD_DATA),
        ("error rate 1.5", valid_but(4, Field::Double(1.5)), BAD_DATA),
        (
            "error rate NaN",
            valid_but(4, Field::Double(f64::NAN)),
            BAD_DATA,
        ),
        (
            "hash count off by one",
            valid_but(5, Field::Unsigned(9)),
            BAD_DATA,
        ),
        (
            "4 billion hashes",
            valid_but(5, Field::Unsigned(4_294_967_296)),
            BAD_DATA,
        ),
        (
            "bit count off",
            valid_but(6, Field::Unsigned(1216)),
            BAD_DATA,
        ),
        (
            "more items than capacity",
            valid_but(7, Field::Unsigned(101)),
            BAD_DATA,
        ),
        (
            "short piece",
            valid_but(8, Field::Buffer(vec![0; 64])),
            BAD_DATA,
        ),
        (
            "long piece",
            valid_but(9, Field::Buffer(vec![0; 32])),
            BAD_DATA,
        ),
        (
            "a number where a piece belongs",
            valid_but(9, Field::Unsigned(16)),
            BAD_DATA,
        ),
        ("missing piece", missing_piece, BAD_DATA),
        ("second sub-filter missing", two_claimed, BAD_DATA),
        ("nonscaling with two sub-filters", fixed_with_two, BAD_DATA),
        (
            "second sub-filter not grown by the rule",
            breaks_growth,
            BAD_DATA,
        ),
        ("a huge claimed filter", huge, BAD_DATA),
        (
            "an older sub-filter that is not full",
            early_growth,
            BAD_DATA,
        ),
    ]
}

/// Stored forms no real filter has: each forged chain in use, and a valid chain with the stored
/// form's own fields (kind, restoring state) wrong.
fn forged_stored_forms() -> Vec<Forged<Vec<Field>>> {
    let mut forged: Vec<Forged<Vec<Field>>> = forged_chains()
        .into_iter()
        .map(|(what, fields, error)| (what, in_use(fields), error))
        .collect();
    let mut trailing = in_use(valid_fields(0));
    trailing.push(Field::Unsigned(1));
    let mut no_state = vec![Field::Unsigned(0)];
    no_state.extend(valid_fields(0));
    let no_kind = valid_fields(0)
        .into_iter()
        .chain([Field::Unsigned(0)])
        .collect();
    let mut unknown_kind = in_use(valid_fields(0));
    unknown_kind[0] = Field::Unsigned(7);
    forged.extend([
        ("trailing data", trailing, BAD_DATA),
        ("no restoring state", no_state, BAD_DATA),
        ("no kind", no_kind, BAD_DATA),
        ("unknown kind", unknown_kind, BAD_DATA),
        // 144 bytes of bits: one chunk, so the only place a restore can be at is its start.
        (
            "restoring at the end",
            restoring_at(valid_fields(0), 145),
            BAD_DATA,
        ),
        (
            "restoring inside a chunk",
            restoring_at(valid_fields(0), 9),
            BAD_DATA,
        ),
    ]);
    forged
}

/// The server still answers, and the filter the envelope came from is intact.
fn still_answers(conn: &mut common::Conn) {
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    assert_eq!(conn.call(&["BF.EXISTS", "model", "x"]), Frame::Int(1));
}

#[test]
fn restore_refuses_forged_filters_and_the_server_lives() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, _) = envelope(&mut conn);
    for (what, fields, error) in forged_stored_forms() {
        let payload = envelope.payload(&fields);
        assert_eq!(
            conn.call(&[&b"RESTORE"[..], b"forged", b"0", &payload]),
            Frame::error(error),
            "{what}"
        );
    }
    assert_eq!(conn.call(&["EXISTS", "forged"]), Frame::Int(0));
    still_answers(&mut conn);
}

#[test]
fn restore_refuses_every_truncation_of_a_real_payload_and_the_server_lives() {
    let server = Server::start();
    let mut conn = server.conn();
    let (envelope, real) = envelope(&mut conn);
    // (The last two cuts are left out: the two RDB-version bytes the envelope appends then stand
    // in for the missing tail and can make a different, well-formed filter.)
    for len in 0..envelope.body_len(&real) - 2 {
        let payload = envelope.truncated(&real, len);
        let reply = conn.call(&[&b"RESTORE"[..], b"cut", b"0", &payload]);
        assert!(reply.is_error(), "cut at {len}: {reply:?}");
    }
    assert_eq!(conn.call(&["EXISTS", "cut"]), Frame::Int(0));
    still_answers(&mut conn);
}
