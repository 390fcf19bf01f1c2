//! What tools and people see of the module besides its replies: command names as RedisBloom
//! registers them (lower case) in every surface monitoring reads, and a start that logs nothing at
//! warning level.

mod common;

use common::{acl_user, Frame, Server, BF_COMMANDS, CF_COMMANDS};

#[test]
fn command_names_are_lower_case_wherever_tools_read_them() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
        Frame::ok()
    );
    // Sent in upper case, as clients do.
    assert_eq!(conn.call(&["BF.ADD", "k", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "k", "x"]), Frame::Int(1));
    // The slow log keeps the arguments as the client sent them, for our commands as for any.
    let slow = conn.call(&["SLOWLOG", "GET", "1"]).items();
    assert!(slow.iter().any(|entry| {
        let argv = entry.items()[3].items();
        argv.len() == 3 && argv[0] == Frame::bulk("BF.EXISTS") && argv[1] == Frame::bulk("k")
    }));
    let stats = conn.call(&["INFO", "commandstats"]).text();
    assert!(stats.contains("\r\ncmdstat_bf.add:calls=1,"), "{stats}");
    assert!(stats.contains("\r\ncmdstat_bf.exists:calls=1,"), "{stats}");
    assert!(!stats.contains("BF."), "{stats}");
    let latency = conn.call(&["INFO", "latencystats"]).text();
    assert!(
        latency.contains("\r\nlatency_percentiles_usec_bf.add:p50="),
        "{latency}"
    );
    let histogram = conn.call(&["LATENCY", "HISTOGRAM", "bf.add"]).items();
    assert_eq!(histogram[0], Frame::bulk("bf.add"));
    let mut listed: Vec<String> = conn
        .call(&["COMMAND", "LIST", "FILTERBY", "MODULE", "bf"])
        .items()
        .iter()
        .map(Frame::text)
        .collect();
    listed.sort();
    let mut expected: Vec<String> = BF_COMMANDS
        .iter()
        .chain(CF_COMMANDS.iter())
        .map(|c| c.to_lowercase())
        .collect();
    expected.sort();
    assert_eq!(listed, expected);
    for command in BF_COMMANDS.iter().chain(CF_COMMANDS.iter()) {
        let info = conn.call(&["COMMAND", "INFO", command]).items()[0].items();
        assert_eq!(info[0].text(), command.to_lowercase());
    }
    // Redis's own errors name the registered command.
    assert_eq!(
        conn.call(&["BF.ADD", "k"]),
        Frame::error("ERR wrong number of arguments for 'bf.add' command")
    );
    let mut reader = acl_user(&server, "reader", &["~*", "+bf.exists"]);
    assert_eq!(
        reader.call(&["BF.ADD", "k", "y"]),
        common::no_command_permission("reader", "bf.add")
    );
    let log_entry = conn.call(&["ACL", "LOG", "1"]).items()[0].items();
    let object = log_entry
        .chunks(2)
        .find(|pair| pair[0] == Frame::bulk("object"))
        .map(|pair| pair[1].text());
    assert_eq!(object.as_deref(), Some("bf.add"));
}

#[test]
fn a_normal_start_logs_nothing_at_warning_level() {
    let server = Server::start();
    let log = server.log();
    let ours: Vec<&str> = log.lines().filter(|line| line.contains("<bf>")).collect();
    // "#" marks a warning in the server's log, "*" a notice.
    assert!(ours.iter().all(|line| !line.contains(" # ")), "{ours:#?}");
    assert!(!log.to_lowercase().contains("defrag"), "{log}");
    // What the module lacks on this server is said once, as a notice.
    let lacks: Vec<&&str> = ours
        .iter()
        .filter(|line| line.contains("cannot add module ACL categories"))
        .collect();
    assert_eq!(lacks.len(), 1, "{ours:#?}");
    assert!(lacks[0].contains(" * <bf> "), "{lacks:?}");
}

#[test]
fn module_loadex_sets_configs_and_module_unload_is_refused() {
    let server = Server::with(
        common::Options {
            without_module: true,
            ..common::Options::default()
        }
        .config("enable-module-command", "yes"),
    );
    let mut conn = server.conn();
    let module = common::module_path();
    let module = module.to_str().unwrap();
    assert_eq!(
        conn.call(&[
            "MODULE",
            "LOADEX",
            module,
            "CONFIG",
            "bf.error-rate",
            "0.001",
            "CONFIG",
            "bf.initial-size",
            "500"
        ]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.error-rate"]).items()[1],
        Frame::bulk("0.001")
    );
    assert_eq!(conn.call(&["BF.ADD", "k", "x"]), Frame::Int(1));
    let debug = conn.call(&["BF.DEBUG", "k"]).items()[1].text();
    assert!(
        debug.contains(" capacity:500 ") && debug.ends_with(" ratio:0.0005"),
        "{debug}"
    );
    // A module with a data type cannot be unloaded (the server refuses, filters or not).
    assert_eq!(conn.call(&["DEL", "k"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["MODULE", "UNLOAD", "bf"]),
        Frame::error(
            "ERR Error unloading module: the module exports one or more module-side data types, can't unload"
        )
    );
}
