//! What the pages show: the `redis-cli` sessions of their `console` blocks, and what `redis-cli`
//! prints, to replay one against a server and compare (tests/readme.rs, tests/wheel.rs).

use std::path::Path;
use std::process::Command;

/// The `$ redis-cli ...` lines of the first `console` block after `heading` in `file`, each with
/// the output the text shows for it: (arguments after `redis-cli`, whether the output is sent to
/// `/dev/null`, output lines).
pub fn console_block(file: &str, heading: &str) -> Vec<(Vec<String>, bool, String)> {
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

/// What `redis-cli` prints for `args` against the server on `port`, formatted as in a terminal.
pub fn redis_cli(port: u16, args: &[String]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--no-raw"])
        .args(args)
        .output()
        .expect("run redis-cli (apt-get install redis-tools)");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8 output")
}
