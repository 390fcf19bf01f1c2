//! When a name this module needs is already taken (RedisBloom, which Redis 8's distributions load
//! from their modules directory, holds the module name `bf`, the `bf.*` commands and the type
//! `MBbloom--`), the module refuses to load with one log line that says which name, the likely
//! cause and what to do. tests/fake/other_bloom.c stands in for the other module.

mod common;

use common::{module_path, other_bloom_module, Frame, Options, Server};

/// The end of the line the module logs when `what` is taken.
fn refusal(what: &str) -> String {
    format!(
        "refusing to load: {what} is taken, most likely by another Bloom filter module such as \
         RedisBloom (Redis 8's distributions load it from their modules directory), or by this \
         module loaded twice; MODULE LIST names the modules loaded: remove the other's loadmodule \
         line and restart the server with this one's (a module with a data type cannot be \
         unloaded) (docs/migrating.md, \"Replacing RedisBloom on Redis 8\")"
    )
}

/// Starts a server whose configuration file loads the other module (taking `what`) before the
/// module under test; the server's log, as it does not start.
fn start_after_other(what: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-conflicts");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join(format!("{what}-{}.conf", std::process::id()));
    let line = format!("loadmodule {} {what}\n", other_bloom_module().display());
    std::fs::write(&config, line).unwrap();
    let started = Server::try_with(Options {
        config_file: Some(config),
        ..Options::default()
    });
    let Err(log) = started else {
        panic!("the server started with both modules holding {what}");
    };
    log
}

/// The log lines that mention the refusal.
fn refusing_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains("refusing to load"))
        .collect()
}

#[test]
fn a_taken_module_name_is_named_in_one_line_and_the_server_does_not_start() {
    let log = start_after_other("name");
    let lines = refusing_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    // The module has no name when Init fails: the server writes `<module>`, the line says `bf:`.
    let expected = format!("<module> bf: {}", refusal("the module name bf"));
    assert!(lines[0].ends_with(&expected), "{}", lines[0]);
}

#[test]
fn a_taken_type_name_is_named_in_one_line() {
    let log = start_after_other("type");
    let lines = refusing_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    let expected = format!("<bf> {}", refusal("the data type name MBbloom--"));
    assert!(lines[0].ends_with(&expected), "{}", lines[0]);
}

#[test]
fn a_taken_command_name_is_named_in_one_line() {
    let log = start_after_other("command");
    let lines = refusing_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    let expected = format!("<bf> {}", refusal("the command name bf.add"));
    assert!(lines[0].ends_with(&expected), "{}", lines[0]);
}

#[test]
fn loading_the_module_twice_is_refused_with_the_line_and_the_first_keeps_working() {
    let server = Server::with(Options::default().config("enable-module-command", "yes"));
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "f", "a"]), Frame::Int(1));
    let path = module_path();
    let path = path.to_string_lossy();
    let reply = conn.call(&["MODULE", "LOAD", &path]);
    assert_eq!(
        reply,
        Frame::error("ERR Error loading the extension. Please check the server logs.")
    );
    let log = server.log();
    let lines = refusing_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    let expected = format!("<module> bf: {}", refusal("the module name bf"));
    assert!(lines[0].ends_with(&expected), "{}", lines[0]);
    // The loaded one is untouched.
    assert_eq!(conn.call(&["BF.EXISTS", "f", "a"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.ADD", "f", "b"]), Frame::Int(1));
    // One module named bf (Redis 8 lists its built-in vectorset too).
    let modules = conn.call(&["MODULE", "LIST"]).items();
    let named_bf = modules
        .iter()
        .filter(|module| module.items()[1] == Frame::bulk("bf"))
        .count();
    assert_eq!(named_bf, 1, "{modules:?}");
}
