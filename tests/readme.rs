//! The docs say only what is true: every command of the README's 30-second tour and of the
//! command reference's `BF.DEBUG` and windowed-filter examples is run against a real server with
//! `redis-cli`, and the output must be the page's to the character, so the text cannot drift from
//! the module. `make help` names every target, and the server `make run` starts does what the
//! README says and refuses `MODULE UNLOAD` in the words docs/configuration.md quotes.

mod common;

use common::docs::{console_block, redis_cli};
use common::Server;
use std::path::Path;
use std::process::Command;

fn replay(file: &str, heading: &str) {
    let steps = console_block(file, heading);
    assert!(steps.len() >= 2, "{heading}: {steps:?}");
    let server = Server::start();
    for (args, hidden, expected) in steps {
        let printed = redis_cli(server.port, &args);
        let shown = if hidden { String::new() } else { printed };
        assert_eq!(
            shown,
            expected,
            "{file}, {heading}: redis-cli {}",
            args.join(" ")
        );
    }
}

#[test]
fn the_30_second_tour_prints_what_the_readme_shows() {
    replay("README.md", "## A 30-second tour");
}

#[test]
fn the_bf_debug_example_prints_what_the_command_reference_shows() {
    replay("docs/commands.md", "### BF.DEBUG key");
}

#[test]
fn the_windowed_filter_example_prints_what_the_command_reference_shows() {
    replay("docs/commands.md", "## Windowed filters");
}

#[test]
fn make_run_moves_to_the_next_free_port_and_names_it() {
    // A server of the package's kind holds the first port, as Debian's does with 6379. Its port
    // is below the kernel's ephemeral range: the next one, which the script takes, could else be
    // the local port of some client's connection, and redis-server would fail to bind it (seen
    // twice: "no server" after 20 s).
    let packaged = Server::with(common::Options {
        without_module: true,
        cluster: true,
        ..common::Options::default()
    });
    let base = packaged.port;
    let run_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/make-run-{base}"));
    let _ = std::fs::remove_dir_all(&run_dir);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("redis.conf.example");
    let tracked = std::fs::read(&example).unwrap();
    let (run, port, said) = start_run(base, &run_dir);
    // The next free port, named before the server starts.
    assert!(port > base, "{said:?}");
    assert!(
        said[0].starts_with(&format!("Port {base} is taken"))
            && said[0].ends_with(&format!("using port {port}.")),
        "{said:?}"
    );
    let mut conn = connect(port, &said, &run_dir);
    assert_eq!(
        conn.call(&["BF.ADD", "seen", "hello"]),
        common::Frame::Int(1)
    );
    // MODULE UNLOAD bf: the server refuses the command itself (redis.conf.example leaves
    // enable-module-command at Redis 7's "no"), in the words docs/configuration.md quotes.
    let refused = "ERR MODULE command not allowed. If the enable-module-command option is set to \
                   \"local\", you can run it from a local connection, otherwise you need to set \
                   this option in the configuration file, and then restart the server.";
    assert_eq!(
        conn.call(&["MODULE", "UNLOAD", "bf"]),
        common::Frame::error(refused)
    );
    let configuration = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let configuration = configuration
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        configuration.contains(&format!("`{refused}`")),
        "docs/configuration.md should quote {refused}"
    );
    // CONFIG REWRITE (packaging/README.md recommends it) writes the copy under the run
    // directory, never the tracked file, with a loadmodule line naming the module's path.
    assert_eq!(
        conn.call(&["CONFIG", "SET", "bf.error-rate", "0.001"]),
        common::Frame::ok()
    );
    assert_eq!(conn.call(&["CONFIG", "REWRITE"]), common::Frame::ok());
    assert_eq!(std::fs::read(&example).unwrap(), tracked);
    let copy = std::fs::read_to_string(run_dir.join("redis.conf")).unwrap();
    assert!(copy.contains("\nloadmodule "), "{copy}");
    drop(conn);
    drop(run);
    // The checkout moves: the path the rewrite wrote names a file that is gone. The next run
    // loads this checkout's module, once, and keeps the settings the rewrite wrote.
    let stale = "/nonexistent/old-checkout/target/release/libredis_bf.so";
    let moved: String = copy
        .lines()
        .map(|line| match line.starts_with("loadmodule ") {
            true => format!("loadmodule {stale}\n"),
            false => format!("{line}\n"),
        })
        .collect();
    std::fs::write(run_dir.join("redis.conf"), moved).unwrap();
    let (_run, port, said) = start_run(base, &run_dir);
    let mut conn = connect(port, &said, &run_dir);
    assert_eq!(
        conn.call(&["CONFIG", "GET", "bf.error-rate"]).items()[1],
        common::Frame::bulk("0.001")
    );
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libredis_bf.so");
    // The path of every module the server loaded (MODULE LIST: name, ver, path, args).
    let paths: Vec<String> = conn
        .call(&["MODULE", "LIST"])
        .items()
        .iter()
        .filter_map(|fields| {
            let fields = fields.items();
            let at = fields
                .iter()
                .position(|field| *field == common::Frame::bulk("path"))?;
            Some(fields[at + 1].text())
        })
        .filter(|path| path.ends_with("libredis_bf.so"))
        .collect();
    assert_eq!(paths, [module.display().to_string()]);
    let copy = std::fs::read_to_string(run_dir.join("redis.conf")).unwrap();
    let lines: Vec<&str> = copy
        .lines()
        .filter(|line| line.starts_with("loadmodule "))
        .collect();
    assert_eq!(
        lines,
        [format!("loadmodule \"{}\"", module.display())],
        "{copy}"
    );
    assert_eq!(
        conn.call(&["BF.ADD", "again", "hello"]),
        common::Frame::Int(1)
    );
    drop(conn);
    drop(_run);
    let _ = std::fs::remove_dir_all(&run_dir);
}

/// The server scripts/run.sh started, killed when the test ends, also when it fails.
struct Started(std::process::Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts scripts/run.sh with 6379 replaced by `base` and its data in `run_dir`: the server, its
/// port and what the script said up to naming it (its error output goes to `run_dir`/err).
fn start_run(base: u16, run_dir: &Path) -> (Started, u16, Vec<String>) {
    use std::io::{BufRead, BufReader};
    std::fs::create_dir_all(run_dir).unwrap();
    let errors = std::fs::File::create(run_dir.join("err")).expect("create the error file");
    let mut run = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh"))
        .env("BASE_PORT", base.to_string())
        .env("RUN_DIR", run_dir)
        .env_remove("PORT")
        .stdout(std::process::Stdio::piped())
        .stderr(errors)
        .spawn()
        .map(Started)
        .expect("run scripts/run.sh");
    let mut lines = BufReader::new(run.0.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    let port = loop {
        let line = lines
            .next()
            .expect("the script said where it runs")
            .unwrap();
        said.push(line.clone());
        if let Some(rest) = line.strip_prefix("Starting redis-server with redis-bf on 127.0.0.1:") {
            break rest.split(' ').next().unwrap().parse::<u16>().unwrap();
        }
    };
    // The server logs to the same pipe: read on, or it dies of SIGPIPE.
    std::thread::spawn(move || lines.for_each(drop));
    (run, port, said)
}

/// A connection to the server scripts/run.sh started on `port`, within 20 s.
fn connect(port: u16, said: &[String], run_dir: &Path) -> common::Conn {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Ok(conn) = common::Conn::connect(port) {
            return conn;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no server on {port}; the script said {said:?}, and on stderr:\n{}",
            std::fs::read_to_string(run_dir.join("err")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn make_run_refuses_a_port_that_is_no_number_before_anything() {
    for bad in ["abc", "0", "70000", "63 79"] {
        let output = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh"))
            .env("PORT", bad)
            .output()
            .expect("run scripts/run.sh");
        assert_eq!(output.status.code(), Some(1), "{bad}");
        assert!(output.stdout.is_empty(), "{bad}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "PORT={bad} is not a port: give a number from 1 to 65535, or leave PORT unset.\n"
            )
        );
    }
}

#[test]
fn make_help_names_every_target_and_make_install_copies_the_module_under_a_prefix() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let help = Command::new("make")
        .arg("help")
        .current_dir(root)
        .output()
        .expect("run make help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // Every target a user may run is a .PHONY one: each has a line of its own (`all`, which is
    // `build`, is named in build's line; `help` is this list).
    let targets = phony_targets(&root.join("Makefile"));
    assert!(targets.len() >= 20, "{targets:?}");
    for target in targets
        .iter()
        .filter(|target| *target != "all" && *target != "help")
    {
        assert!(
            help.lines()
                .any(|line| line.starts_with(&format!("make {target} "))),
            "{target}: {help}"
        );
    }
    assert!(help.contains(" as plain make and make all do"), "{help}");
    // The module is built (make test builds it first): install copies it, nothing more (-o build).
    let prefix = root.join(format!("target/install-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let install = Command::new("make")
        .args(["-o", "build", "install"])
        .arg(format!("PREFIX={}", prefix.display()))
        .current_dir(root)
        .output()
        .expect("run make install");
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let installed = prefix.join("lib/redis/libredis_bf.so");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(common::module_path()).unwrap()
    );
    assert!(String::from_utf8_lossy(&install.stdout).contains(&format!(
        "installed {}: load it with loadmodule {}",
        installed.display(),
        installed.display()
    )));
    std::fs::remove_dir_all(&prefix).unwrap();
}

/// The targets of the Makefile's `.PHONY` line (with its continuation lines).
fn phony_targets(makefile: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(makefile).expect("the Makefile");
    let start = text.find("\n.PHONY:").expect("a .PHONY line") + "\n.PHONY:".len();
    let mut targets = Vec::new();
    for line in text[start..].lines() {
        let (words, continued) = match line.strip_suffix('\\') {
            Some(words) => (words, true),
            None => (line, false),
        };
        targets.extend(words.split_whitespace().map(str::to_string));
        if !continued {
            break;
        }
    }
    targets
}

/// The README's text with every run of whitespace made one space, so that a figure can be found
/// whatever the line breaks.
fn readme_text() -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The README's opening figure for 100 million URLs at 1% is what `BF.INFO` says such a filter
/// takes, in MB (10^6 bytes): the scaling filter the tour's `BF.RESERVE` makes, and NONSCALING.
#[test]
fn the_readmes_figure_for_100_million_urls_is_what_bf_info_says() {
    let server = Server::start();
    let mut conn = server.conn();
    let mut megabytes = |key: &str, options: &[&str]| {
        let mut reserve = vec!["BF.RESERVE", key, "0.01", "100000000"];
        reserve.extend_from_slice(options);
        assert_eq!(conn.call(&reserve), common::Frame::ok());
        let size = conn.call(&["BF.INFO", key, "SIZE"]).items()[0].int();
        assert_eq!(conn.call(&["DEL", key]), common::Frame::Int(1));
        (size as f64 / 1e6).round() as i64
    };
    let scaling = megabytes("urls", &[]);
    let fixed = megabytes("fixed", &["NONSCALING"]);
    let readme = readme_text();
    let claim = format!(
        "a Bloom filter at 1% false positives takes about {scaling} MB (`BF.RESERVE urls 0.01 \
         100000000`, a filter that can still grow past its capacity; {fixed} MB with `NONSCALING`)"
    );
    assert!(readme.contains(&claim), "the README should say: {claim}");
}
