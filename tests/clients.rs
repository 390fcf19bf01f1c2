//! Real client libraries against the module: what applications actually run.

mod common;

use common::Server;
use std::path::Path;
use std::process::Command;

/// The Python of the virtual environment `make test` prepares, with the pinned redis-py.
fn python() -> std::path::PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `make test` creates it (python3 -m venv target/venv, redis-py pinned)",
        python.display()
    );
    python
}

#[test]
fn redis_py_drives_the_dialect_in_resp2_and_resp3() {
    let python = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/redis_py_bf.py");
    let server = Server::start();
    for protocol in ["2", "3"] {
        let output = Command::new(&python)
            .arg(&script)
            .arg(server.port.to_string())
            .arg(protocol)
            .output()
            .expect("run the redis-py script");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "RESP{protocol}:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains(&format!("RESP{protocol}: ok")), "{stdout}");
    }
}
