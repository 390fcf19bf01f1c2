//! The test harness: a real `redis-server` with the built module, on a free loopback port, in a
//! directory of its own under `target/test-servers/`, killed when dropped (also when the test
//! panics). Every integration test file includes this module.

#![allow(dead_code)]

pub mod arm64;
pub mod chunks;
pub mod docs;
pub mod payload;
pub mod resp;
pub mod rng;

pub use resp::{Conn, Frame};

use std::net::TcpListener;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The module under test: the release build (`make test` builds it first), or
/// `$REDIS_BF_MODULE` (another build, to show that a test fails without a fix).
pub fn module_path() -> PathBuf {
    let path = match std::env::var_os("REDIS_BF_MODULE") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libredis_bf.so"),
    };
    assert!(
        path.exists(),
        "{} is missing: build it with `make build` (make test does)",
        path.display()
    );
    path
}

fn redis_server() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

/// Which server the tests run on (`$REDIS_SERVER`, or Debian's redis-server), read once from its
/// `--version`: the matrix in `make test` runs the same suites on Redis 7.0 and 8.2 and Valkey 8.0
/// and 9.1, and a test asserts each one's own behaviour where they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flavor {
    /// Valkey, not Redis.
    pub valkey: bool,
    /// (major, minor, patch).
    pub version: (u32, u32, u32),
    /// The allocator it was built with: `jemalloc-5.3.0`, `libc`.
    pub malloc: String,
}

impl Flavor {
    /// Redis 7.2's module API or newer (Valkey has it from 8.0 on).
    pub fn has_redis_7_2_api(&self) -> bool {
        self.valkey || self.version >= (7, 2, 0)
    }

    /// Module ACL categories (`RedisModule_AddACLCategory`): Redis 7.4+, Valkey 8+.
    pub fn has_module_acl_categories(&self) -> bool {
        self.valkey || self.version >= (7, 4, 0)
    }

    /// The bytes `MEMORY USAGE` adds to a module value for its key (a short name): 32 on Redis
    /// 7.0 and Valkey 8.0, 24 on Redis 8 and Valkey 9, which embed the key in its object.
    pub fn key_bytes(&self) -> i64 {
        let embeds = self.version >= if self.valkey { (9, 0, 0) } else { (8, 0, 0) };
        if embeds {
            24
        } else {
            32
        }
    }

    /// Module configs without the module's prefix (`REDISMODULE_CONFIG_UNPREFIXED`), which
    /// RedisBloom's Redis 8 names need: Redis 8+ (Valkey 9 takes the flag but prefixes them).
    pub fn has_unprefixed_module_configs(&self) -> bool {
        !self.valkey && self.version >= (8, 0, 0)
    }

    /// Atomic slot migration (`CLUSTER MIGRATESLOTS`): Valkey 9+.
    pub fn has_atomic_slot_migration(&self) -> bool {
        self.valkey && self.version >= (9, 0, 0)
    }

    /// How a report names the server: "Valkey 9.1.2 (libc)".
    pub fn name(&self) -> String {
        let (major, minor, patch) = self.version;
        let product = if self.valkey { "Valkey" } else { "Redis" };
        format!("{product} {major}.{minor}.{patch} ({})", self.malloc)
    }
}

/// The flavor of the server the tests start by default.
pub fn flavor() -> &'static Flavor {
    static FLAVOR: std::sync::OnceLock<Flavor> = std::sync::OnceLock::new();
    FLAVOR.get_or_init(|| flavor_of(Path::new(&redis_server())))
}

/// The flavor of a server binary, from its `--version` ("Redis server v=8.2.3 sha=... malloc=libc").
pub fn flavor_of(binary: &Path) -> Flavor {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .unwrap_or_else(|err| panic!("run {} --version: {err}", binary.display()));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let field = |name: &str| {
        text.split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    let numbers: Vec<u32> = field("v=")
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect();
    Flavor {
        valkey: text.starts_with("Valkey"),
        version: (numbers[0], numbers[1], numbers[2]),
        malloc: field("malloc="),
    }
}

/// The words that pin a command to one CPU (`taskset -c <cpu>`, for [`Options::prefix`]); none
/// on a machine of one CPU or without taskset.
pub fn pin_to(cpu: usize) -> Vec<String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 && Command::new("taskset").arg("-V").output().is_ok() {
        vec!["taskset".into(), "-c".into(), cpu.to_string()]
    } else {
        Vec::new()
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// A free port P whose cluster bus port P + 10000 is free too. Both lie below Linux's ephemeral
/// range (32768 and up), where the kernel does not hand out ports to outgoing connections.
fn free_cluster_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let seed = std::process::id() as usize * 7919
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos() as usize);
    for _ in 0..2000 {
        let offset = (seed + NEXT.fetch_add(1, Ordering::SeqCst) * 131) % 2700;
        let port = 20000 + offset as u16;
        let client = TcpListener::bind(("127.0.0.1", port));
        let bus = TcpListener::bind(("127.0.0.1", port + 10000));
        if client.is_ok() && bus.is_ok() {
            return port;
        }
    }
    panic!("no free port pair P, P + 10000 between 20000 and 32700");
}

/// A shared library built once per test binary from C source under tests/ into target/test-c/
/// (with `cc`, which building the module needs too); a copy is built aside and renamed, so that
/// test binaries can race to it.
fn c_library(source: &str, include: Option<&Path>) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/test-c");
    std::fs::create_dir_all(&dir).expect("create target/test-c");
    let stem = Path::new(source).file_stem().unwrap().to_string_lossy();
    let library = dir.join(format!("{stem}.so"));
    let building = dir.join(format!("{stem}.so.{}", std::process::id()));
    let mut cc = Command::new("cc");
    cc.args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&building)
        .arg(root.join(source));
    if let Some(include) = include {
        cc.arg("-I").arg(include);
    }
    let status = cc.status().expect("run cc (build-essential)");
    assert!(status.success(), "cc could not build {source}");
    std::fs::rename(&building, &library).expect("move the library in place");
    library
}

/// Runs a command that must succeed: its standard output (both outputs in the panic if it
/// failed).
pub fn run(command: &mut Command) -> String {
    let output = command.output().expect("run a command");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A fresh directory `<parent>/<this process's id>`, for a test file's build output, after removing
/// the ones that earlier test processes (no longer running) left under `parent`.
pub fn process_dir(parent: &Path) -> PathBuf {
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !Path::new("/proc").join(&pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let work = parent.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    work
}

/// tests/clock/ahead.c, built: a wall clock running ahead (see [`Options::clock_ahead`]).
fn clock_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| c_library("tests/clock/ahead.c", None))
        .clone()
}

/// tests/fake/fixed_seed.c, built: preloaded, a server's random seed (and so the layout of its
/// hash tables) is the same at every start, for instruction counts that repeat exactly.
pub fn fixed_seed_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| c_library("tests/fake/fixed_seed.c", None))
        .clone()
}

/// tests/fake/other_bloom.c, built: a module that takes one of the names this one needs, as
/// RedisBloom would (its load argument says which: `name`, `type` or `command`). It compiles
/// against the redismodule.h the redis-module crate ships, found through `cargo metadata`.
pub fn other_bloom_module() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| c_library("tests/fake/other_bloom.c", Some(&module_include_dir())))
        .clone()
}

/// tests/fake/names_only.c, built: a module that registers the command names it is given as load
/// arguments and does nothing else (the neighbours bench's control).
pub fn names_only_module() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| c_library("tests/fake/names_only.c", Some(&module_include_dir())))
        .clone()
}

/// The directory of the redismodule.h the redis-module crate ships, found through `cargo
/// metadata`.
fn module_include_dir() -> PathBuf {
    // Only this machine's platform: the whole graph names crates that no build here
    // downloads (`crunchy`, under criterion, for other targets), which a fresh cargo home
    // lacks. Not offline: the registry is reachable wherever the build was.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg(host_triple())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let manifest = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| package["name"] == "redis-module")
        .and_then(|package| package["manifest_path"].as_str())
        .expect("the redis-module package in cargo metadata")
        .to_string();
    Path::new(&manifest).parent().unwrap().join("src/include")
}

/// The platform this machine builds for (`rustc -vV`'s `host:` line).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .trim()
        .to_string()
}

static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// How to start a server.
#[derive(Clone, Default)]
pub struct Options {
    /// Arguments after the module path on the loadmodule line.
    pub module_args: Vec<String>,
    /// Extra `--name value` settings.
    pub config: Vec<(String, String)>,
    /// Start without loading the module.
    pub without_module: bool,
    /// Run the server under `ulimit -v` (KiB of address space), so that big allocations fail.
    pub address_space_kib: Option<u64>,
    /// A port below the kernel's ephemeral range whose bus port (+10000) is free, as a Redis
    /// Cluster node needs (`cluster_node()` sets this). Also for a test that needs the ports next
    /// to its server's free: in the ephemeral range any connection's local port may take them.
    pub cluster: bool,
    /// Load this module file instead of the release build.
    pub module: Option<PathBuf>,
    /// A configuration file, given to the server before every other setting.
    pub config_file: Option<PathBuf>,
    /// Run this server binary instead of `redis-server` (or `$REDIS_SERVER`).
    pub server: Option<PathBuf>,
    /// Extra environment variables for the server process.
    pub env: Vec<(String, String)>,
    /// A command the server runs under, its words before the server binary: [`pin_to`]'s
    /// `taskset`, or valgrind (the benchmark's).
    pub prefix: Vec<String>,
    /// How long the server may take to answer; 20 s when `None`.
    pub start_timeout: Option<Duration>,
}

impl Options {
    /// An AOF of commands only (no RDB preamble), synced on every write: what a rewrite writes
    /// is then the module's own `BF.LOADCHUNK` sequence, replayed at the next start.
    pub fn aof_without_preamble() -> Options {
        Options::default()
            .config("appendonly", "yes")
            .config("appendfsync", "always")
            .config("aof-use-rdb-preamble", "no")
    }

    /// Adds a `--name value` setting.
    pub fn config(mut self, name: &str, value: &str) -> Options {
        self.config.push((name.to_string(), value.to_string()));
        self
    }

    /// Adds module arguments.
    pub fn module_args(mut self, args: &[&str]) -> Options {
        self.module_args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Sets an environment variable of the server process.
    pub fn env(mut self, name: &str, value: &str) -> Options {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// A server whose wall clock runs `millis` ahead of this machine's (tests/clock/ahead.c,
    /// preloaded; its monotonic clock is left alone).
    pub fn clock_ahead(self, millis: u64) -> Options {
        let library = clock_library();
        self.env("LD_PRELOAD", &library.to_string_lossy())
            .env("BF_TEST_CLOCK_AHEAD_MS", &millis.to_string())
    }

    /// A Redis Cluster node that notices a dead peer within three seconds (short, for the
    /// failover tests; long enough that a loaded 2-core machine does not suspect a live one).
    pub fn cluster_node() -> Options {
        Options {
            cluster: true,
            ..Options::default()
        }
        .config("cluster-enabled", "yes")
        .config("cluster-config-file", "nodes.conf")
        .config("cluster-node-timeout", "3000")
    }
}

/// A running redis-server.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    options: Options,
}

impl Server {
    /// A server with the module and default settings.
    pub fn start() -> Server {
        Server::with(Options::default())
    }

    /// A server with the given options.
    pub fn with(options: Options) -> Server {
        Server::try_with(options)
            .unwrap_or_else(|log| panic!("redis-server did not start; its log:\n{log}"))
    }

    /// A server with the given options, or the server's log if it did not start.
    pub fn try_with(options: Options) -> Result<Server, String> {
        let n = SERVERS.fetch_add(1, Ordering::SeqCst);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/test-servers")
            .join(format!(
                "{}-{}-{n}",
                std::thread::current()
                    .name()
                    .unwrap_or("test")
                    .replace("::", "-"),
                std::process::id()
            ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create server directory");
        let mut server = Server {
            child: None,
            port: 0,
            dir,
            options,
        };
        server.launch()?;
        Ok(server)
    }

    /// Starts the process (again), on a new free port, in the same directory; the log if it
    /// does not come up.
    fn launch(&mut self) -> Result<(), String> {
        let mut last_log = String::new();
        for _attempt in 0..5 {
            self.port = if self.options.cluster {
                free_cluster_port()
            } else {
                free_port()
            };
            let log = self.dir.join("redis.log");
            let binary = self
                .options
                .server
                .clone()
                .unwrap_or_else(|| redis_server().into());
            let mut program: Vec<std::ffi::OsString> =
                self.options.prefix.iter().map(Into::into).collect();
            program.push(binary.into());
            let mut command = match self.options.address_space_kib {
                Some(kib) => {
                    let mut shell = Command::new("sh");
                    shell
                        .arg("-c")
                        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
                        .args(&program);
                    shell
                }
                None => {
                    let mut command = Command::new(&program[0]);
                    command.args(&program[1..]);
                    command
                }
            };
            command.current_dir(&self.dir);
            command.envs(self.options.env.iter().map(|(k, v)| (k, v)));
            if let Some(file) = &self.options.config_file {
                command.arg(file);
            }
            command
                .arg("--port")
                .arg(self.port.to_string())
                .args(["--bind", "127.0.0.1", "--protected-mode", "no"])
                .arg("--dir")
                .arg(&self.dir)
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(["--enable-debug-command", "yes"])
                .args(["--repl-diskless-sync-delay", "0"])
                .args(["--loglevel", "verbose"])
                .arg("--logfile")
                .arg(&log);
            if !self.options.without_module {
                let module = self.options.module.clone().unwrap_or_else(module_path);
                command.arg("--loadmodule").arg(module);
                command.args(&self.options.module_args);
            }
            for (name, value) in &self.options.config {
                command.arg(format!("--{name}")).arg(value);
            }
            let child = command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server (is it installed? make test installs it)");
            self.child = Some(child);
            if self.wait_ready() {
                return Ok(());
            }
            last_log = std::fs::read_to_string(&log).unwrap_or_default();
            self.kill();
            if !last_log.contains("Address already in use") {
                break;
            }
            let _ = std::fs::remove_file(&log);
        }
        Err(last_log)
    }

    /// Waits until our process answers on our port. Another test's server may have taken the
    /// port between `free_port` and our bind: a server that answers with another process id is
    /// not ours, and our own process then exits, which makes the caller retry on a new port.
    fn wait_ready(&mut self) -> bool {
        let timeout = self
            .options
            .start_timeout
            .unwrap_or(Duration::from_secs(20));
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let Some(child) = self.child.as_mut() else {
                return false;
            };
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            let pid = child.id().to_string();
            if let Ok(mut conn) = Conn::connect(self.port) {
                // Ours, and done loading its data: INFO (and DEBUG) answer while it loads.
                if let Frame::Bulk(info) = conn.call(&["INFO", "everything"]) {
                    let info = String::from_utf8_lossy(&info);
                    let has = |wanted: &str| info.lines().any(|line| line.trim() == wanted);
                    if has(&format!("process_id:{pid}")) && has("loading:0") {
                        return true;
                    }
                }
            }
            sleep(Duration::from_millis(20));
        }
        false
    }

    /// A new connection (RESP2 until switched).
    pub fn conn(&self) -> Conn {
        Conn::connect(self.port).expect("connect to test server")
    }

    /// A new connection switched to RESP3.
    pub fn conn3(&self) -> Conn {
        let mut conn = self.conn();
        let hello = conn.resp3();
        assert!(matches!(hello, Frame::Map(_)), "HELLO 3: {hello:?}");
        conn
    }

    /// Connections in both protocols, for tests that assert a reply in each.
    pub fn both(&self) -> [(u8, Conn); 2] {
        [(2, self.conn()), (3, self.conn3())]
    }

    /// Saves, stops and starts the server again from its dump.rdb, with the same options. A
    /// background save under way (a replica's full sync) is waited for: SAVE refuses to run
    /// beside one.
    pub fn restart(&mut self) {
        let mut conn = self.conn();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let saved = loop {
            let saved = conn.call(&["SAVE"]);
            let busy = Frame::error("ERR Background save already in progress");
            if saved != busy || std::time::Instant::now() > deadline {
                break saved;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(saved, Frame::ok());
        self.kill();
        self.launch()
            .unwrap_or_else(|log| panic!("redis-server did not restart:\n{log}"));
    }

    /// Stops the server without saving (SIGKILL) and starts it again in the same directory with
    /// other options (a different module configuration, say).
    pub fn restart_with(&mut self, options: Options) {
        self.kill();
        self.options = options;
        self.launch()
            .unwrap_or_else(|log| panic!("redis-server did not restart:\n{log}"));
    }

    /// Makes this server a replica of `primary` and waits until the initial sync is done.
    pub fn replicate(&self, primary: &Server) {
        let reply = self
            .conn()
            .call(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
        assert_eq!(reply, Frame::ok());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.info_field("replication", "master_link_status") != "up" {
            assert!(
                Instant::now() < deadline,
                "replica did not sync:\n{}",
                self.log()
            );
            sleep(Duration::from_millis(50));
        }
    }

    /// Waits until this replica has processed everything `primary` has propagated so far.
    pub fn catch_up(&self, primary: &Server) {
        let target: u64 = primary
            .info_field("replication", "master_repl_offset")
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let done: u64 = self
                .info_field("replication", "slave_repl_offset")
                .parse()
                .unwrap();
            if done >= target {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "replica stuck at {done} of {target}"
            );
            sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Starts the server again in the same directory with the same options (after it died).
    pub fn relaunch(&mut self) -> Result<(), String> {
        self.kill();
        self.launch()
    }

    /// Stops the server with `SHUTDOWN NOSAVE` and waits for it to exit, so that a tool it runs
    /// under (valgrind) writes its output.
    pub fn shutdown(&mut self) {
        if let Some(mut child) = self.child.take() {
            let mut conn = self.conn();
            conn.send(&["SHUTDOWN", "NOSAVE"]);
            let _ = child.wait();
        }
    }

    /// Stops the server without saving (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// One field of INFO, as text.
    pub fn info_field(&self, section: &str, field: &str) -> String {
        let info = self.conn().call(&["INFO", section]).text();
        info.lines()
            .find_map(|line| line.strip_prefix(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
            .trim()
            .to_string()
    }

    /// Waits for a background AOF rewrite (BGREWRITEAOF, or one scheduled) to finish.
    /// The server's AOF files (`appendonlydir`), concatenated, as text.
    pub fn aof_text(&self) -> String {
        let bytes: Vec<u8> = std::fs::read_dir(self.dir.join("appendonlydir"))
            .unwrap()
            .flat_map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn wait_for_aof_rewrite(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.info_field("persistence", "aof_rewrite_in_progress") != "0"
            || self.info_field("persistence", "aof_rewrite_scheduled") != "0"
        {
            assert!(
                std::time::Instant::now() < deadline,
                "AOF rewrite did not finish"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Say what the server was doing when the test failed: whether it was still running,
            // and the end of its log (kept in its directory).
            let status = self.child.as_mut().map(|child| child.try_wait());
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            let sockets = Command::new("ss")
                .args(["-tanp"])
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
                .unwrap_or_default();
            let sockets: Vec<&str> = sockets
                .lines()
                .filter(|line| line.contains(&format!(":{} ", self.port)))
                .collect();
            eprintln!(
                "server on port {} (pid {:?}, process state {status:?}), sockets on the port:\n{}\nlast log lines:\n{}",
                self.port,
                self.child.as_ref().map(Child::id),
                sockets.join("\n"),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        self.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One case of a table of forged inputs: its name (for the assertion messages), the input, and the
/// exact error reply it must be refused with.
pub type Forged<Input> = (&'static str, Input, &'static str);

/// RedisBloom's sizing (SPEC.md), computed independently of the module: (hash count, bits).
pub fn sizing(capacity: u64, error: f64) -> (u64, u64) {
    #[allow(clippy::approx_constant)] // RedisBloom's digits, not std's LN_2
    let ln_2 = 0.693147180559945;
    let bits_per_item = -error.ln() / 0.480453013918201;
    let hashes = (ln_2 * bits_per_item).ceil() as u64;
    let bits = ((capacity as f64 * bits_per_item).floor() as u64)
        .max(1)
        .next_multiple_of(64);
    (hashes, bits)
}

/// The reply a boolean command gives in each protocol: `:1`/`:0` in RESP2, `#t`/`#f` in RESP3.
pub fn boolean(protocol: u8, value: bool) -> Frame {
    if protocol == 2 {
        Frame::Int(i64::from(value))
    } else {
        Frame::Bool(value)
    }
}

/// [`boolean`] for each value.
pub fn booleans(protocol: u8, values: &[bool]) -> Vec<Frame> {
    values.iter().map(|&v| boolean(protocol, v)).collect()
}

/// The lines of BF.DEBUG.
pub fn debug_lines(conn: &mut Conn, key: &str) -> Vec<String> {
    conn.call(&["BF.DEBUG", key])
        .items()
        .iter()
        .map(Frame::text)
        .collect()
}

/// The `name:value` fields of a BF.DEBUG line.
pub fn debug_fields(line: &str) -> std::collections::HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|field| field.split_once(':'))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// [`debug_fields`] of each line of BF.DEBUG.
pub fn debug_fields_of(
    conn: &mut Conn,
    key: &str,
) -> Vec<std::collections::HashMap<String, String>> {
    debug_lines(conn, key)
        .iter()
        .map(|line| debug_fields(line))
        .collect()
}

/// One field of BF.INFO (RESP2), by its name.
pub fn bf_info_field(conn: &mut Conn, key: &str, name: &str) -> Frame {
    info_reply_field(conn, "BF.INFO", key, name)
}

/// One field of an INFO command's reply for a key (`BF.INFO` or `CF.INFO`, RESP2), by its name.
pub fn info_reply_field(conn: &mut Conn, command: &str, key: &str, name: &str) -> Frame {
    conn.call(&[command, key])
        .items()
        .chunks(2)
        .find(|pair| pair[0].text() == name)
        .unwrap_or_else(|| panic!("no {name}"))[1]
        .clone()
}

/// BF.MEXISTS over many items, a thousand at a time: the indexes that answered 1.
pub fn present(conn: &mut Conn, key: &str, items: &[Vec<u8>]) -> Vec<usize> {
    let mut found = Vec::new();
    for (batch, chunk) in items.chunks(1000).enumerate() {
        let mut command = vec![b"BF.MEXISTS".to_vec(), key.as_bytes().to_vec()];
        command.extend(chunk.iter().cloned());
        let reply = conn.call(&command).items();
        assert_eq!(reply.len(), chunk.len(), "{key}");
        for (index, answer) in reply.iter().enumerate() {
            match answer {
                Frame::Int(1) => found.push(batch * 1000 + index),
                Frame::Int(0) => {}
                other => panic!("{key}: {other:?}"),
            }
        }
    }
    found
}

/// Adds `item:0`, `item:1`, ... until the filter counts `count` items (a rare false positive is
/// not counted, so a few more names may be needed).
pub fn fill(conn: &mut Conn, key: &str, count: i64) {
    let mut index = 0;
    while conn.call(&["BF.CARD", key]).int() < count {
        conn.call(&["BF.ADD", key, &format!("item:{index}")]);
        index += 1;
    }
}

/// Asserts that a command answers OK.
pub fn ok(conn: &mut Conn, command: &[&str]) {
    assert_eq!(conn.call(command), Frame::ok(), "{command:?}");
}

/// BF.EXISTS of one item: 1 or 0.
pub fn exists(conn: &mut Conn, key: &str, item: &str) -> i64 {
    conn.call(&["BF.EXISTS", key, item]).int()
}

/// Sends BF.MADD of `items` to `key`; the replies.
pub fn madd(conn: &mut Conn, key: &str, items: &[String]) -> Frame {
    let mut command = vec!["BF.MADD", key];
    command.extend(items.iter().map(String::as_str));
    conn.call(&command)
}

/// `count` item names from `first` on, with a prefix: `prefix:first`, `prefix:first+1`...
pub fn names(prefix: &str, first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|i| format!("{prefix}:{i}"))
        .collect()
}

/// Arguments as byte vectors, for commands mixing text and binary.
pub fn args(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// Every chunk SCANDUMP gives for `key`, as (iterator, data), the header first.
pub fn scandump(conn: &mut Conn, key: &str) -> Vec<(i64, Vec<u8>)> {
    chunks::dump_sequence(
        conn,
        "BF.SCANDUMP",
        key,
        |end| matches!(end, Frame::Bulk(data) if data.is_empty()),
    )
}

/// `used_memory` from INFO, asked on the test's own connection so that no other client's
/// buffers come and go between two readings.
pub fn used_memory(conn: &mut Conn) -> i64 {
    let info = conn.call(&["INFO", "memory"]).text();
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Every command of the module.
pub const BF_COMMANDS: [&str; 11] = [
    "BF.RESERVE",
    "BF.ADD",
    "BF.MADD",
    "BF.INSERT",
    "BF.EXISTS",
    "BF.MEXISTS",
    "BF.INFO",
    "BF.CARD",
    "BF.DEBUG",
    "BF.SCANDUMP",
    "BF.LOADCHUNK",
];

/// Every cuckoo filter command.
pub const CF_COMMANDS: [&str; 14] = [
    "CF.RESERVE",
    "CF.ADD",
    "CF.ADDNX",
    "CF.INSERT",
    "CF.INSERTNX",
    "CF.EXISTS",
    "CF.MEXISTS",
    "CF.COUNT",
    "CF.DEL",
    "CF.COMPACT",
    "CF.INFO",
    "CF.DEBUG",
    "CF.SCANDUMP",
    "CF.LOADCHUNK",
];

/// A connection authenticated as a new ACL user with `rules` (password `pw`).
pub fn acl_user(server: &Server, name: &str, rules: &[&str]) -> Conn {
    let mut admin = server.conn();
    let mut command = vec!["ACL", "SETUSER", name, "reset", "on", ">pw"];
    command.extend_from_slice(rules);
    assert_eq!(admin.call(&command), Frame::ok(), "{command:?}");
    let mut conn = server.conn();
    assert_eq!(conn.call(&["AUTH", name, "pw"]), Frame::ok());
    conn
}

/// The NOPERM error for a key the user may not touch: Redis 7.0's wording, or 7.2's and later
/// (Valkey's too).
pub fn no_key_permission() -> Frame {
    if flavor().has_redis_7_2_api() {
        Frame::error("NOPERM No permissions to access a key")
    } else {
        Frame::error(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
        )
    }
}

/// The NOPERM error for a command `user` may not run, in the server's wording (Redis 7.2 and
/// later, and Valkey, name the user).
pub fn no_command_permission(user: &str, command: &str) -> Frame {
    let command = command.to_lowercase();
    if flavor().has_redis_7_2_api() {
        Frame::error(&format!(
            "NOPERM User {user} has no permissions to run the '{command}' command"
        ))
    } else {
        Frame::error(&format!(
            "NOPERM this user has no permissions to run the '{command}' command"
        ))
    }
}

/// What `ACL DRYRUN` answers for a key `user` may not touch, in the server's wording.
pub fn dry_run_denied_key(user: &str, key: &str) -> Frame {
    let who = if flavor().has_redis_7_2_api() {
        format!("User {user}")
    } else {
        "This user".to_string()
    };
    Frame::bulk(format!(
        "{who} has no permissions to access the '{key}' key"
    ))
}

/// What `ACL DRYRUN` answers for a command `user` may not run, in the server's wording.
pub fn dry_run_denied_command(user: &str, command: &str) -> Frame {
    let who = if flavor().has_redis_7_2_api() {
        format!("User {user}")
    } else {
        "This user".to_string()
    };
    Frame::bulk(format!(
        "{who} has no permissions to run the '{command}' command"
    ))
}

/// `ACL DRYRUN user command...`.
pub fn acl_dry_run<A: AsRef<[u8]>>(admin: &mut Conn, user: &str, command: &[A]) -> Frame {
    let mut full: Vec<Vec<u8>> = vec![b"ACL".to_vec(), b"DRYRUN".to_vec(), user.into()];
    full.extend(command.iter().map(|part| part.as_ref().to_vec()));
    admin.call(&full)
}

/// The ACL categories `COMMAND INFO` gives for a command. (`ACL CAT <category>` never lists
/// module commands, on any server version.)
pub fn acl_categories(conn: &mut Conn, name: &str) -> Vec<String> {
    let info = conn.call(&["COMMAND", "INFO", name]).items()[0].items();
    info[6].items().iter().map(Frame::text).collect()
}

/// The total server time, in microseconds, spent in `command` since the last `CONFIG RESETSTAT`
/// (`INFO commandstats`; 0 if it was not called). The command name is matched in any letter case.
pub fn command_usec(conn: &mut Conn, command: &str) -> f64 {
    let info = conn.call(&["INFO", "commandstats"]).text();
    let prefix = format!("cmdstat_{}:", command.to_ascii_lowercase());
    let Some(line) = info
        .lines()
        .find(|line| line.to_ascii_lowercase().starts_with(&prefix))
    else {
        return 0.0;
    };
    line.split([',', ':'])
        .find_map(|field| field.strip_prefix("usec="))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no usec in {line}"))
}

/// Runs a command `runs` times on the same value, as a blow-up guard that a busy machine cannot
/// trip: first on copies of `key` restored from its DUMP under other names (deleted after each),
/// last on `key` itself, which the test goes on with. `run` sends the command to the key it is
/// given; what it returns for each run (the key's own last), and the fastest run as the server
/// timed it, in microseconds (`INFO commandstats` of `command`, reset before each run: the call
/// alone, not the waits of the test's threads or the server's for their turn). A command whose
/// work is a function of the value alone does the same work each time, so the fastest of three
/// is what it costs: scheduling does not slow three runs in a row by seconds.
pub fn fastest_on_copies<T>(
    conn: &mut Conn,
    key: &str,
    command: &str,
    runs: usize,
    mut run: impl FnMut(&mut Conn, &str) -> T,
) -> (Vec<T>, f64) {
    let payload = conn.call(&["DUMP", key]).bytes();
    let mut fastest = f64::INFINITY;
    let mut results = Vec::with_capacity(runs);
    for index in 0..runs {
        let copy = format!("{key}:copy:{index}");
        let on_copy = index + 1 < runs;
        if on_copy {
            let restore = [b"RESTORE".as_slice(), copy.as_bytes(), b"0", &payload];
            assert_eq!(conn.call(&restore), Frame::ok(), "RESTORE {copy}");
        }
        assert_eq!(conn.call(&["CONFIG", "RESETSTAT"]), Frame::ok());
        results.push(run(conn, if on_copy { &copy } else { key }));
        let stats = conn
            .call(&["INFO", "commandstats"])
            .text()
            .to_ascii_lowercase();
        let once = format!("cmdstat_{}:calls=1,", command.to_ascii_lowercase());
        assert!(stats.contains(&once), "not one {command} in a run: {stats}");
        fastest = fastest.min(command_usec(conn, command));
        if on_copy {
            assert_eq!(conn.call(&["DEL", &copy]), Frame::Int(1), "DEL {copy}");
        }
    }
    (results, fastest)
}

/// Sends every command before reading any reply (one pipeline); the replies, in order.
pub fn pipeline<A: AsRef<[u8]>>(conn: &mut Conn, commands: &[Vec<A>]) -> Vec<Frame> {
    for command in commands {
        conn.send(command);
    }
    commands.iter().map(|_| conn.read()).collect()
}

/// `BF.LOADCHUNK key iterator data`.
pub fn loadchunk(conn: &mut Conn, key: &str, iterator: i64, data: &[u8]) -> Frame {
    conn.call(&[
        b"BF.LOADCHUNK".as_slice(),
        key.as_bytes(),
        iterator.to_string().as_bytes(),
        data,
    ])
}

/// `DEBUG DIGEST-VALUE key`: equal for equal values.
pub fn digest(conn: &mut Conn, key: &str) -> Frame {
    conn.call(&["DEBUG", "DIGEST-VALUE", key])
}

/// Milliseconds since the Unix epoch (the server's clock too: same machine).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A reply, with the clock read just before the request went and just after the reply came back:
/// the server read its own clock (the same one) in between, however long a busy machine kept
/// either side waiting. What a windowed filter answers is judged by these two times.
#[derive(Debug)]
pub struct Timed<T = Frame> {
    pub reply: T,
    pub sent: u64,
    pub answered: u64,
}

/// Sends `command` and reads its reply, timed.
pub fn timed<A: AsRef<[u8]>>(conn: &mut Conn, command: &[A]) -> Timed {
    timed_by(|| conn.call(command))
}

/// Runs `request` (commands sent and their replies read), timed.
pub fn timed_by<T>(request: impl FnOnce() -> T) -> Timed<T> {
    let sent = now_ms();
    let reply = request();
    Timed {
        reply,
        sent,
        answered: now_ms(),
    }
}

impl<T> Timed<T> {
    /// Whether what expires at a time in `expiry` (a part's, as BF.DEBUG gives it, or the bounds
    /// the test knows of one) was live when the server answered: `Some(true)` if the reply came
    /// back before the earliest, `Some(false)` if the request went after the latest, `None` if the
    /// expiry may have fallen while the request was out. Both clocks count whole milliseconds: a
    /// millisecond of room each way.
    pub fn live(&self, expiry: RangeInclusive<u64>) -> Option<bool> {
        if self.answered + 1 < *expiry.start() {
            Some(true)
        } else if self.sent > *expiry.end() {
            Some(false)
        } else {
            None
        }
    }
}

impl<T: PartialEq + std::fmt::Debug> Timed<T> {
    /// Asserts the reply: `if_live` where [`Timed::live`] says what expires in `expiry` was live,
    /// `if_gone` where it says it was gone, either where it cannot tell.
    pub fn assert_by_expiry(&self, expiry: RangeInclusive<u64>, if_live: T, if_gone: T) {
        let expected = match self.live(expiry.clone()) {
            Some(true) => vec![if_live],
            Some(false) => vec![if_gone],
            None => vec![if_live, if_gone],
        };
        assert!(
            expected.contains(&self.reply),
            "{:?}, sent at {} and answered at {}, against an expiry in {expiry:?}: expected one of \
             {expected:?}",
            self.reply,
            self.sent,
            self.answered
        );
    }
}

/// Sleeps until the clock reads `at` (milliseconds since the epoch).
pub fn sleep_until(at: u64) {
    let now = now_ms();
    if at > now {
        sleep(Duration::from_millis(at - now));
    }
}

/// Sleeps until `offset` milliseconds into the next slot of `slot` milliseconds.
pub fn sleep_into_next_slot(slot: u64, offset: u64) {
    sleep_until((now_ms() / slot + 1) * slot + offset);
}

/// The text of an error reply; panics on anything else.
pub fn error_text(reply: &Frame) -> String {
    match reply {
        Frame::Error(text) => text.clone(),
        other => panic!("not an error: {other:?}"),
    }
}

/// A field of `INFO bf`, as a number.
pub fn info_bf(server: &Server, field: &str) -> u64 {
    server.info_field("bf", field).parse().unwrap()
}

/// The `generation from:<ms> until:<ms> size:<n>` lines of BF.DEBUG, as (from, until, size).
pub fn generations(conn: &mut Conn, key: &str) -> Vec<(u64, u64, u64)> {
    debug_lines(conn, key)
        .iter()
        .filter_map(|line| line.strip_prefix("generation "))
        .map(|line| {
            let fields: Vec<u64> = line
                .split(' ')
                .map(|field| field.split_once(':').unwrap().1.parse().unwrap())
                .collect();
            (fields[0], fields[1], fields[2])
        })
        .collect()
}

/// BF.INFO's Size of a key.
pub fn bf_size(conn: &mut Conn, key: &str) -> i64 {
    conn.call(&["BF.INFO", key, "SIZE"]).items()[0].int()
}

/// Joins `servers` (cluster nodes) into one cluster: server `i` takes the slot range `ranges[i]`
/// (`None`: no slots), the first meets the others, and this returns once every node knows every
/// other by its own id (a node still in its handshake is listed under a made-up one, which
/// `CLUSTER REPLICATE` does not know) and the nodes that own slots say `cluster_state:ok`.
pub fn join_cluster(servers: &[Server], ranges: &[Option<(&str, &str)>]) {
    let mut conns: Vec<Conn> = servers.iter().map(Server::conn).collect();
    for (conn, range) in conns.iter_mut().zip(ranges) {
        if let Some((first, last)) = range {
            let reply = conn.call(&["CLUSTER", "ADDSLOTSRANGE", first, last]);
            assert_eq!(reply, Frame::ok(), "{first}-{last}");
        }
    }
    for server in &servers[1..] {
        let meet = ["CLUSTER", "MEET", "127.0.0.1", &server.port.to_string()];
        assert_eq!(conns[0].call(&meet), Frame::ok());
    }
    let ids: Vec<String> = conns
        .iter_mut()
        .map(|conn| conn.call(&["CLUSTER", "MYID"]).text())
        .collect();
    let ready = |(conn, range): (&mut Conn, &Option<(&str, &str)>)| {
        let nodes = conn.call(&["CLUSTER", "NODES"]).text();
        nodes.lines().count() == ids.len()
            && ids.iter().all(|id| nodes.contains(id.as_str()))
            && (range.is_none()
                || conn
                    .call(&["CLUSTER", "INFO"])
                    .text()
                    .contains("cluster_state:ok"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !conns.iter_mut().zip(ranges).all(ready) {
        assert!(Instant::now() < deadline, "the cluster did not form");
        sleep(Duration::from_millis(50));
    }
}

/// A Redis Cluster of three primaries and no replica, the module on each: the first owns slots
/// 0-5460, the second 5461-10922, the third 10923-16383 (see [`join_cluster`]).
pub fn three_primaries() -> [Server; 3] {
    let servers = [(); 3].map(|_| Server::with(Options::cluster_node()));
    let ranges = [
        Some(("0", "5460")),
        Some(("5461", "10922")),
        Some(("10923", "16383")),
    ];
    join_cluster(&servers, &ranges);
    servers
}
