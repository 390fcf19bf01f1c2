//! Single cuckoo commands that hash their item before the key is opened (`src/hint.rs`):
//! whatever key the commands before used, every reply and every stored byte is what it would be
//! without the hint.

mod common;

use common::{Conn, Frame, Server};

fn call(conn: &mut Conn, line: &str) -> Frame {
    conn.call(&line.split(' ').collect::<Vec<_>>())
}

/// A boolean as `protocol` answers it.
fn boolean(protocol: u8, value: bool) -> Frame {
    common::boolean(protocol, value)
}

/// The keys of the early-hash test: (database, name, how it is made). Four are big enough for a
/// single command to hash its item before the key is opened (256 KiB and more): two of one name in
/// two databases (RedisBloom's hashing in one, then 16-bit fingerprints; 12-bit ones in the
/// other), one that grows while its hint is kept (a sub-filter of one-slot buckets, nearly full:
/// see [`early_hash_commands`]), and one made with `ERROR`; the small one never is.
const EARLY_KEYS: [(u8, &str, &str); 5] = [
    (0, "big", "CF.RESERVE big 1048576 BUCKETSIZE 4"),
    (
        1,
        "big",
        "CF.INSERT big CAPACITY 600000 ERROR 0.01 ITEMS seed",
    ),
    (
        0,
        "grows",
        "CF.RESERVE grows 262144 BUCKETSIZE 1 EXPANSION 2",
    ),
    (
        0,
        "bounded",
        "CF.INSERT bounded CAPACITY 300000 ERROR 0.01 ITEMS seed",
    ),
    (0, "small", "CF.RESERVE small 64 BUCKETSIZE 2 EXPANSION 1"),
];

/// Items put in `grows` by CF.INSERT before its single commands: just under what its one-slot
/// buckets take before an add finds no room (about 90,000, a third of its slots), so that its
/// single adds make it grow (checked at the end).
const GROWS_FILL: usize = 89_900;

/// Each key's single-item commands, in its own order: adds, unique adds, lookups and deletes of
/// items from a pool small enough to repeat; halfway, the first key is deleted and made again
/// with the other hashing (a hint kept for its name now points at freed memory), and `bounded`
/// is made again small (no longer worth a hint).
fn early_hash_commands(rng: &mut common::rng::Rng) -> Vec<Vec<Vec<String>>> {
    let verbs = ["CF.ADD", "CF.ADDNX", "CF.EXISTS", "CF.DEL", "CF.EXISTS"];
    EARLY_KEYS
        .iter()
        .enumerate()
        .map(|(index, (_, key, make))| {
            let count = if *key == "small" { 400 } else { 3000 };
            let mut commands: Vec<Vec<String>> = vec![words(make)];
            if *key == "grows" {
                commands.extend((0..GROWS_FILL).step_by(1000).map(|start| {
                    let items = (start..GROWS_FILL.min(start + 1000)).map(|i| format!("fill:{i}"));
                    ["CF.INSERT", "grows", "ITEMS"]
                        .map(String::from)
                        .into_iter()
                        .chain(items)
                        .collect()
                }));
            }
            for step in 0..count {
                if index == 0 && step == count / 2 {
                    commands.push(words("DEL big"));
                    commands.push(words(
                        "CF.INSERT big CAPACITY 500000 ERROR 0.001 ITEMS seed",
                    ));
                }
                if *key == "bounded" && step == count / 2 {
                    commands.push(words("DEL bounded"));
                    commands.push(words("CF.RESERVE bounded 64 BUCKETSIZE 2 EXPANSION 1"));
                }
                let verb = rng.pick(&verbs).to_string();
                let item = format!("item:{}", rng.below(count / 3));
                commands.push(vec![verb, key.to_string(), item]);
            }
            commands
        })
        .collect()
}

/// A command line's words.
fn words(line: &str) -> Vec<String> {
    line.split(' ').map(String::from).collect()
}

/// Runs `order` (key indexes, one per command) on `conn`, selecting each key's database; each
/// key's replies in its own order.
fn run_early(conn: &mut Conn, commands: &[Vec<Vec<String>>], order: &[usize]) -> Vec<Vec<Frame>> {
    let mut next = vec![0; commands.len()];
    let mut batch: Vec<Vec<String>> = Vec::new();
    let mut owners: Vec<Option<usize>> = Vec::new();
    let mut db = None;
    for &key in order {
        if db != Some(EARLY_KEYS[key].0) {
            db = Some(EARLY_KEYS[key].0);
            batch.push(words(&format!("SELECT {}", EARLY_KEYS[key].0)));
            owners.push(None);
        }
        batch.push(commands[key][next[key]].clone());
        owners.push(Some(key));
        next[key] += 1;
    }
    let mut replies = vec![Vec::new(); commands.len()];
    for (chunk, owned) in batch.chunks(1000).zip(owners.chunks(1000)) {
        for (reply, owner) in common::pipeline(conn, chunk).into_iter().zip(owned) {
            match owner {
                Some(key) => replies[*key].push(reply),
                None => assert_eq!(reply, Frame::ok()),
            }
        }
    }
    replies
}

#[test]
fn single_commands_answer_alike_whatever_key_the_command_before_used() {
    // A single CF.ADD, CF.ADDNX, CF.EXISTS or CF.DEL on a big filter hashes its item before the
    // key is opened when a hint is kept for its key (src/hint.rs): one server takes each
    // key's commands together, the other interleaves them at random (a name shared by two
    // databases, a key made again with the other hashing, one made again small).
    // Every reply and every filter's bytes must be the same, and no item added and not deleted
    // may be missed.
    let mut rng = common::rng::Rng(0x5eed_cafe);
    let commands = early_hash_commands(&mut rng);
    let together: Vec<usize> = (0..commands.len())
        .flat_map(|key| std::iter::repeat_n(key, commands[key].len()))
        .collect();
    let mut interleaved = together.clone();
    for at in (1..interleaved.len()).rev() {
        interleaved.swap(at, rng.below(at + 1));
    }
    // Each key's first command (its creation) stays first for that key: swapping kept the count
    // per key, and `run_early` takes each key's commands in its own order.
    let (a, b) = (Server::start(), Server::start());
    let (mut left, mut right) = (a.conn(), b.conn());
    let expected = run_early(&mut left, &commands, &together);
    let replies = run_early(&mut right, &commands, &interleaved);
    for (key, (mine, theirs)) in expected.iter().zip(&replies).enumerate() {
        let differs = mine.iter().zip(theirs).position(|(a, b)| a != b);
        assert_eq!(mine.len(), theirs.len());
        assert_eq!(
            differs.map(|at| (&commands[key][at], &mine[at], &theirs[at])),
            None,
            "key {:?}",
            EARLY_KEYS[key]
        );
    }
    for (db, key, _) in EARLY_KEYS {
        let select = db.to_string();
        for conn in [&mut left, &mut right] {
            assert_eq!(conn.call(&["SELECT", &select]), Frame::ok());
        }
        assert_eq!(
            common::chunks::cf_scandump(&mut left, key),
            common::chunks::cf_scandump(&mut right, key),
            "{db} {key}"
        );
        let debug = call(&mut left, &format!("CF.DEBUG {key}"));
        assert_eq!(debug, call(&mut right, &format!("CF.DEBUG {key}")));
        if key == "grows" {
            assert!(debug.text().contains("filters:2"), "{debug:?}");
        }
    }
    // What each key must hold: its adds less its deletes that found the item. A delete of an item
    // it does not hold that finds one (a false positive) may take another item's copy
    // (docs/commands.md): from then on until the key is made again, nothing is checked.
    for (key, replies) in commands.iter().zip(&expected) {
        let mut held: std::collections::HashMap<&str, i64> = Default::default();
        let mut exact = true;
        for (command, reply) in key.iter().zip(replies) {
            let (verb, item) = (command[0].as_str(), command.get(2).map(String::as_str));
            let copies = item.map_or(0, |item| *held.get(item).unwrap_or(&0));
            let yes = *reply == boolean(2, true);
            match (verb, item) {
                ("DEL", _) => {
                    held.clear();
                    exact = true;
                }
                ("CF.ADD" | "CF.ADDNX", Some(item)) if yes => *held.entry(item).or_default() += 1,
                ("CF.EXISTS", Some(_)) if copies > 0 && exact => {
                    assert!(yes, "{command:?}")
                }
                ("CF.DEL", Some(item)) if copies > 0 => {
                    assert!(yes || !exact, "{command:?}");
                    *held.entry(item).or_default() -= i64::from(yes);
                }
                ("CF.DEL", Some(_)) if yes => exact = false,
                _ => {}
            }
        }
    }
}
