//! ACLs: the key specs each command declares let the server's key permissions hold for filters
//! (`%R~*` reads but never writes; `~tenant:a:*` never touches another tenant's filters), and
//! `ACL DRYRUN` agrees with what the commands do. The ACL recipes of docs/cluster.md are these users.

mod common;

use common::{acl_categories, acl_dry_run, acl_user, Conn, Frame, Server, BF_COMMANDS};

/// Every command that only reads a filter, on key `f` (which holds `a`, `b` and `c`).
fn reads(key: &str) -> Vec<Vec<String>> {
    [
        vec!["BF.EXISTS", key, "a"],
        vec!["BF.MEXISTS", key, "a", "never"],
        vec!["BF.INFO", key],
        vec!["BF.INFO", key, "ITEMS"],
        vec!["BF.CARD", key],
        vec!["BF.SCANDUMP", key, "0"],
        vec!["BF.DEBUG", key],
    ]
    .iter()
    .map(|command| command.iter().map(|part| part.to_string()).collect())
    .collect()
}

/// Every command that writes, on the existing filter `key` or a new key beside it, with a chunk
/// that LOADCHUNK would accept.
fn writes(key: &str, new_key: &str, chunk: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let text = |parts: &[&str]| -> Vec<Vec<u8>> {
        parts.iter().map(|part| part.as_bytes().to_vec()).collect()
    };
    vec![
        text(&["BF.RESERVE", new_key, "0.01", "10"]),
        text(&["BF.ADD", key, "y"]),
        text(&["BF.ADD", new_key, "y"]),
        text(&["BF.MADD", key, "y", "z"]),
        text(&["BF.INSERT", key, "ITEMS", "y"]),
        text(&["BF.INSERT", new_key, "CAPACITY", "10", "ITEMS", "y"]),
        text(&["BF.INSERT", new_key, "NOCREATE", "ITEMS", "y"]),
        vec![
            b"BF.LOADCHUNK".to_vec(),
            new_key.as_bytes().to_vec(),
            b"1".to_vec(),
            chunk.to_vec(),
        ],
    ]
}

/// A filter `key` holding `a`, `b` and `c`, and its first SCANDUMP chunk (the header).
fn filter_with_abc(admin: &mut Conn, key: &str) -> Vec<u8> {
    assert_eq!(admin.call(&["BF.RESERVE", key, "0.01", "100"]), Frame::ok());
    assert_eq!(
        admin.call(&["BF.MADD", key, "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1); 3])
    );
    let first = admin.call(&["BF.SCANDUMP", key, "0"]).items();
    assert_eq!(first[0], Frame::Int(1));
    first[1].bytes()
}

fn no_key_permission() -> Frame {
    common::no_key_permission()
}

#[test]
fn a_read_only_user_reads_every_way_and_writes_none() {
    let server = Server::start();
    let mut admin = server.conn();
    let chunk = filter_with_abc(&mut admin, "f");
    let mut reader = acl_user(&server, "reader", &["%R~*", "+@all"]);

    for command in reads("f") {
        let as_admin = admin.call(&command);
        assert!(!as_admin.is_error(), "{command:?}: {as_admin:?}");
        assert_eq!(reader.call(&command), as_admin, "{command:?}");
        assert_eq!(
            acl_dry_run(&mut admin, "reader", &command),
            Frame::ok(),
            "{command:?}"
        );
    }
    assert_eq!(reader.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
    assert_eq!(
        reader.call(&["BF.MEXISTS", "f", "a", "never"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(0)])
    );
    assert_eq!(reader.call(&["BF.CARD", "f"]), Frame::Int(3));
    // A whole SCANDUMP, chunk after chunk, as the reader.
    let mut iterator = "0".to_string();
    loop {
        let reply = reader.call(&["BF.SCANDUMP", "f", &iterator]).items();
        iterator = reply[0].int().to_string();
        if iterator == "0" {
            break;
        }
        assert!(!reply[1].bytes().is_empty());
    }

    for command in writes("f", "g", &chunk) {
        assert_eq!(reader.call(&command), no_key_permission(), "{command:?}");
        let name = String::from_utf8_lossy(&command[1]).into_owned();
        assert_eq!(
            acl_dry_run(&mut admin, "reader", &command),
            common::dry_run_denied_key("reader", &name),
            "{command:?}"
        );
    }
    // Nothing was written.
    assert_eq!(admin.call(&["BF.CARD", "f"]), Frame::Int(3));
    assert_eq!(admin.call(&["BF.EXISTS", "f", "y"]), Frame::Int(0));
    assert_eq!(admin.call(&["EXISTS", "g"]), Frame::Int(0));
}

#[test]
fn a_tenant_cannot_read_or_write_another_tenants_filters() {
    let server = Server::start();
    let mut admin = server.conn();
    let chunk = filter_with_abc(&mut admin, "tenant:b:x");
    let mut alice = acl_user(&server, "alice", &["~tenant:a:*", "+@all"]);

    // Her own filters, every command.
    assert_eq!(
        alice.call(&["BF.RESERVE", "tenant:a:f", "0.01", "100"]),
        Frame::ok()
    );
    assert_eq!(
        alice.call(&["BF.MADD", "tenant:a:f", "a", "b", "c"]),
        Frame::Array(vec![Frame::Int(1); 3])
    );
    for command in reads("tenant:a:f") {
        let reply = alice.call(&command);
        assert!(!reply.is_error(), "{command:?}: {reply:?}");
        assert_eq!(acl_dry_run(&mut admin, "alice", &command), Frame::ok());
    }
    for command in writes("tenant:a:f", "tenant:a:new", &chunk) {
        assert_eq!(acl_dry_run(&mut admin, "alice", &command), Frame::ok());
    }
    assert_eq!(alice.call(&["BF.ADD", "tenant:a:new", "y"]), Frame::Int(1));

    // Tenant b's filter: not a single command gets through, reading or writing.
    let denied = |key: &str| common::dry_run_denied_key("alice", key);
    for command in reads("tenant:b:x") {
        assert_eq!(alice.call(&command), no_key_permission(), "{command:?}");
        assert_eq!(
            acl_dry_run(&mut admin, "alice", &command),
            denied("tenant:b:x")
        );
    }
    for command in writes("tenant:b:x", "tenant:b:new", &chunk) {
        assert_eq!(alice.call(&command), no_key_permission(), "{command:?}");
        let name = String::from_utf8_lossy(&command[1]).into_owned();
        assert_eq!(acl_dry_run(&mut admin, "alice", &command), denied(&name));
    }
    assert_eq!(admin.call(&["BF.CARD", "tenant:b:x"]), Frame::Int(3));
    assert_eq!(admin.call(&["EXISTS", "tenant:b:new"]), Frame::Int(0));

    // A tenant may be given read access to another's filters, and no more.
    let mut auditor = acl_user(
        &server,
        "auditor",
        &["~tenant:a:*", "%R~tenant:b:*", "+@all"],
    );
    assert_eq!(
        auditor.call(&["BF.EXISTS", "tenant:b:x", "a"]),
        Frame::Int(1)
    );
    assert_eq!(
        auditor.call(&["BF.ADD", "tenant:b:x", "y"]),
        no_key_permission()
    );
    assert_eq!(auditor.call(&["BF.ADD", "tenant:a:f", "y"]), Frame::Int(1));
}

// The ACL recipes of docs/cluster.md. On Redis 7.0 module commands belong to no ACL category (not even
// @read or @write), so the recipes name the commands.
const CHECKER: &[&str] = &[
    "%R~*",
    "-@all",
    "+bf.exists",
    "+bf.mexists",
    "+bf.info",
    "+bf.card",
];
const TENANT_A: &[&str] = &[
    "~tenant:a:*",
    "-@all",
    "+bf.reserve",
    "+bf.add",
    "+bf.madd",
    "+bf.insert",
    "+bf.exists",
    "+bf.mexists",
    "+bf.info",
    "+bf.card",
];
const AUDITOR: &[&str] = &[
    "~tenant:a:*",
    "%R~tenant:b:*",
    "-@all",
    "+bf.exists",
    "+bf.mexists",
    "+bf.info",
    "+bf.card",
];
const BACKUP: &[&str] = &["%R~*", "-@all", "+bf.scandump", "+scan"];
const RESTORE: &[&str] = &["~*", "-@all", "+bf.loadchunk"];

fn no_command_permission(user: &str, command: &str) -> Frame {
    common::no_command_permission(user, command)
}

/// docs/cluster.md, where the recipes are.
const DOCS: &str = include_str!("../docs/cluster.md");

#[test]
fn the_acl_recipes_are_the_users_docs_cluster_md_gives() {
    for (name, rules) in [
        ("checker", CHECKER),
        ("tenant-a", TENANT_A),
        ("auditor", AUDITOR),
        ("backup", BACKUP),
        ("restore", RESTORE),
    ] {
        let line = format!("ACL SETUSER {name} on >secret {}", rules.join(" "));
        assert!(
            DOCS.contains(&line),
            "docs/cluster.md lacks the recipe: {line}"
        );
    }
}

/// A server with the filters the recipes act on, `f` and `tenant:b:x` (each holding `a`, `b` and
/// `c`), and its admin connection.
fn recipe_server() -> (Server, Conn) {
    let server = Server::start();
    let mut admin = server.conn();
    filter_with_abc(&mut admin, "f");
    filter_with_abc(&mut admin, "tenant:b:x");
    (server, admin)
}

#[test]
fn the_checker_recipe_checks_anything_and_writes_nothing() {
    let (server, mut admin) = recipe_server();
    let mut checker = acl_user(&server, "checker", CHECKER);
    assert_eq!(checker.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
    assert_eq!(
        checker.call(&["BF.MEXISTS", "f", "a", "never"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(0)])
    );
    assert_eq!(checker.call(&["BF.CARD", "f"]), Frame::Int(3));
    assert_eq!(
        checker.call(&["BF.INFO", "f", "ITEMS"]),
        Frame::Array(vec![Frame::Int(3)])
    );
    assert_eq!(
        checker.call(&["bf.add", "f", "y"]),
        no_command_permission("checker", "BF.ADD")
    );
    assert_eq!(
        acl_dry_run(&mut admin, "checker", &["BF.SCANDUMP", "f", "0"]),
        common::dry_run_denied_command("checker", "bf.scandump")
    );
}

#[test]
fn the_tenant_recipe_does_everything_on_its_keys_and_nothing_on_another_tenants() {
    let (server, mut admin) = recipe_server();
    let mut tenant = acl_user(&server, "tenant-a", TENANT_A);
    assert_eq!(
        tenant.call(&["BF.RESERVE", "tenant:a:f", "0.01", "100"]),
        Frame::ok()
    );
    assert_eq!(tenant.call(&["BF.ADD", "tenant:a:f", "a"]), Frame::Int(1));
    assert_eq!(
        tenant.call(&["BF.MADD", "tenant:a:f", "b", "c"]),
        Frame::Array(vec![Frame::Int(1); 2])
    );
    assert_eq!(
        tenant.call(&["BF.INSERT", "tenant:a:g", "ITEMS", "a"]),
        Frame::Array(vec![Frame::Int(1)])
    );
    assert_eq!(tenant.call(&["BF.CARD", "tenant:a:f"]), Frame::Int(3));
    for command in [
        vec!["BF.RESERVE", "tenant:b:x", "0.01", "100"],
        vec!["BF.ADD", "tenant:b:x", "y"],
        vec!["BF.MADD", "tenant:b:x", "y"],
        vec!["BF.INSERT", "tenant:b:x", "ITEMS", "y"],
        vec!["BF.EXISTS", "tenant:b:x", "a"],
        vec!["BF.MEXISTS", "tenant:b:x", "a"],
        vec!["BF.INFO", "tenant:b:x"],
        vec!["BF.CARD", "tenant:b:x"],
    ] {
        assert_eq!(tenant.call(&command), no_key_permission(), "{command:?}");
    }
    assert_eq!(
        acl_dry_run(&mut admin, "tenant-a", &["BF.ADD", "tenant:b:x", "item"]),
        common::dry_run_denied_key("tenant-a", "tenant:b:x")
    );
    assert!(DOCS.contains(
        "ACL DRYRUN tenant-a BF.ADD tenant:b:x item    # \"This user has no permissions to access the 'tenant:b:x' key\""
    ));
}

#[test]
fn the_auditor_recipe_reads_both_tenants_and_writes_neither() {
    let (server, mut admin) = recipe_server();
    // Tenant a's filter, as the tenant made it.
    filter_with_abc(&mut admin, "tenant:a:f");
    let mut auditor = acl_user(&server, "auditor", AUDITOR);
    assert_eq!(
        auditor.call(&["BF.EXISTS", "tenant:b:x", "a"]),
        Frame::Int(1)
    );
    assert_eq!(auditor.call(&["BF.CARD", "tenant:a:f"]), Frame::Int(3));
    assert_eq!(
        auditor.call(&["BF.ADD", "tenant:b:x", "y"]),
        no_command_permission("auditor", "BF.ADD")
    );
    assert_eq!(
        auditor.call(&["BF.EXISTS", "other", "a"]),
        no_key_permission()
    );
}

#[test]
fn the_backup_and_restore_recipes_copy_a_whole_filter_chunk_by_chunk() {
    let (server, mut admin) = recipe_server();
    let mut backup = acl_user(&server, "backup", BACKUP);
    let mut restore = acl_user(&server, "restore", RESTORE);
    let scanned = backup.call(&["SCAN", "0"]);
    assert!(!scanned.is_error(), "{scanned:?}");
    let mut iterator = "0".to_string();
    loop {
        let reply = backup.call(&["BF.SCANDUMP", "f", &iterator]).items();
        iterator = reply[0].int().to_string();
        if iterator == "0" {
            break;
        }
        let loaded = restore.call(&[
            b"BF.LOADCHUNK".to_vec(),
            b"copy".to_vec(),
            iterator.as_bytes().to_vec(),
            reply[1].bytes(),
        ]);
        assert_eq!(loaded, Frame::ok());
    }
    assert_eq!(
        backup.call(&["BF.ADD", "f", "y"]),
        no_command_permission("backup", "BF.ADD")
    );
    assert_eq!(
        restore.call(&["BF.EXISTS", "copy", "a"]),
        no_command_permission("restore", "BF.EXISTS")
    );
    assert_eq!(
        admin.call(&["BF.MEXISTS", "copy", "a", "b", "c", "never"]),
        Frame::Array(vec![
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(1),
            Frame::Int(0)
        ])
    );
}

/// On Redis 7.0 (the server `make test` runs first) a module can give its commands no ACL
/// category: the module loads all the same and says so in its log. On the servers that can
/// (Redis 7.4+, Valkey 8+: the matrix), every command is in `@read` or `@write`, `@fast` or
/// `@slow` (by its flags), and `@bloom` (tests/newer_servers.rs holds rules by category to them).
#[test]
fn the_commands_are_in_a_bloom_category_where_the_server_allows_it() {
    let server = Server::start();
    let mut admin = server.conn();
    if common::flavor().has_module_acl_categories() {
        for name in BF_COMMANDS {
            let info = admin.call(&["COMMAND", "INFO", name]).items()[0].items();
            let flags: Vec<String> = info[2].items().iter().map(Frame::text).collect();
            let has = |flag: &str| flags.iter().any(|f| f == flag);
            let access = if has("write") { "@write" } else { "@read" };
            let speed = if has("fast") { "@fast" } else { "@slow" };
            assert_eq!(
                acl_categories(&mut admin, name),
                [access, speed, "@bloom"],
                "{name}"
            );
        }
        return;
    }
    for name in BF_COMMANDS {
        assert_eq!(
            acl_categories(&mut admin, name),
            Vec::<String>::new(),
            "{name}"
        );
    }
    let categories: Vec<String> = admin
        .call(&["ACL", "CAT"])
        .items()
        .iter()
        .map(Frame::text)
        .collect();
    assert!(!categories.contains(&"bloom".to_string()), "{categories:?}");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "someone", "+@bloom"]),
        Frame::error(
            "ERR Error in ACL SETUSER modifier '+@bloom': Unknown command or category name in ACL"
        )
    );
    assert!(server
        .log()
        .contains("this server cannot add module ACL categories"));
    // The commands still run for users given them by name or by +@all.
    let mut named = acl_user(&server, "named", &["~*", "+bf.add", "+bf.exists"]);
    assert_eq!(named.call(&["BF.ADD", "f", "a"]), Frame::Int(1));
    assert_eq!(named.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
}
