//! Entry points for the fuzzers (feature `standalone`): the argument parsers of the `BF.*`
//! commands and of the module's load arguments, run outside Redis on arbitrary bytes.

use crate::bloom::{add::Creation, add::Insert, info::Field, parse_whole, reserve::Reserve};
use crate::COMMANDS;

/// True if `args` has an argument count Redis would pass to the command (it checks arity before
/// a command runs, and the parsers rely on it).
fn arity_ok(name: &[u8], count: usize) -> bool {
    COMMANDS
        .iter()
        .find(|command| command.name.to_bytes().eq_ignore_ascii_case(name))
        .is_some_and(|command| match command.arity {
            arity if arity >= 0 => count == arity as usize,
            arity => count >= arity.unsigned_abs() as usize,
        })
}

/// Parses a command line the way its handler would before touching a key. Never panics: that is
/// what the fuzzer checks.
pub fn parse_command(args: &[&[u8]]) {
    let Some(&name) = args.first() else {
        return;
    };
    if !arity_ok(name, args.len()) {
        return;
    }
    let upper = name.to_ascii_uppercase();
    match upper.as_slice() {
        b"BF.RESERVE" => drop(Reserve::parse(
            &args,
            filters::bloom::Growth::Scaling { expansion: 2 },
            filters::bloom::sizing::Layout::Classic,
        )),
        b"BF.INSERT" => drop(Insert::parse(&args, Creation::defaults())),
        b"BF.INFO" => drop(Field::parse(&args)),
        b"BF.SCANDUMP" | b"BF.LOADCHUNK" => drop(parse_whole(args[2])),
        _ => {}
    }
}

/// Applies module load arguments to the (process-wide) settings, as the module does at load.
pub fn parse_load_arguments(args: &[&[u8]]) {
    let _ = crate::config::apply_load_arguments(args);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input the fuzzer kept (and every crash it ever found, under `fuzz/regressions`) runs
    /// through the parsers again in `make test`.
    #[test]
    fn the_fuzz_corpus_and_regressions_parse_without_panicking() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut inputs = 0;
        for dir in [
            root.join("corpus/arguments"),
            root.join("regressions/arguments"),
        ] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let data = std::fs::read(entry.unwrap().path()).unwrap();
                let args: Vec<&[u8]> = data.split(|&b| b == 0xff).collect();
                parse_command(&args);
                parse_load_arguments(&args);
                inputs += 1;
            }
        }
        assert!(inputs > 10, "the corpus is missing: {inputs} inputs");
    }
}
