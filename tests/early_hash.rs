//! Single `BF.ADD` and `BF.EXISTS` that hash their item before the key is opened
//! (`src/bloom/early.rs`): whatever keys the commands before them used, every reply and every
//! stored byte is what it is without the early request.
//!
//! Two servers take the same commands in the same order: one as single `BF.ADD`/`BF.EXISTS` (which
//! keep, use, replace and outlive hints of where big filters lie), the other as `BF.MADD`/
//! `BF.MEXISTS` of that one item (which never hash early). The keys cover both layouts, a windowed
//! filter, one name in two databases with two hashings (this module's and RedisBloom's, imported),
//! two names of one tag, a filter that grows under its hint, and every way a filter leaves a key
//! or comes into one without a command of this module (the module hears of none of them: a hint
//! only ever says where to prefetch from): deleted and unlinked (lazily freed), expired, evicted,
//! renamed, moved, copied (over a key, into another database), swapped with another database,
//! flushed, restored over a key, reloaded from RDB and from the AOF, each made again with other
//! parameters; then a replica of each, filled by a full sync, answers the same lookups. Each key
//! also takes runs of lookups that all find their item and runs that find none (a crawler's checks
//! of links mostly seen, then of new ones), so that its lookups ask for every probe's line early,
//! then for the first few again (`HeldShare`), with the answers unchanged either way.

mod common;

use common::rng::Rng;
use common::{Conn, Frame, Options, Server};

/// A command and the database it runs in.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    db: u8,
    words: Vec<String>,
}

fn words(line: &str) -> Vec<String> {
    line.split(' ').map(String::from).collect()
}

fn step(db: u8, line: &str) -> Step {
    Step {
        db,
        words: words(line),
    }
}

/// Items put in `grows` by BF.MADD before the single commands.
const GROWS_FILL: usize = 900_200;

/// Items put in `dense`, a fixed filter of a million, by BF.MADD before the single commands: 90%
/// full, so that some absent items are found (about 0.6%), and a lookup that read fewer probes
/// than it should would find several times as many. The adds after them stay within its capacity.
const DENSE_FILL: usize = 900_000;

/// Two names of one tag (`filters::hash::tag`: the length and the first and last eight bytes):
/// their hints share a table entry, and each may find the other's.
const SAME_TAG: [&str; 2] = ["tagfirst:1:lastpart", "tagfirst:2:lastpart"];

/// RedisBloom 2.4's `BF.SCANDUMP` header of `BF.RESERVE k <2 * error> <capacity>` before any add:
/// one link sized RedisBloom's way, hashed by its 64-bit MurmurHash (options 5), and the length of
/// its bit array.
fn redisbloom_header(capacity: u64, error: f64) -> (Vec<u8>, usize) {
    let bits_per_item = -error.ln() / 0.480453013918201;
    #[allow(clippy::approx_constant)] // RedisBloom's digits, not std's LN_2
    let hashes = (0.693147180559945 * bits_per_item).ceil() as u32;
    let bits = ((capacity as f64 * bits_per_item) as u64).next_multiple_of(64);
    let mut header = Vec::new();
    header.extend(0u64.to_le_bytes()); // items
    header.extend(1u32.to_le_bytes()); // links
    header.extend(5u32.to_le_bytes()); // options: 64-bit hashing, no rounding
    header.extend(2u32.to_le_bytes()); // growth
    header.extend((bits / 8).to_le_bytes());
    header.extend(bits.to_le_bytes());
    header.extend(0u64.to_le_bytes()); // items in the link
    header.extend(error.to_le_bytes());
    header.extend(bits_per_item.to_le_bytes());
    header.extend(hashes.to_le_bytes());
    header.extend(capacity.to_le_bytes());
    header.push(0); // n2
    (header, (bits / 8) as usize)
}

/// Makes `key` in the connection's database a RedisBloom filter of a million items at 1% (1.4 MB,
/// big enough for a hint), empty, through BF.LOADCHUNK.
fn redisbloom_big(conn: &mut Conn, key: &str) {
    let (header, bytes) = redisbloom_header(1_000_000, 0.005);
    assert_eq!(common::loadchunk(conn, key, 1, &header), Frame::ok());
    let zeros = vec![0u8; bytes];
    assert_eq!(
        common::loadchunk(conn, key, bytes as i64 + 1, &zeros),
        Frame::ok()
    );
}

/// The keys single commands go to in a phase: (database, name).
type Keys = Vec<(u8, String)>;

/// `count` single commands on `keys` in random order: adds and lookups of items from a pool
/// small enough to repeat (so that adds find items held and lookups find them too).
fn singles(rng: &mut Rng, keys: &Keys, count: usize) -> Vec<Step> {
    (0..count)
        .map(|_| {
            let (db, key) = rng.pick(keys).clone();
            let verb = if rng.below(2) == 0 {
                "BF.ADD"
            } else {
                "BF.EXISTS"
            };
            Step {
                db,
                words: vec![verb.into(), key, format!("i:{}", rng.below(1500))],
            }
        })
        .collect()
}

/// Runs of single commands on each key that all find their item, then that all do not: the
/// key's lookups learn to ask early for every probe's line, then for the first few again. The
/// held items are put in by `BF.MADD` first; adds of them answer 0.
fn held_then_absent(rng: &mut Rng, keys: &Keys, round: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for (db, key) in keys {
        let mut madd = vec!["BF.MADD".to_string(), key.clone()];
        madd.extend((0..300).map(|i| format!("held{round}:{i}")));
        steps.push(Step {
            db: *db,
            words: madd,
        });
    }
    // Then two held items to one absent, on each key in turn (and many more on `dense`): its
    // lookups keep asking for every line, absent items' too, a few of which the full filter finds.
    let dense: Vec<(u8, String)> = keys
        .iter()
        .filter(|(_, key)| key == "dense")
        .cloned()
        .collect();
    for phase in ["held", "absent", "held", "mixed", "dense"] {
        let (count, on) = match phase {
            "mixed" => (150 * keys.len(), keys),
            "dense" => (6000 * dense.len(), &dense),
            _ => (40 * keys.len(), keys),
        };
        for step in 0..count {
            let (db, key) = match phase {
                "mixed" | "dense" => on[(step / 3) % on.len()].clone(),
                _ => rng.pick(on).clone(),
            };
            let verb = if rng.below(4) == 0 {
                "BF.ADD"
            } else {
                "BF.EXISTS"
            };
            let held = match phase {
                "held" => true,
                "absent" => false,
                _ => step % 3 != 2,
            };
            let item = if held {
                format!("held{round}:{}", rng.below(300))
            } else {
                format!("absent{round}:{}", rng.below(1_000_000))
            };
            steps.push(Step {
                db,
                words: vec![verb.into(), key, item],
            });
        }
    }
    steps
}

/// The whole script, setup included (the RedisBloom filters are loaded apart: see `run`).
fn script(rng: &mut Rng) -> Vec<Step> {
    let mut steps = vec![
        step(0, "BF.RESERVE big 0.01 1000000"),
        step(0, "BF.RESERVE blocked 0.001 1000000 LAYOUT BLOCKED"),
        step(0, "BF.RESERVE windowed 0.01 4000000 WINDOW 315360000"),
        step(0, "BF.RESERVE grows 0.01 900000 EXPANSION 2"),
        step(0, "BF.RESERVE small 0.01 1000"),
        step(0, "BF.RESERVE dense 0.01 1000000 NONSCALING"),
        step(0, &format!("BF.RESERVE {} 0.01 1000000", SAME_TAG[0])),
        step(
            0,
            &format!("BF.RESERVE {} 0.01 1000000 LAYOUT BLOCKED", SAME_TAG[1]),
        ),
    ];
    // `grows` filled just short of its capacity (900,200 items, of which 899,5xx are new to it:
    // the rest are false positives), so that single adds make it grow.
    for start in (0..GROWS_FILL).step_by(1000) {
        let mut madd = vec!["BF.MADD".to_string(), "grows".into()];
        madd.extend((start..GROWS_FILL.min(start + 1000)).map(|i| format!("fill:{i}")));
        steps.push(Step { db: 0, words: madd });
    }
    for start in (0..DENSE_FILL).step_by(1000) {
        let mut madd = vec!["BF.MADD".to_string(), "dense".into()];
        madd.extend((start..DENSE_FILL.min(start + 1000)).map(|i| format!("dense:{i}")));
        steps.push(Step { db: 0, words: madd });
    }
    let mut keys: Keys = [
        (0, "big"),
        (1, "big"),
        (0, "blocked"),
        (0, "windowed"),
        (0, "grows"),
        (0, "dense"),
        (0, "small"),
        (0, SAME_TAG[0]),
        (0, SAME_TAG[1]),
    ]
    .iter()
    .map(|(db, key)| (*db, key.to_string()))
    .collect();
    steps.extend(singles(rng, &keys, 6000));
    steps.extend(held_then_absent(rng, &keys, 0));
    // Made again with another layout under the same name (a lazy free of the old one).
    steps.push(step(0, "DEL big"));
    steps.push(step(0, "BF.RESERVE big 0.01 1000000 LAYOUT BLOCKED"));
    // Renamed: the old name's hint points at a filter that lives on under another name.
    steps.push(step(0, "RENAME blocked moved"));
    keys.retain(|(_, key)| key != "blocked");
    keys.push((0, "moved".into()));
    // Made again small: no longer worth a hint.
    steps.push(step(0, &format!("DEL {}", SAME_TAG[0])));
    steps.push(step(0, &format!("BF.RESERVE {} 0.01 100", SAME_TAG[0])));
    steps.extend(singles(rng, &keys, 4000));
    steps.extend(held_then_absent(rng, &keys, 1));
    // The two databases swapped: `big` in 0 is RedisBloom's now, this module's in 1.
    steps.push(step(0, "SWAPDB 0 1"));
    for (db, _) in keys.iter_mut() {
        *db = 1 - *db;
    }
    steps.extend(singles(rng, &keys, 4000));
    // Every filter moved in memory by a reload; then the windowed filter dumped and restored
    // under its name, and database 1 flushed (its keys made again, one small).
    steps.push(step(0, "DEBUG RELOAD"));
    steps.extend(singles(rng, &keys, 2000));
    steps.extend(held_then_absent(rng, &keys, 2));
    steps.push(step(0, "FLUSHDB"));
    keys.retain(|(db, _)| *db != 0);
    steps.push(step(0, "BF.RESERVE big 0.001 2000000"));
    steps.push(step(0, "BF.RESERVE moved 0.01 10"));
    keys.extend([(0, "big".to_string()), (0, "moved".to_string())]);
    steps.extend(singles(rng, &keys, 4000));
    // The other ways a filter leaves its key or comes into one without a command of this module
    // (the module hears of none of them): UNLINK (freed lazily) and made again; expired and made
    // again; evicted (the only key with a time to live, under volatile-ttl) and made again.
    steps.push(step(1, "UNLINK big"));
    steps.push(step(1, "BF.RESERVE big 0.01 1000000 LAYOUT BLOCKED"));
    steps.push(step(1, "PEXPIRE small 1"));
    steps.push(step(1, "DEBUG SLEEP 0.01"));
    steps.push(step(1, "BF.RESERVE small 0.01 2000000"));
    for line in [
        "CONFIG SET maxmemory-policy volatile-ttl",
        "PEXPIRE windowed 100000000",
        "CONFIG SET maxmemory 1",
        "PING",
        "CONFIG SET maxmemory 0",
        "BF.RESERVE windowed 0.01 4000000 WINDOW 315360000",
    ] {
        steps.push(step(1, line));
    }
    steps.extend(singles(rng, &keys, 3000));
    // COPY over a key and into another database under the same name, MOVE, RESTORE over a key
    // (one big filter's dump in place of a small one's, and the other way), then the AOF loaded
    // again (every filter in new memory).
    steps.push(step(1, &format!("COPY moved {} REPLACE", SAME_TAG[0])));
    steps.push(step(1, "COPY big big DB 0 REPLACE"));
    steps.push(step(1, &format!("MOVE {} 0", SAME_TAG[1])));
    for (db, key) in keys.iter_mut() {
        if key == SAME_TAG[1] {
            *db = 0;
        }
    }
    steps.push(step(0, "DUMP-RESTORE moved big"));
    steps.push(step(1, "DUMP-RESTORE big moved"));
    steps.extend(singles(rng, &keys, 3000));
    steps.push(step(0, "DEBUG LOADAOF"));
    steps.extend(singles(rng, &keys, 3000));
    steps
}

/// Runs the script: as single commands (`early`), or as BF.MADD/BF.MEXISTS of one item. The
/// replies of the single-item commands, each as a boolean (the batches' one element).
fn run(server: &Server, steps: &[Step], early: bool) -> Vec<Frame> {
    let mut conn = server.conn();
    assert_eq!(conn.call(&["SELECT", "1"]), Frame::ok());
    redisbloom_big(&mut conn, "big");
    let mut db = None;
    let mut batch: Vec<Vec<String>> = Vec::new();
    let mut single: Vec<bool> = Vec::new();
    let mut replies = Vec::new();
    for step in steps {
        if db != Some(step.db) {
            db = Some(step.db);
            batch.push(words(&format!("SELECT {}", step.db)));
            single.push(false);
        }
        let mut words = step.words.clone();
        if words[0] == "DUMP-RESTORE" {
            // The dump of the first key in place of the second (RESTORE ... REPLACE): the
            // commands before it run first, as its payload is read between them.
            replies.extend(send(&mut conn, &batch, &single));
            (batch, single) = (Vec::new(), Vec::new());
            let payload = conn.call(&["DUMP", &words[1]]).bytes();
            let restore = [
                b"RESTORE".as_slice(),
                words[2].as_bytes(),
                b"0",
                &payload,
                b"REPLACE",
            ];
            assert_eq!(conn.call(&restore), Frame::ok(), "{words:?}");
            continue;
        }
        let is_single = matches!(words[0].as_str(), "BF.ADD" | "BF.EXISTS");
        if is_single && !early {
            words[0] = if words[0] == "BF.ADD" {
                "BF.MADD".into()
            } else {
                "BF.MEXISTS".into()
            };
        }
        batch.push(words);
        single.push(is_single);
    }
    replies.extend(send(&mut conn, &batch, &single));
    replies
}

/// Sends `batch` in pipelines of 500 commands; the replies of those marked `single`, each as a
/// boolean (the batches' one element).
fn send(conn: &mut Conn, batch: &[Vec<String>], single: &[bool]) -> Vec<Frame> {
    let mut replies = Vec::new();
    for (chunk, kinds) in batch.chunks(500).zip(single.chunks(500)) {
        for ((reply, is_single), command) in common::pipeline(conn, chunk)
            .into_iter()
            .zip(kinds)
            .zip(chunk)
        {
            assert!(!reply.is_error(), "{command:?}: {reply:?}");
            if *is_single {
                replies.push(match reply {
                    Frame::Array(mut one) if one.len() == 1 => one.remove(0),
                    other => other,
                });
            }
        }
    }
    replies
}

/// Every key's digest, `BF.DEBUG` and dump, by database. A windowed filter's parts expire a
/// window after the time of the write that filled them, which differs between two servers by
/// the milliseconds between their writes: of it, the bits and `BF.DEBUG` without those times.
fn state(server: &Server) -> Vec<(u8, String, Vec<Frame>)> {
    let mut conn = server.conn();
    let mut all = Vec::new();
    for db in 0..2u8 {
        assert_eq!(conn.call(&["SELECT", &db.to_string()]), Frame::ok());
        let mut keys: Vec<String> = conn
            .call(&["KEYS", "*"])
            .items()
            .iter()
            .map(|key| String::from_utf8(key.bytes()).unwrap())
            .collect();
        keys.sort();
        for key in keys {
            let debug = common::debug_lines(&mut conn, &key);
            let windowed = debug.iter().any(|line| line.starts_with("generation"));
            let timeless = |line: &String| -> String {
                line.split(' ')
                    .filter(|field| !(windowed && field.starts_with("until:")))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut seen: Vec<Frame> = debug
                .iter()
                .map(|line| Frame::bulk(timeless(line)))
                .collect();
            if !windowed {
                seen.push(common::digest(&mut conn, &key));
            }
            let chunks = common::scandump(&mut conn, &key);
            let data = chunks.into_iter().skip(usize::from(windowed));
            seen.extend(data.map(|(iterator, data)| {
                Frame::Array(vec![Frame::Int(iterator), Frame::Bulk(data)])
            }));
            all.push((db, key, seen));
        }
    }
    all
}

#[test]
fn single_commands_answer_and_store_as_without_the_early_request() {
    // Lazy frees (a hint may point at memory another thread frees) and I/O threads, on both.
    let options = Options::default()
        .config("lazyfree-lazy-user-del", "yes")
        .config("lazyfree-lazy-server-del", "yes")
        .config("io-threads", "2")
        .config("appendonly", "yes")
        .config("enable-debug-command", "yes");
    let (with, without) = (Server::with(options.clone()), Server::with(options));
    let steps = script(&mut Rng(0x5eed_b100));
    let early = run(&with, &steps, true);
    let plain = run(&without, &steps, false);
    assert_eq!(early.len(), plain.len());
    let singles: Vec<&Step> = steps
        .iter()
        .filter(|step| matches!(step.words[0].as_str(), "BF.ADD" | "BF.EXISTS"))
        .collect();
    let differs = early.iter().zip(&plain).position(|(a, b)| a != b);
    assert_eq!(
        differs.map(|at| (singles[at], &early[at], &plain[at])),
        None,
        "the first single command that answered differently"
    );
    // Both answers occur: items added anew, added again, found and not.
    for answer in [Frame::Int(0), Frame::Int(1)] {
        assert!(early.contains(&answer), "{answer:?}");
    }
    let (mine, theirs) = (state(&with), state(&without));
    assert_eq!(
        mine.iter()
            .map(|(db, key, _)| (db, key))
            .collect::<Vec<_>>(),
        theirs
            .iter()
            .map(|(db, key, _)| (db, key))
            .collect::<Vec<_>>()
    );
    for (mine, theirs) in mine.iter().zip(&theirs) {
        assert!(mine == theirs, "{} {} differs", mine.0, mine.1);
    }
    // The filter that was to grow under its hint did (in database 1 since SWAPDB).
    let mut conn = with.conn();
    assert_eq!(conn.call(&["SELECT", "1"]), Frame::ok());
    let grows = common::bf_info_field(&mut conn, "grows", "Number of filters");
    assert_eq!(grows, Frame::Int(2));
    // A replica of each, by a full sync (every filter in new memory, under names whose hints the
    // replica never had), answers the same lookups.
    let replicas = [&with, &without].map(|primary| {
        let replica = Server::with(Options::default().config("io-threads", "2"));
        replica.replicate(primary);
        replica.catch_up(primary);
        replica
    });
    let mut keys: Keys = Vec::new();
    for (db, key, _) in &mine {
        keys.push((*db, key.clone()));
    }
    let lookups: Vec<Step> = self::singles(&mut Rng(0x5eed_b101), &keys, 4000)
        .into_iter()
        .map(|mut step| {
            step.words[0] = "BF.EXISTS".into();
            step
        })
        .collect();
    let early = run_lookups(&replicas[0], &lookups, true);
    assert_eq!(early, run_lookups(&replicas[1], &lookups, false));
    assert!(early.contains(&Frame::Int(1)) && early.contains(&Frame::Int(0)));
}

/// The replies of `steps` (BF.EXISTS only), as single commands (`early`) or as BF.MEXISTS of one
/// item, on a server that holds the filters already.
fn run_lookups(server: &Server, steps: &[Step], early: bool) -> Vec<Frame> {
    let mut conn = server.conn();
    let mut batch = Vec::new();
    let mut db = None;
    for step in steps {
        if db != Some(step.db) {
            db = Some(step.db);
            batch.push(words(&format!("SELECT {}", step.db)));
        }
        let mut words = step.words.clone();
        if !early {
            words[0] = "BF.MEXISTS".into();
        }
        batch.push(words);
    }
    let single: Vec<bool> = batch.iter().map(|words| words[0] != "SELECT").collect();
    send(&mut conn, &batch, &single)
}
