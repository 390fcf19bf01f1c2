//! The `bf.*` configs against a real server: their defaults, CONFIG GET and SET with the exact
//! refusal of each bad value, the defaults new filters take from them, and the same settings as
//! load arguments (in both spellings, with or without the `bf.` prefix) and as config directives;
//! a bad load argument stops the module loading, with one log line that says why.

mod common;

use common::{debug_lines as debug, flavor, Conn, Frame, Options, Server};

#[test]
fn configs_read_and_write_and_refuse_bad_values() {
    let server = Server::start();
    let mut conn = server.conn();
    let get = |conn: &mut Conn, name: &str| conn.call(&["CONFIG", "GET", name]).items()[1].text();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.01");
    assert_eq!(get(&mut conn, "bf.initial-size"), "100");
    assert_eq!(get(&mut conn, "bf.expansion-factor"), "2");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1073741824");
    let refused = |name: &str, why: &str| {
        Frame::error(&format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    let cases = [
        (
            "bf.error-rate",
            "1",
            "bad value '1' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
        ),
        (
            "bf.error-rate",
            "nan",
            "bad value 'nan' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1",
        ),
        (
            "bf.initial-size",
            "0",
            "argument must be between 1 and 9223372036854775807 inclusive",
        ),
        (
            "bf.expansion-factor",
            "32769",
            "argument must be between 0 and 32768 inclusive",
        ),
        (
            "bf.max-filter-bytes",
            "1000",
            "argument must be between 1024 and 9223372036854775807 inclusive",
        ),
    ];
    for (name, value, why) in cases {
        assert_eq!(
            conn.call(&["CONFIG", "SET", name, value]),
            refused(name, why),
            "{name} {value}"
        );
    }
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.01");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1073741824");
    for (name, value) in [
        ("bf.error-rate", "0.001"),
        ("bf.initial-size", "1000"),
        ("bf.expansion-factor", "4"),
        ("bf.max-filter-bytes", "64mb"),
    ] {
        assert_eq!(conn.call(&["CONFIG", "SET", name, value]), Frame::ok());
    }
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.001");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "67108864");
    // New filters take the new defaults: BF.ADD, BF.INSERT without options, BF.RESERVE's expansion.
    conn.call(&["BF.ADD", "auto", "x"]);
    assert_eq!(
        debug(&mut conn, "auto")[1],
        "bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:1 ratio:0.0005"
    );
    assert_eq!(
        conn.call(&["BF.INFO", "auto", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
    conn.call(&["BF.INSERT", "inserted", "ITEMS", "x"]);
    assert_eq!(debug(&mut conn, "inserted"), debug(&mut conn, "auto"));
    conn.call(&["BF.RESERVE", "reserved", "0.01", "10"]);
    assert_eq!(
        conn.call(&["BF.INFO", "reserved", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
}

#[test]
fn config_set_refuses_partial_numbers() {
    let server = Server::start();
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", "0.01abc"]),
        Frame::error("ERR CONFIG SET failed (possibly related to argument 'bf.error-rate') - bad value '0.01abc' for bf.error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1")
    );
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", "1e-20"]),
        Frame::ok()
    );
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.error-rate"]).items()[1],
        Frame::bulk("1e-20")
    );
}

#[test]
fn load_arguments_set_the_configs_in_both_dialects() {
    let options = Options::default().module_args(&[
        "error-rate",
        "0.001",
        "initial-size",
        "1000",
        "expansion-factor",
        "4",
        "max-filter-bytes",
        "1mb",
    ]);
    let server = Server::with(options);
    let mut conn = server.conn();
    let get = |conn: &mut Conn, name: &str| conn.call(&["CONFIG", "GET", name]).items()[1].text();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.001");
    assert_eq!(get(&mut conn, "bf.initial-size"), "1000");
    assert_eq!(get(&mut conn, "bf.expansion-factor"), "4");
    assert_eq!(get(&mut conn, "bf.max-filter-bytes"), "1048576");
    drop(server);
    let server =
        Server::with(Options::default().module_args(&["ERROR_RATE", "0.05", "INITIAL_SIZE", "7"]));
    let mut conn = server.conn();
    assert_eq!(get(&mut conn, "bf.error-rate"), "0.05");
    assert_eq!(get(&mut conn, "bf.initial-size"), "7");
    conn.call(&["BF.ADD", "k", "x"]);
    assert_eq!(
        debug(&mut conn, "k")[1],
        "bytes:8 bits:64 hashes:6 hashwidth:64 capacity:7 size:1 ratio:0.025"
    );
}

#[test]
fn load_arguments_take_the_bf_prefix_and_refuse_a_tiny_ceiling() {
    let server = Server::with(Options::default().module_args(&[
        "bf.initial-size",
        "42",
        "BF.MAX-FILTER-BYTES",
        "2kb",
    ]));
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.initial-size"]).items()[1],
        Frame::bulk("42")
    );
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.max-filter-bytes"]).items()[1],
        Frame::bulk("2048")
    );
    drop(server);
    let log = match Server::try_with(Options::default().module_args(&["max-filter-bytes", "1000"]))
    {
        Ok(_) => panic!("loaded with a 1000-byte ceiling"),
        Err(log) => log,
    };
    assert!(log.contains("<bf> refusing to load: bad value '1000' for max-filter-bytes: must be a size of at least 1024 bytes (units kb, mb, gb allowed)"), "{log}");
}

#[test]
fn config_directives_after_loadmodule_apply_too() {
    let server = Server::with(Options::default().config("bf.initial-size", "500"));
    let mut conn = server.conn();
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.initial-size"]).items()[1].text(),
        "500"
    );
}

#[test]
fn a_bad_load_argument_stops_the_module_loading_with_a_reason() {
    // Logged once, at warning level, naming the argument as it was typed; the server puts the
    // module's name in front.
    let cases: [(&[&str], &str); 5] = [
        (&["ERROR_RATE", "2"], "# <bf> refusing to load: bad value '2' for ERROR_RATE: must be a number from 8.900295434028806e-308 up to, not including, 1"),
        (&["error-rate", "2"], "# <bf> refusing to load: bad value '2' for error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1"),
        (&["INITIAL_SIZE", "0"], "# <bf> refusing to load: bad value '0' for INITIAL_SIZE: must be a whole number from 1 to 9223372036854775807"),
        (&["colour", "blue"], "# <bf> refusing to load: unknown module argument 'colour'"),
        (&["expansion-factor"], "# <bf> refusing to load: module argument 'expansion-factor' needs a value"),
    ];
    for (args, line) in cases {
        let log = match Server::try_with(Options::default().module_args(args)) {
            Ok(_) => panic!("loaded with {args:?}"),
            Err(log) => log,
        };
        assert!(log.contains(line), "{args:?}: {log}");
        assert_eq!(log.matches("refusing to load").count(), 1, "{log}");
        assert!(!log.contains("bf: "), "{log}");
    }
}

#[test]
fn a_percent_sign_in_a_load_argument_is_logged_as_text() {
    let log = match Server::try_with(Options::default().module_args(&["error-rate", "%s%s%s%n%n"]))
    {
        Ok(_) => panic!("loaded"),
        Err(log) => log,
    };
    assert!(
        log.contains("bad value '%s%s%s%n%n' for error-rate"),
        "{log}"
    );
}

/// What `BF.ADD` on a missing key makes under `bf-error-rate 0.001`, `bf-initial-size 500`.
const REDIS8_DEFAULT_FILTER: &str =
    "bytes:992 bits:7936 hashes:11 hashwidth:64 capacity:500 size:1 ratio:0.0005";

/// RedisBloom's Redis 8 names (`bf-error-rate`, `bf-initial-size`, `bf-expansion-factor`), as a
/// Redis 8 user's redis.conf or command line has them: configs where the server takes unprefixed
/// module configs (Redis 8), the same settings as `bf.*`; load arguments on every server.
#[test]
fn redisbloom_redis8_config_names_work_wherever_the_server_takes_them() {
    let names = ["bf-error-rate", "0.001", "bf-initial-size", "500"];
    let by_load_arguments = Server::with(Options::default().module_args(&names));
    let mut conn = by_load_arguments.conn();
    assert_eq!(conn.call(&["BF.ADD", "k", "x"]), Frame::Int(1));
    assert_eq!(debug(&mut conn, "k")[1], REDIS8_DEFAULT_FILTER);
    let get = |conn: &mut Conn, name: &str| conn.call(&["CONFIG", "GET", name]);
    let pair = |name: &str, value: &str| Frame::Array(vec![Frame::bulk(name), Frame::bulk(value)]);
    assert_eq!(
        get(&mut conn, "bf.error-rate"),
        pair("bf.error-rate", "0.001")
    );
    if !flavor().has_unprefixed_module_configs() {
        // Redis 7 and Valkey: the names are load arguments only.
        assert_eq!(get(&mut conn, "bf-error-rate"), Frame::Array(vec![]));
        return;
    }
    // Redis 8: as the server's own settings, on the command line (as in redis.conf).
    let options = Options::default()
        .config("bf-error-rate", "0.001")
        .config("bf-initial-size", "500");
    let server = Server::with(options);
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "k", "x"]), Frame::Int(1));
    assert_eq!(debug(&mut conn, "k")[1], REDIS8_DEFAULT_FILTER);
    assert_eq!(
        get(&mut conn, "bf-error-rate"),
        pair("bf-error-rate", "0.001")
    );
    assert_eq!(
        get(&mut conn, "bf-initial-size"),
        pair("bf-initial-size", "500")
    );
    assert_eq!(
        get(&mut conn, "bf.initial-size"),
        pair("bf.initial-size", "500")
    );
    // One setting under two names: CONFIG SET either, both read it.
    let set = |conn: &mut Conn, name: &str, value: &str| conn.call(&["CONFIG", "SET", name, value]);
    assert_eq!(set(&mut conn, "bf.error-rate", "0.02"), Frame::ok());
    assert_eq!(
        get(&mut conn, "bf-error-rate"),
        pair("bf-error-rate", "0.02")
    );
    assert_eq!(
        set(&mut conn, "bf-error-rate", "1"),
        Frame::error(
            "ERR CONFIG SET failed (possibly related to argument 'bf-error-rate') - bad value '1' \
             for bf-error-rate: must be a number from 8.900295434028806e-308 up to, not including, 1"
        )
    );
    // bf-expansion-factor 0, as RedisBloom 8 reads it: new filters are NONSCALING.
    assert_eq!(set(&mut conn, "bf-expansion-factor", "0"), Frame::ok());
    assert_eq!(
        get(&mut conn, "bf.expansion-factor"),
        pair("bf.expansion-factor", "0")
    );
    assert_eq!(conn.call(&["BF.ADD", "fixed", "x"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["BF.RESERVE", "reserved", "0.01", "10"]),
        Frame::ok()
    );
    for key in ["fixed", "reserved"] {
        let expansion = conn.call(&["BF.INFO", key, "EXPANSION"]);
        assert_eq!(expansion, Frame::Array(vec![Frame::NullBulk]), "{key}");
    }
}
