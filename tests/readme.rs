//! The docs say only what is true: every command of the README's 30-second tour and of the
//! command reference's `BF.DEBUG` and windowed-filter examples is run against a real server with
//! `redis-cli`, and the output must be the page's to the character, so the text cannot drift from
//! the module.

mod common;

use common::Server;
use std::path::Path;
use std::process::Command;

/// The `$ redis-cli ...` lines of the first `console` block after `heading` in `file`, each with
/// the output the text shows for it: (arguments after `redis-cli`, whether the output is sent to
/// `/dev/null`, output lines).
fn console_block(file: &str, heading: &str) -> Vec<(Vec<String>, bool, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .unwrap_or_else(|err| panic!("{file}: {err}"));
    let section = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in {file}"))..];
    let block = &section[section.find("```console\n").expect("a console block") + 11..];
    let block = &block[..block.find("```").expect("the block's end")];
    let mut steps: Vec<(Vec<String>, bool, String)> = Vec::new();
    for line in block.lines() {
        if let Some(command) = line.strip_prefix("$ redis-cli ") {
            // A comment follows two spaces and a `#`; `> /dev/null` hides the output.
            let command = command.split("  #").next().unwrap_or_default();
            let (command, hidden) = match command.strip_suffix(" > /dev/null") {
                Some(command) => (command, true),
                None => (command, false),
            };
            let args = command.split_whitespace().map(str::to_string).collect();
            steps.push((args, hidden, String::new()));
        } else if let Some((_, _, output)) = steps.last_mut() {
            output.push_str(line);
            output.push('\n');
        } else {
            panic!("{file}: output before any command: {line:?}");
        }
    }
    steps
}

/// What `redis-cli` prints for `args` against `server`, formatted as in a terminal.
fn redis_cli(server: &Server, args: &[String]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "--no-raw"])
        .args(args)
        .output()
        .expect("run redis-cli (apt-get install redis-tools)");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8 output")
}

fn replay(file: &str, heading: &str) {
    let steps = console_block(file, heading);
    assert!(steps.len() >= 2, "{heading}: {steps:?}");
    let server = Server::start();
    for (args, hidden, expected) in steps {
        let printed = redis_cli(&server, &args);
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
    use std::io::{BufRead, BufReader};
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
    /// The started server, killed when the test ends, also when it fails.
    struct Started(std::process::Child);
    impl Drop for Started {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    // The script's (and its server's) error output, for the message of a failure.
    let errors = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/make-run-{base}.err"));
    let mut run = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh"))
        .env("BASE_PORT", base.to_string())
        .env_remove("PORT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&errors).expect("create the error file"))
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
    // The next free port, named before the server starts.
    assert!(port > base, "{said:?}");
    assert!(
        said[0].starts_with(&format!("Port {base} is taken"))
            && said[0].ends_with(&format!("using port {port}.")),
        "{said:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut conn = loop {
        if let Ok(conn) = common::Conn::connect(port) {
            break conn;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no server on {port}; the script said {said:?}, and on stderr:\n{}",
            std::fs::read_to_string(&errors).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        conn.call(&["BF.ADD", "seen", "hello"]),
        common::Frame::Int(1)
    );
    drop(run);
    let _ = std::fs::remove_file(&errors);
}
