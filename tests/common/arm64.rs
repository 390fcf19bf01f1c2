//! Debian's arm64 redis-server under qemu-user, which `make test` unpacks under `target/arm64`
//! (scripts/fetch-arm64.sh; nothing is installed): an aarch64 module (the tarball's, the wheel's)
//! loads and answers there as the x86_64 one does here (tests/dist.rs, tests/wheel.rs).

use super::{Conn, Frame, Options, Server};
use std::path::{Path, PathBuf};

/// The version MODULE LIST reports: MAJOR * 10000 + MINOR * 100 + PATCH of the crate's.
pub fn module_version() -> i64 {
    let part = |text: &str| text.parse::<i64>().unwrap();
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// MODULE LIST names the module once, `bf`, at the crate's version.
pub fn assert_listed(conn: &mut Conn) {
    let modules = conn.call(&["MODULE", "LIST"]).items();
    assert_eq!(modules.len(), 1, "{modules:?}");
    let fields = modules[0].items();
    assert_eq!(fields[0], Frame::bulk("name"));
    assert_eq!(fields[1], Frame::bulk("bf"));
    assert_eq!(fields[2], Frame::bulk("ver"));
    assert_eq!(fields[3], Frame::Int(module_version()));
}

/// Debian's arm64 redis-server under qemu-aarch64, as `make test` unpacks them
/// (scripts/fetch-arm64.sh writes this wrapper).
pub fn arm64_redis_server() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/arm64/redis-server");
    assert!(
        path.exists(),
        "{} is missing: `make test` unpacks Debian's arm64 redis-server and qemu-user-static \
         there (scripts/fetch-arm64.sh)",
        path.display()
    );
    path
}

/// A handful of commands, and the replies: the same on both architectures, down to the bytes of
/// BF.SCANDUMP, since the filters' sizing and hashing do not depend on the machine.
pub fn exercise(conn: &mut Conn) -> Vec<Frame> {
    let mut replies = Vec::new();
    let mut call = |args: &[&str]| {
        let reply = conn.call(args);
        replies.push(reply.clone());
        reply
    };
    assert_eq!(call(&["BF.RESERVE", "f", "0.01", "1000"]), Frame::ok());
    assert_eq!(call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    assert_eq!(call(&["BF.ADD", "f", "x"]), Frame::Int(0));
    assert_eq!(call(&["BF.EXISTS", "f", "x"]), Frame::Int(1));
    assert_eq!(call(&["BF.EXISTS", "f", "y"]), Frame::Int(0));
    assert_eq!(
        call(&["BF.MADD", "f", "a", "b", "a"]),
        Frame::Array(vec![Frame::Int(1), Frame::Int(1), Frame::Int(0)])
    );
    let info = call(&["BF.INFO", "f"]).items();
    assert_eq!(info.len(), 10, "{info:?}");
    assert_eq!(info[0], Frame::simple("Capacity"));
    assert_eq!(info[1], Frame::Int(1000));
    assert_eq!(info[7], Frame::Int(3), "items inserted: {info:?}");
    // The load argument (error-rate 0.001) reached the module: a filter BF.ADD makes uses it.
    assert_eq!(
        call(&["CONFIG", "GET", "bf.error-rate"]),
        Frame::Array(vec![Frame::bulk("bf.error-rate"), Frame::bulk("0.001")])
    );
    assert_eq!(call(&["BF.ADD", "g", "x"]), Frame::Int(1));
    assert_eq!(call(&["BF.EXISTS", "g", "x"]), Frame::Int(1));
    let mut iterator = "0".to_string();
    for _ in 0..10 {
        let chunk = call(&["BF.SCANDUMP", "f", &iterator]).items();
        iterator = chunk[0].int().to_string();
        if iterator == "0" {
            break;
        }
    }
    assert_eq!(iterator, "0", "BF.SCANDUMP did not end");
    replies
}

/// Loads `module` (an aarch64 build) in the arm64 redis-server with a load argument, checks that
/// the server really is arm64 and lists the module, and runs [`exercise`]: its replies.
pub fn loads_and_answers(module: &Path) -> Vec<Frame> {
    let arm = Server::with(
        Options {
            server: Some(arm64_redis_server()),
            module: Some(module.to_path_buf()),
            ..Options::default()
        }
        .module_args(&["error-rate", "0.001"]),
    );
    let mut conn = arm.conn();
    let info = conn.call(&["INFO", "server"]).text();
    assert!(
        info.lines()
            .any(|line| line.starts_with("os:") && line.trim_end().ends_with("aarch64")),
        "{info}"
    );
    assert_listed(&mut conn);
    exercise(&mut conn)
}
