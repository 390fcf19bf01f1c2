//! Self-describing commands: `COMMAND INFO` gives each command's arity, flags and key spec;
//! `COMMAND DOCS` its summary, version, group, complexity and arguments, in RESP2 and RESP3; and
//! `redis-cli`, typing in a terminal, shows the argument hints it draws from them.

mod common;

use common::{Frame, Server};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One command as the server should describe it.
struct Expected {
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    key: &'static [&'static str],
    /// The grammar after the command name, as redis-cli renders the arguments.
    hint: &'static str,
}

const WRITE: &[&str] = &["write", "denyoom", "module"];
/// BF.RESERVE: O(1) (a filter of any size is made in constant time), `@fast` as on redis.io.
const WRITE_FAST: &[&str] = &["write", "denyoom", "module", "fast"];
const READ_FAST: &[&str] = &["readonly", "module", "fast"];
const READ: &[&str] = &["readonly", "module"];

const COMMANDS: [Expected; 11] = [
    Expected {
        name: "bf.reserve",
        arity: -4,
        flags: WRITE_FAST,
        key: &["RW", "insert"],
        hint: "key error_rate capacity [EXPANSION expansion] [NONSCALING] [WINDOW seconds] [LAYOUT CLASSIC|BLOCKED]",
    },
    Expected {
        name: "bf.add",
        arity: 3,
        flags: WRITE,
        key: &["RW", "insert"],
        hint: "key item",
    },
    Expected {
        name: "bf.madd",
        arity: -3,
        flags: WRITE,
        key: &["RW", "insert"],
        hint: "key item [item ...]",
    },
    Expected {
        name: "bf.insert",
        arity: -4,
        flags: WRITE,
        key: &["RW", "insert"],
        hint: "key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING] [WINDOW seconds] [LAYOUT CLASSIC|BLOCKED] ITEMS item [item ...]",
    },
    Expected {
        name: "bf.exists",
        arity: 3,
        flags: READ_FAST,
        key: &["RO", "access"],
        hint: "key item",
    },
    Expected {
        name: "bf.mexists",
        arity: -3,
        flags: READ_FAST,
        key: &["RO", "access"],
        hint: "key item [item ...]",
    },
    Expected {
        name: "bf.info",
        arity: -2,
        flags: READ_FAST,
        key: &["RO"],
        hint: "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|WINDOW|LAYOUT]",
    },
    Expected {
        name: "bf.card",
        arity: 2,
        flags: READ_FAST,
        key: &["RO"],
        hint: "key",
    },
    Expected {
        name: "bf.debug",
        arity: 2,
        flags: READ,
        key: &["RO"],
        hint: "key",
    },
    Expected {
        name: "bf.scandump",
        arity: 3,
        flags: READ,
        key: &["RO", "access"],
        hint: "key iterator",
    },
    Expected {
        name: "bf.loadchunk",
        arity: 4,
        flags: WRITE,
        key: &["RW", "update"],
        hint: "key iterator data",
    },
];

fn texts(frame: &Frame) -> Vec<String> {
    frame.items().iter().map(Frame::text).collect()
}

#[test]
fn command_info_gives_arity_flags_and_one_key_at_argument_one() {
    let server = Server::start();
    let mut conn = server.conn();
    for expected in &COMMANDS {
        let name = expected.name;
        let info = conn.call(&["COMMAND", "INFO", name]).items()[0].items();
        assert_eq!(info[0].text(), name, "{name}");
        assert_eq!(info[1], Frame::Int(expected.arity), "{name}");
        assert_eq!(texts(&info[2]), expected.flags, "{name}");
        // first key, last key, step
        assert_eq!(
            info[3..6],
            [Frame::Int(1), Frame::Int(1), Frame::Int(1)],
            "{name}"
        );
        let specs = info[8].items();
        assert_eq!(specs.len(), 1, "{name}: one key spec");
        let spec = specs[0].items();
        let field = |wanted: &str| {
            let at = spec.iter().position(|f| f == &Frame::bulk(wanted)).unwrap();
            spec[at + 1].clone()
        };
        assert_eq!(texts(&field("flags")), expected.key, "{name}");
        assert_eq!(
            field("begin_search").items(),
            [
                Frame::bulk("type"),
                Frame::bulk("index"),
                Frame::bulk("spec"),
                Frame::Array(vec![Frame::bulk("index"), Frame::Int(1)]),
            ],
            "{name}"
        );
        let mut getkeys = vec!["COMMAND", "GETKEYS", name, "k1", "x", "y", "z"];
        getkeys.truncate(if expected.arity > 0 {
            expected.arity as usize + 2
        } else {
            getkeys.len()
        });
        if name == "BF.INSERT" {
            getkeys.truncate(4);
            getkeys.extend(["ITEMS", "x"]);
        }
        assert_eq!(
            conn.call(&getkeys),
            Frame::Array(vec![Frame::bulk("k1")]),
            "{getkeys:?}"
        );
    }
}

/// A reply of `COMMAND DOCS` as (name, value) pairs, whether RESP2 (flat array) or RESP3 (map).
fn pairs(frame: &Frame) -> Vec<(String, Frame)> {
    match frame {
        Frame::Map(pairs) => pairs.iter().map(|(k, v)| (k.text(), v.clone())).collect(),
        Frame::Array(items) => items
            .chunks(2)
            .map(|pair| (pair[0].text(), pair[1].clone()))
            .collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn field(pairs: &[(String, Frame)], name: &str) -> Option<Frame> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// Renders documented arguments the way redis-cli writes its hints.
fn render(arguments: &Frame) -> String {
    arguments
        .items()
        .iter()
        .map(|argument| render_one(&pairs(argument)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn render_one(argument: &[(String, Frame)]) -> String {
    let text = |name: &str| field(argument, name).map(|f| f.text());
    let flags: Vec<String> = field(argument, "flags").map_or(Vec::new(), |f| match f {
        Frame::Set(items) | Frame::Array(items) => items.iter().map(Frame::text).collect(),
        other => panic!("flags: {other:?}"),
    });
    let kind = text("type").unwrap();
    let mut body = match kind.as_str() {
        "pure-token" => text("token").unwrap(),
        "oneof" => {
            let choices = field(argument, "arguments")
                .unwrap()
                .items()
                .iter()
                .map(|choice| render_one(&pairs(choice)))
                .collect::<Vec<_>>()
                .join("|");
            match text("token") {
                Some(token) => format!("{token} {choices}"),
                None => choices,
            }
        }
        _ => {
            let name = text("name").unwrap();
            match text("token") {
                Some(token) => format!("{token} {name}"),
                None => name,
            }
        }
    };
    if flags.iter().any(|f| f == "multiple") {
        body = format!("{body} [{body} ...]");
    }
    if flags.iter().any(|f| f == "optional") {
        body = format!("[{body}]");
    }
    body
}

#[test]
fn command_docs_give_summary_version_group_complexity_and_arguments() {
    let server = Server::start();
    for (protocol, mut conn) in server.both() {
        for expected in &COMMANDS {
            let name = expected.name;
            let reply = conn.call(&["COMMAND", "DOCS", name]);
            let top = pairs(&reply);
            assert_eq!(top.len(), 1, "{name}");
            assert_eq!(top[0].0, name, "{name}");
            let docs = pairs(&top[0].1);
            let names: Vec<&str> = docs.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(
                names,
                [
                    "summary",
                    "since",
                    "group",
                    "complexity",
                    "module",
                    "arguments"
                ],
                "{name} (RESP{protocol})"
            );
            let text = |key: &str| field(&docs, key).unwrap().text();
            assert!(text("summary").len() > 20, "{name}");
            assert_eq!(text("since"), env!("CARGO_PKG_VERSION"), "{name}");
            assert_eq!(text("group"), "module", "{name}");
            assert!(text("complexity").starts_with("O("), "{name}");
            assert_eq!(text("module"), "bf", "{name}");
            let arguments = field(&docs, "arguments").unwrap();
            assert_eq!(render(&arguments), expected.hint, "{name} (RESP{protocol})");
            // The key argument points at the key spec.
            let key = pairs(&arguments.items()[0]);
            assert_eq!(field(&key, "type").unwrap().text(), "key");
            assert_eq!(field(&key, "key_spec_index").unwrap(), Frame::Int(0));
        }
    }
    let mut conn = server.conn();
    let add = pairs(&pairs(&conn.call(&["COMMAND", "DOCS", "bf.add"]))[0].1);
    assert_eq!(
        field(&add, "summary").unwrap().text(),
        "Adds an item to a Bloom filter, creating the filter if it does not exist"
    );
    assert_eq!(
        field(&add, "complexity").unwrap().text(),
        "O(k * f): k hash functions in each of the filter's f sub-filters"
    );
}

/// Types `typed` into an interactive redis-cli (in a pseudo-terminal, through `script`) and
/// returns what it printed once `wanted` appeared, or everything after five seconds.
fn redis_cli_shows(port: u16, typed: &str, wanted: &str) -> String {
    let mut child = Command::new("script")
        .args(["-qfec"])
        .arg(format!(
            "stty cols 300 rows 50; exec redis-cli -h 127.0.0.1 -p {port}"
        ))
        .arg("/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run script(1) from util-linux");
    let mut stdout = child.stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(count) = stdout.read(&mut buffer) {
            if count == 0 || sender.send(buffer[..count].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut seen = Vec::new();
    let wait_for = |text: &str, seen: &mut Vec<u8>| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !String::from_utf8_lossy(seen).contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match receiver.recv_timeout(left) {
                Ok(bytes) => seen.extend(bytes),
                Err(_) => return,
            }
        }
    };
    wait_for(&format!("127.0.0.1:{port}> "), &mut seen);
    stdin.write_all(typed.as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_for(wanted, &mut seen);
    // Ctrl-U clears the line; then leave.
    let _ = stdin.write_all(b"\x15quit\r");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn redis_cli_shows_argument_hints_while_typing() {
    let server = Server::start();
    // What redis-cli prints: the line so far, then the hint in grey.
    let cases = [
        (
            "BF.INSERT f ",
            "[CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING] [WINDOW seconds] [LAYOUT CLASSIC|BLOCKED] ITEMS item [item ...]",
        ),
        (
            "bf.reserve k 0.01 ",
            "capacity [EXPANSION expansion] [NONSCALING] [WINDOW seconds] [LAYOUT CLASSIC|BLOCKED]",
        ),
        ("BF.INFO k ", "[CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|WINDOW|LAYOUT]"),
    ];
    for (typed, hint) in cases {
        let wanted = format!("{typed}\u{1b}[0;90;49m{hint}");
        let shown = redis_cli_shows(server.port, typed, &wanted);
        assert!(shown.contains(&wanted), "redis-cli printed:\n{shown:?}");
    }
}
