//! `make dist`: a tarball per architecture, x86_64 and aarch64, for people who do not build from
//! source. `scripts/dist.sh` builds both modules with cargo-zigbuild against glibc 2.17's symbols;
//! each tarball holds the stripped module, the README for the person installing it
//! (`packaging/README.md`, filled in), the license and the example config. The x86_64 module loads
//! the three ways that README explains, in Debian's redis-server; the aarch64 module loads and
//! answers in Debian's arm64 redis-server run under qemu-user (`make test` unpacks both under
//! `target/arm64`, with `scripts/fetch-arm64.sh`; nothing is installed).

mod common;

use common::run;

use common::{arm64, Frame, Options, Server};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The tarballs' architectures, in the order dist.sh writes them.
const ARCHES: [&str; 2] = ["x86_64", "aarch64"];

/// The newest glibc the modules may need: manylinux2014's floor.
const GLIBC_FLOOR: &str = "2.17";

/// Libraries a module may link to: the C library's own.
const ALLOWED_NEEDED: [&str; 9] = [
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "ld-linux.so.2",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A dotted version as numbers, for comparing.
fn numbers(version: &str) -> Vec<u32> {
    version
        .split('.')
        .map(|part| part.parse().unwrap())
        .collect()
}

/// The directory the tarball for `arch` unpacks to. Both tarballs are built and packaged once,
/// by scripts/dist.sh into a fresh directory, for all the tests of this file.
fn unpacked(arch: &str) -> PathBuf {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let dirs = DIRS.get_or_init(package);
    let index = ARCHES.iter().position(|a| *a == arch).unwrap();
    dirs[index].clone()
}

fn package() -> Vec<PathBuf> {
    let work = common::process_dir(&root().join("target/test-dist"));
    // Builds both modules (cargo-zigbuild, in target/zig: quick when `make dist` or an earlier run
    // built them) and packages them.
    let printed = run(Command::new(root().join("scripts/dist.sh")).arg(work.join("out")));
    let tarballs: Vec<PathBuf> = printed.lines().map(PathBuf::from).collect();
    assert_eq!(tarballs.len(), ARCHES.len(), "dist.sh printed:\n{printed}");
    tarballs
        .iter()
        .zip(ARCHES)
        .map(|(tarball, arch)| {
            let name = tarball
                .file_name()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".tar.gz")
                .to_string();
            assert_eq!(
                name,
                format!("redis-bf-{}-linux-{arch}", env!("CARGO_PKG_VERSION"))
            );
            // The checksum file matches.
            run(Command::new("sha256sum")
                .arg("--check")
                .arg(format!("{name}.tar.gz.sha256"))
                .current_dir(tarball.parent().unwrap()));
            run(Command::new("tar")
                .arg("-xzf")
                .arg(tarball)
                .arg("-C")
                .arg(&work));
            work.join(name)
        })
        .collect()
}

/// The newest GLIBC_ symbol version the module needs (objdump -T).
fn newest_glibc(module: &Path) -> String {
    let symbols = run(Command::new("objdump").arg("-T").arg(module));
    symbols
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("(GLIBC_").or(word.strip_prefix("GLIBC_")))
        .map(|version| version.trim_end_matches(')').to_string())
        .max_by_key(|version| numbers(version))
        .expect("the module uses glibc")
}

#[test]
fn each_tarball_holds_the_module_its_readme_the_license_and_the_example_config() {
    for arch in ARCHES {
        let dir = unpacked(arch);
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
            ],
            "{arch}"
        );
        for file in ["LICENSE", "redis.conf.example"] {
            assert_eq!(
                std::fs::read(dir.join(file)).unwrap(),
                std::fs::read(root().join(file)).unwrap(),
                "{arch}: {file}"
            );
        }
    }
}

#[test]
fn each_tarballs_module_is_a_stripped_executable_for_its_architecture() {
    for arch in ARCHES {
        let dir = unpacked(arch);
        let module = dir.join("libredis_bf.so");
        // Redis 7 refuses a module file without execute permission.
        let mode = std::fs::metadata(&module).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{arch}: mode {mode:o}");
        let header = run(Command::new("readelf").arg("-h").arg(&module));
        let machine = match arch {
            "x86_64" => "Advanced Micro Devices X86-64",
            _ => "AArch64",
        };
        assert!(
            header
                .lines()
                .any(|line| line.trim() == format!("Machine:                           {machine}")),
            "{arch}: {header}"
        );
        let sections = run(Command::new("readelf").arg("-S").arg(&module));
        assert!(
            !sections.contains(".symtab") && !sections.contains(".debug_"),
            "{arch}: not stripped:\n{sections}"
        );
        let symbols = run(Command::new("readelf").arg("--dyn-syms").arg(&module));
        assert!(symbols.contains("RedisModule_OnLoad"), "{arch}");
        let dynamic = run(Command::new("readelf").arg("-d").arg(&module));
        for line in dynamic.lines().filter(|line| line.contains("(NEEDED)")) {
            let library = line.split('[').nth(1).unwrap().trim_end_matches(']');
            assert!(
                ALLOWED_NEEDED.contains(&library),
                "{arch}: the module needs {library}, beyond the C library"
            );
        }
    }
}

#[test]
fn each_tarballs_module_needs_glibc_2_17_at_newest() {
    for arch in ARCHES {
        let module = unpacked(arch).join("libredis_bf.so");
        let newest = newest_glibc(&module);
        eprintln!("{arch}: the module needs GLIBC_{newest} at newest");
        assert!(
            numbers(&newest) <= numbers(GLIBC_FLOOR),
            "{arch}: the module needs glibc {newest}, newer than {GLIBC_FLOOR}"
        );
    }
}

#[test]
fn each_tarballs_readme_is_filled_in_for_the_person_installing_it() {
    for arch in ARCHES {
        let dir = unpacked(arch);
        // The README is the one for the person installing it, filled in for this tarball,
        // without the template's note for readers of the repository.
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.starts_with("# redis-bf "), "{arch}: {readme:.200}");
        assert!(!readme.contains("template"), "{arch}");
        for wanted in [
            format!("# redis-bf {} for Linux {arch}", env!("CARGO_PKG_VERSION")),
            format!("glibc {GLIBC_FLOOR} or newer"),
            format!("with version {}", arm64::module_version()),
            format!(
                "sha256sum -c redis-bf-{}-linux-{arch}.tar.gz.sha256",
                env!("CARGO_PKG_VERSION")
            ),
            "--loadmodule /usr/local/lib/redis/libredis_bf.so".to_string(),
            "MODULE LOAD".to_string(),
            "enable-module-command".to_string(),
            "loadmodule /usr/local/lib/redis/libredis_bf.so".to_string(),
            "CONFIG SET bf.error-rate".to_string(),
            "## Upgrade".to_string(),
            "## Uninstall".to_string(),
        ] {
            assert!(
                readme.contains(&wanted),
                "{arch}: the README lacks {wanted:?}"
            );
        }
        assert!(!readme.contains('@'), "{arch}: a placeholder is left");
        for developer in ["make test", "cargo ", "make build"] {
            assert!(!readme.contains(developer), "{arch}: {developer:?}");
        }
    }
}

/// MODULE LIST names the module `bf`, at the crate's version.
#[test]
fn the_x86_64_module_loads_three_ways() {
    let dir = unpacked("x86_64");
    let module = dir.join("libredis_bf.so");

    // 1. redis-server --loadmodule, with module arguments.
    let server = Server::with(
        Options {
            module: Some(module.clone()),
            ..Options::default()
        }
        .module_args(&["error-rate", "0.001"]),
    );
    let mut conn = server.conn();
    arm64::assert_listed(&mut conn);
    assert_eq!(conn.call(&["BF.ADD", "f", "x"]), Frame::Int(1));
    assert_eq!(conn.call(&["BF.EXISTS", "f", "x"]), Frame::Int(1));
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
    arm64::assert_listed(&mut conn);
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
}

#[test]
fn the_aarch64_module_loads_and_answers_in_an_arm64_redis_under_qemu() {
    let on_arm = arm64::loads_and_answers(&unpacked("aarch64").join("libredis_bf.so"));
    // The x86_64 module answers the same, byte for byte.
    let x86 = Server::with(
        Options {
            module: Some(unpacked("x86_64").join("libredis_bf.so")),
            ..Options::default()
        }
        .module_args(&["error-rate", "0.001"]),
    );
    let on_x86 = arm64::exercise(&mut x86.conn());
    assert_eq!(on_arm, on_x86);
}
