//! A storm of random and malformed commands against a live server: random arity, random bytes,
//! huge, negative, NaN and infinite numbers, option soup, LOADCHUNK with forged headers and
//! offsets, RESTORE of forged payloads with a valid CRC (so that they reach the module's loader).
//! Afterwards the server still answers, every reply was an error or well formed, and once the
//! keyspace is flushed the memory is back where it started.

mod common;

use common::payload::Envelope;
use common::rng::{mangle, Rng};
use common::{used_memory, Conn, Frame, Options, Server, BF_COMMANDS};

/// Names the storm sends: every command, and two spelled in other letter cases.
const CASE_VARIANTS: [&str; 2] = ["bf.add", "Bf.Insert"];

const WORDS: &[&str] = &[
    "EXPANSION",
    "NONSCALING",
    "CAPACITY",
    "ERROR",
    "NOCREATE",
    "ITEMS",
    "SIZE",
    "FILTERS",
    "EXPANSION",
    "expansion",
    "items",
    "0.01",
    "0.5",
    "100",
    "2",
    "1",
    "0",
    "-1",
    "-0.5",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "1e308",
    "1e400",
    "1e-400",
    "4e-324",
    "99999999999999999999",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "32768",
    "32769",
    "10abc",
    "0x10",
    " 1",
    "1 ",
    "",
    "+5",
    "1.0",
    "1e3",
    "\0",
    "\r\n",
];

/// One random argument.
fn argument(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=4 => rng.pick(WORDS).as_bytes().to_vec(),
        5 | 6 => format!("item:{}", rng.below(500)).into_bytes(),
        7 => rng.next().to_string().into_bytes(),
        8 => rng.bytes(32),
        _ => {
            let max = if rng.chance(5) { 4096 } else { 200 };
            rng.bytes(max)
        }
    }
}

/// One random key: mostly a few names (so that commands meet filters), sometimes anything.
fn key(rng: &mut Rng) -> Vec<u8> {
    if rng.chance(5) {
        rng.bytes(40)
    } else {
        format!("k{}", rng.below(12)).into_bytes()
    }
}

/// Material taken from real filters before the storm.
struct Samples {
    headers: Vec<Vec<u8>>,
    chunks: Vec<(u64, Vec<u8>)>,
    dumps: Vec<Vec<u8>>,
    envelope: Envelope,
}

fn samples(conn: &mut Conn) -> Samples {
    let mut headers = Vec::new();
    let mut chunks = Vec::new();
    let mut dumps = Vec::new();
    let setups: [&[&str]; 3] = [
        &["BF.RESERVE", "sample:a", "0.01", "10"],
        &["BF.RESERVE", "sample:b", "0.001", "500", "NONSCALING"],
        &["BF.RESERVE", "sample:c", "0.1", "5", "EXPANSION", "3"],
    ];
    for setup in setups {
        assert_eq!(conn.call(setup), Frame::ok());
        let key = setup[1];
        for i in 0..40 {
            conn.call(&["BF.ADD", key, &format!("s{i}")]);
        }
        let mut dump = common::scandump(conn, key).into_iter();
        let (_, header) = dump.next().expect("a header chunk");
        headers.push(header);
        chunks.extend(dump.map(|(iterator, data)| (iterator as u64, data)));
        dumps.push(conn.call(&["DUMP", key]).bytes());
    }
    let envelope = Envelope::from_dump(&dumps[0]);
    conn.call(&["DEL", "sample:a", "sample:b", "sample:c"]);
    Samples {
        headers,
        chunks,
        dumps,
        envelope,
    }
}

/// One random command.
fn command(rng: &mut Rng, samples: &Samples) -> Vec<Vec<u8>> {
    match rng.below(20) {
        // BF.LOADCHUNK with a forged header (or, now and then, a real one, which starts a
        // restore that the data chunks below may then feed).
        0 => {
            let mut header = rng.pick(&samples.headers).clone();
            if rng.below(4) != 0 {
                mangle(rng, &mut header);
            }
            vec![b"BF.LOADCHUNK".to_vec(), key(rng), b"1".to_vec(), header]
        }
        // BF.LOADCHUNK with a real chunk at a forged iterator.
        1 => {
            let (iterator, data) = rng.pick(&samples.chunks).clone();
            let iterator = match rng.below(3) {
                0 => iterator,
                1 => iterator.wrapping_add(rng.below(64) as u64).wrapping_sub(32),
                _ => rng.next(),
            };
            vec![
                b"BF.LOADCHUNK".to_vec(),
                key(rng),
                iterator.to_string().into_bytes(),
                data,
            ]
        }
        // RESTORE of a forged payload, sealed with a valid CRC.
        2 => {
            let dump = rng.pick(&samples.dumps).clone();
            let seed = rng.next();
            let payload = samples.envelope.altered(&dump, |body| {
                let mut inner = Rng(seed | 1);
                mangle(&mut inner, body);
            });
            vec![
                b"RESTORE".to_vec(),
                key(rng),
                b"0".to_vec(),
                payload,
                b"REPLACE".to_vec(),
            ]
        }
        // A plausible creation, with options in any order, some of them wrong.
        3 | 4 => {
            let capacity = (1 + rng.below(5000)).to_string();
            let error = rng
                .pick(&["0.01", "0.5", "0.001", "1e-9", "0.3"])
                .to_string();
            let mut args = if rng.chance(50) {
                vec![
                    b"BF.RESERVE".to_vec(),
                    key(rng),
                    error.into(),
                    capacity.into(),
                ]
            } else {
                vec![
                    b"BF.INSERT".to_vec(),
                    key(rng),
                    b"CAPACITY".to_vec(),
                    capacity.into(),
                ]
            };
            for _ in 0..rng.below(3) {
                let option = rng.pick(&["EXPANSION", "NONSCALING", "ERROR", "NOCREATE"]);
                args.push(option.as_bytes().to_vec());
                if *option == "EXPANSION" || *option == "ERROR" {
                    args.push(
                        rng.pick(&["1", "2", "7", "0.2", "40000"])
                            .as_bytes()
                            .to_vec(),
                    );
                }
            }
            if args[0] == b"BF.INSERT" {
                args.push(b"ITEMS".to_vec());
                for _ in 0..1 + rng.below(20) {
                    args.push(argument(rng));
                }
            }
            args
        }
        // Anything: a BF command with a random number of random arguments.
        _ => {
            let names: Vec<&str> = BF_COMMANDS.into_iter().chain(CASE_VARIANTS).collect();
            let mut args = vec![rng.pick(&names).as_bytes().to_vec()];
            if !rng.chance(3) {
                args.push(key(rng));
            }
            for _ in 0..rng.below(9) {
                args.push(argument(rng));
            }
            args
        }
    }
}

#[test]
fn a_storm_of_malformed_commands_leaves_the_server_answering_and_no_memory_behind() {
    let options = Options::default()
        .config("bf.max-filter-bytes", "64kb")
        .config("maxmemory", "256mb")
        .config("maxmemory-policy", "noeviction")
        .config("slowlog-log-slower-than", "-1");
    let server = Server::with(options);
    let mut conn = server.conn();
    let samples = samples(&mut conn);
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    // Every command type once, then a flush, so that the server's one-time allocations (a latency
    // histogram per command, the first key of the database) are made before the baseline.
    for _ in 0..200 {
        let args = command(&mut rng, &samples);
        conn.call(&args);
    }
    conn.call(&["FLUSHALL"]);
    let baseline = used_memory(&mut conn);
    let total = 20_000;
    let batch = 100;
    // Per command: replies that were errors, and replies that were not.
    let mut tally: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for _ in 0..total / batch {
        let commands: Vec<Vec<Vec<u8>>> = (0..batch).map(|_| command(&mut rng, &samples)).collect();
        for args in &commands {
            conn.send(args);
        }
        for args in &commands {
            // The reader panics on anything that is not a well-formed reply.
            let reply = conn.read();
            assert!(!matches!(reply, Frame::Push(_)), "a push for {args:?}");
            let name = String::from_utf8_lossy(&args[0]).to_uppercase();
            let entry = tally.entry(name).or_default();
            if reply.is_error() {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
    }
    eprintln!("storm replies (errors, others): {tally:?}");
    let errors: usize = tally.values().map(|t| t.0).sum();
    assert!(
        errors > total / 4,
        "the storm should be mostly refused: {errors} errors"
    );
    // It also did things: forged payloads that happen to be valid, adds to filters it made.
    assert!(tally["BF.ADD"].1 > 0 && tally["BF.LOADCHUNK"].1 > 0 && tally["RESTORE"].1 > 0);
    assert_eq!(conn.call(&["PING"]), Frame::simple("PONG"));
    assert_eq!(server.conn().call(&["BF.ADD", "after", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["FLUSHALL"]), Frame::ok());
    let after = used_memory(&mut conn);
    assert!(
        (after - baseline).abs() < 1 << 20,
        "used_memory {baseline} before the storm, {after} after it and a FLUSHALL"
    );
    let filters: i64 = server.info_field("bf", "bf_filters").parse().unwrap();
    assert_eq!(filters, 0);
}
