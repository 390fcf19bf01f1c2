//! The WRONGTYPE and arity errors of BF.MADD, BF.MEXISTS, BF.INSERT, BF.INFO, BF.CARD and
//! BF.DEBUG against a real server (those of BF.RESERVE, BF.ADD and BF.EXISTS: `add_exists.rs`).

mod common;

use common::{Frame, Server};

#[test]
fn wrong_types_and_argument_counts_of_the_new_commands() {
    let server = Server::start();
    let mut conn = server.conn();
    conn.call(&["SET", "s", "v"]);
    let wrongtype =
        Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    for cmd in [
        &["BF.MADD", "s", "a"][..],
        &["BF.MEXISTS", "s", "a"],
        &["BF.INSERT", "s", "ITEMS", "a"],
        &["BF.INSERT", "s", "NOCREATE", "ITEMS", "a"],
        &["BF.INFO", "s"],
        &["BF.INFO", "s", "SIZE"],
        &["BF.CARD", "s"],
        &["BF.DEBUG", "s"],
    ] {
        assert_eq!(conn.call(cmd), wrongtype, "{cmd:?}");
    }
    // The command's name as registered (lower case, as RedisBloom's), whatever the client typed.
    let arity = |name: &str| {
        Frame::error(&format!(
            "ERR wrong number of arguments for '{}' command",
            name.to_lowercase()
        ))
    };
    assert_eq!(conn.call(&["BF.MADD", "k"]), arity("BF.MADD"));
    assert_eq!(conn.call(&["BF.MEXISTS", "k"]), arity("BF.MEXISTS"));
    assert_eq!(conn.call(&["BF.INSERT", "k", "ITEMS"]), arity("BF.INSERT"));
    assert_eq!(conn.call(&["BF.INFO"]), arity("BF.INFO"));
    assert_eq!(conn.call(&["BF.CARD"]), arity("BF.CARD"));
    assert_eq!(conn.call(&["BF.CARD", "a", "b"]), arity("BF.CARD"));
    assert_eq!(conn.call(&["BF.DEBUG", "a", "b"]), arity("BF.DEBUG"));
}
