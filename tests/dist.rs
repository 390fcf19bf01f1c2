//! `make dist`: the tarball for people who do not build from source holds the stripped module,
//! the example config, the README and the license, and the module in it loads the three ways the
//! README explains: `redis-server --loadmodule`, `MODULE LOAD`, and a `loadmodule` line in a
//! config file.

mod common;

use common::{Frame, Options, Server};
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(command: &mut Command) -> String {
    let output = command.output().expect("run a command");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Packages the release build into a fresh directory and unpacks it; the unpacked directory.
fn unpacked() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = root
        .join("target/test-dist")
        .join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    // Checks that the release build exists.
    common::module_path();
    let tarball = run(Command::new(root.join("scripts/dist.sh")).arg(work.join("out")));
    let tarball = PathBuf::from(tarball.trim());
    let name = tarball
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".tar.gz")
        .to_string();
    assert_eq!(
        name,
        format!(
            "redis-bf-{}-linux-{}",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::ARCH
        )
    );
    // The checksum file matches.
    run(Command::new("sha256sum")
        .arg("--check")
        .arg(format!("{name}.tar.gz.sha256"))
        .current_dir(tarball.parent().unwrap()));
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&work));
    work.join(name)
}

#[test]
fn the_tarball_holds_a_stripped_module_that_loads_three_ways() {
    let dir = unpacked();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "LICENSE",
            "README.md",
            "libredis_bf.so",
            "redis.conf.example"
        ]
    );
    let module = dir.join("libredis_bf.so");
    let sections = run(Command::new("readelf").arg("-S").arg(&module));
    assert!(!sections.contains(".symtab"), "not stripped:\n{sections}");
    let symbols = run(Command::new("readelf").arg("--dyn-syms").arg(&module));
    assert!(symbols.contains("RedisModule_OnLoad"));
    assert_eq!(
        std::fs::read(dir.join("LICENSE")).unwrap(),
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("LICENSE")).unwrap()
    );

    // The README names the oldest C library the module needs: the newest GLIBC_ version it uses.
    let needed = run(Command::new("objdump").arg("-T").arg(&module));
    let newest = needed
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("(GLIBC_").or(word.strip_prefix("GLIBC_")))
        .map(|version| version.trim_end_matches(')').to_string())
        .max_by_key(|version| {
            version
                .split('.')
                .map(|part| part.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .unwrap();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("glibc {newest} or newer")),
        "the README should say the module needs glibc {newest} or newer"
    );

    // 1. redis-server --loadmodule, with module arguments.
    let server = Server::with(
        Options {
            module: Some(module.clone()),
            ..Options::default()
        }
        .module_args(&["error-rate", "0.001"]),
    );
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.error-rate"]),
        Frame::Array(vec![Frame::bulk("bf.error-rate"), Frame::bulk("0.001")])
    );
    drop(server);

    // 2. MODULE LOAD at run time (Redis 7 refuses it unless enable-module-command allows it).
    let server = Server::with(
        Options {
            without_module: true,
            ..Options::default()
        }
        .config("enable-module-command", "local"),
    );
    let mut conn = server.conn();
    let path = module.to_string_lossy().into_owned();
    assert_eq!(
        conn.call(&["MODULE", "LOAD", &path, "initial-size", "500"]),
        Frame::ok()
    );
    assert_eq!(conn.call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["BF.INFO", "f", "CAPACITY"]),
        Frame::Array(vec![Frame::Int(500)])
    );
    let modules = conn.call(&["MODULE", "LIST"]).items();
    assert_eq!(modules.len(), 1);
    let fields = modules[0].items();
    assert_eq!(fields[1], Frame::bulk("bf"));
    drop(server);

    // 3. A config file: redis.conf.example from the tarball, plus a loadmodule line and a
    // directive after it.
    let config = dir.join("with-module.conf");
    let example = std::fs::read_to_string(dir.join("redis.conf.example")).unwrap();
    std::fs::write(
        &config,
        format!("{example}\nloadmodule {path}\nbf.expansion-factor 4\n"),
    )
    .unwrap();
    let server = Server::with(Options {
        without_module: true,
        config_file: Some(config),
        ..Options::default()
    });
    let mut conn = server.conn();
    assert_eq!(conn.call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    assert_eq!(
        conn.call(&["BF.INFO", "f", "EXPANSION"]),
        Frame::Array(vec![Frame::Int(4)])
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
