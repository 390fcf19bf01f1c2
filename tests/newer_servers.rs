//! What only servers newer than Redis 7.0 do with the module, tested on Valkey 8.0 (Debian's
//! bookworm-backports build, which `make test` unpacks under `target/valkey`): it has Redis 7.2's
//! module API (`RedisModule_SetCommandACLCategories`) and Redis 7.4's
//! `RedisModule_AddACLCategory`, so the BF commands get their `@read`/`@write`, `@fast`/`@slow`
//! and `@bloom` categories there, and ACL rules by category hold for them.

mod common;

use common::{
    acl_categories, acl_dry_run, acl_user, info_bf, now_ms, timed, Frame, Options, Server,
    BF_COMMANDS, CF_COMMANDS,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Valkey's server binary, as `make test` unpacks it.
fn valkey_server() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/valkey/usr/bin/valkey-server");
    assert!(
        path.exists(),
        "{} is missing: `make test` unpacks Debian's valkey-server there (scripts/fetch-valkey.sh)",
        path.display()
    );
    path
}

fn valkey() -> Server {
    Server::with(Options {
        server: Some(valkey_server()),
        ..Options::default()
    })
}

fn no_command_permission(user: &str, command: &str) -> Frame {
    Frame::error(&format!(
        "NOPERM User {user} has no permissions to run the '{}' command",
        command.to_lowercase()
    ))
}

#[test]
fn the_module_loads_and_works_on_valkey_8() {
    let server = valkey();
    let mut conn = server.conn();
    let info = conn.call(&["INFO", "server"]).text();
    assert!(info.contains("valkey_version:8."), "{info}");
    assert_eq!(conn.call(&["BF.RESERVE", "f", "0.01", "100"]), Frame::ok());
    assert_eq!(conn.call(&["BF.ADD", "f", "a"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["BF.MEXISTS", "f", "a", "b"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(0)])
    );
    assert_eq!(conn.call(&["BF.CARD", "f"]), Frame::Int(1));
}

#[test]
fn every_command_has_its_acl_categories_and_the_bloom_category_exists() {
    let server = valkey();
    let mut conn = server.conn();
    let categories: Vec<String> = conn
        .call(&["ACL", "CAT"])
        .items()
        .iter()
        .map(Frame::text)
        .collect();
    assert!(categories.contains(&"bloom".to_string()), "{categories:?}");
    assert!(categories.contains(&"cuckoo".to_string()), "{categories:?}");
    let mut fast = Vec::new();
    let families = [(&BF_COMMANDS[..], "@bloom"), (&CF_COMMANDS[..], "@cuckoo")];
    for (names, family) in families {
        for name in names {
            let info = conn.call(&["COMMAND", "INFO", name]).items()[0].items();
            let flags: Vec<String> = info[2].items().iter().map(Frame::text).collect();
            let has = |flag: &str| flags.iter().any(|f| f == flag);
            let access = if has("write") { "@write" } else { "@read" };
            let speed = if has("fast") { "@fast" } else { "@slow" };
            assert_eq!(
                acl_categories(&mut conn, name),
                [access, speed, family],
                "{name} with flags {flags:?}"
            );
            if has("fast") {
                fast.push(*name);
            }
        }
    }
    // The split the flags give: creating (in constant time), the lookups and the metadata
    // reads that answer in constant time are fast, and CF.DEL (RedisBloom's flags).
    assert_eq!(
        fast,
        [
            "BF.RESERVE",
            "BF.EXISTS",
            "BF.MEXISTS",
            "BF.INFO",
            "BF.CARD",
            "CF.RESERVE",
            "CF.EXISTS",
            "CF.MEXISTS",
            "CF.COUNT",
            "CF.DEL",
            "CF.INFO"
        ]
    );
}

#[test]
fn acl_rules_by_category_hold_for_the_bf_commands() {
    let server = valkey();
    let mut admin = server.conn();
    assert_eq!(admin.call(&["BF.ADD", "f", "a"]), Frame::Int(1));
    assert_eq!(admin.call(&["SET", "s", "v"]), Frame::ok());

    // Only the Bloom filter commands.
    let mut bloom = acl_user(&server, "bloom", &["~*", "+@bloom"]);
    assert_eq!(bloom.call(&["BF.ADD", "f", "b"]), Frame::Int(1));
    assert_eq!(bloom.call(&["BF.EXISTS", "f", "b"]), Frame::Int(1));
    assert_eq!(
        bloom.call(&["GET", "s"]),
        no_command_permission("bloom", "get")
    );
    assert_eq!(
        acl_dry_run(&mut admin, "bloom", &["BF.ADD", "f", "c"]),
        Frame::ok()
    );
    assert_eq!(
        acl_dry_run(&mut admin, "bloom", &["GET", "s"]),
        Frame::bulk("User bloom has no permissions to run the 'get' command")
    );

    // Everything but them.
    let mut others = acl_user(&server, "others", &["~*", "+@all", "-@bloom"]);
    assert_eq!(others.call(&["GET", "s"]), Frame::bulk("v"));
    assert_eq!(
        others.call(&["BF.EXISTS", "f", "a"]),
        no_command_permission("others", "BF.EXISTS")
    );
    assert_eq!(
        acl_dry_run(&mut admin, "others", &["BF.CARD", "f"]),
        Frame::bulk("User others has no permissions to run the 'bf.card' command")
    );

    // Reads of every kind, BF lookups among them, and no writes.
    let mut reader = acl_user(&server, "reader", &["~*", "+@read"]);
    assert_eq!(reader.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
    assert_eq!(reader.call(&["BF.CARD", "f"]), Frame::Int(2));
    assert_eq!(reader.call(&["GET", "s"]), Frame::bulk("v"));
    assert_eq!(
        reader.call(&["BF.ADD", "f", "z"]),
        no_command_permission("reader", "BF.ADD")
    );
    assert_eq!(
        reader.call(&["BF.RESERVE", "g", "0.01", "10"]),
        no_command_permission("reader", "BF.RESERVE")
    );
    assert_eq!(admin.call(&["BF.EXISTS", "f", "z"]), Frame::Int(0));
    assert_eq!(admin.call(&["EXISTS", "g"]), Frame::Int(0));
}

/// Valkey keeps a clock per command (`RedisModule_CachedMicroseconds`), which windowed filters
/// read there instead of the system clock: the same lifetimes.
#[test]
fn windowed_filters_keep_their_lifetimes_on_the_cached_clock() {
    let server = valkey();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["BF.RESERVE", "w", "0.01", "100", "WINDOW", "2"]),
        Frame::ok()
    );
    let added = timed(&mut conn, &["BF.ADD", "w", "a"]);
    assert_eq!(added.reply, Frame::Int(1));
    // Its part expires a window after the add, which the server made (its clock cached for the
    // command) between the request and its reply.
    let expiry = added.sent + 2000..=added.answered + 2000;
    // The key never expires by itself.
    assert_eq!(conn.call(&["PTTL", "w"]), Frame::Int(-1));
    // Held in a lookup answered before the part can have expired, forgotten in one sent after it
    // surely had, however long a busy machine kept either waiting; either in between.
    loop {
        let lookup = timed(&mut conn, &["BF.EXISTS", "w", "a"]);
        lookup.assert_by_expiry(expiry.clone(), Frame::Int(1), Frame::Int(0));
        if lookup.reply == Frame::Int(0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The sweep runs there too: the expired part is dropped without a write (a request sent after
    // the deadline must find it swept; a slow reply to one sent before is no failure).
    loop {
        let sent = now_ms();
        if info_bf(&server, "bf_swept_parts") > 0 {
            break;
        }
        assert!(sent <= added.answered + 4000, "not swept");
        std::thread::sleep(Duration::from_millis(50));
    }
}
