//! Bloom filters in the module: the `BF.*` commands, the `MBbloom--` data type, and the sweep of
//! idle windowed filters. The same rooms as the cuckoo family's, in the same order: parse every
//! argument into a typed request in one function that owns every argument error, open the key
//! (`Key<Filter>`: missing, ours or WRONGTYPE), apply in the core (`filters::bloom`), reply,
//! propagate what changed (a creation spelled out with every parameter), notify, count.
//!
//! - [`reserve`]: `BF.RESERVE`; [`options`]: the one option grammar of `BF.RESERVE` and `BF.INSERT`;
//! - [`add`]: `BF.ADD`, `BF.MADD`, `BF.INSERT`; [`early`]: a single command's item hashed and its
//!   lines asked for before the key is opened;
//! - [`exists`]: `BF.EXISTS`, `BF.MEXISTS`; [`info`]: `BF.INFO`, `BF.CARD`, `BF.DEBUG`;
//! - [`dump`]: `BF.SCANDUMP`, `BF.LOADCHUNK`; [`docs`]: what `COMMAND DOCS` says of them;
//! - [`window`]: the windowed time protocol (`AT`, clock checks, TTL fix-ups, propagation);
//! - [`datatype`]: what the `MBbloom--` type reads and writes; [`sweep`]: the registry of windowed
//!   keys and the sweep that drops their expired parts.

pub mod add;
pub mod datatype;
pub mod docs;
pub mod dump;
pub mod early;
pub mod exists;
pub mod info;
pub mod options;
pub mod reserve;
pub mod sweep;
pub mod window;

use crate::error::BfError;
use crate::glue::call::Call;
use crate::glue::value::Value;
use filters::bloom::sizing::Layout;
use filters::bloom::window::Window;
use filters::bloom::{Filter, Growth};

pub use crate::parse::{
    is_option, once, parse_capacity, parse_error_rate, parse_expansion, parse_layout, parse_whole,
    parse_window, unknown, value_of, Args,
};

/// The arguments that spell out a growth in a propagated command: `EXPANSION n` or `NONSCALING`.
pub fn growth_words(growth: Growth) -> Vec<String> {
    match growth {
        Growth::Scaling { expansion } => vec!["EXPANSION".into(), expansion.to_string()],
        Growth::Fixed => vec!["NONSCALING".into()],
    }
}

/// The arguments that spell out how a filter is made, in a propagated command: `CAPACITY c ERROR
/// e`, the growth, the window if any, and the layout. Every parameter a server could fill in from
/// its own configs is named, so a replica or an AOF replay builds the same filter whatever its
/// `bf.*` defaults are.
pub fn creation_words(
    capacity: u64,
    error: f64,
    growth: Growth,
    window: Option<Window>,
    layout: Layout,
) -> Vec<String> {
    let mut words = vec![
        "CAPACITY".to_string(),
        capacity.to_string(),
        "ERROR".into(),
        // The shortest text that parses back to the same f64 (with an exponent when small).
        format!("{error:?}"),
    ];
    words.extend(growth_words(growth));
    if let Some(window) = window {
        words.extend(["WINDOW".to_string(), window.as_seconds().to_string()]);
    }
    words.extend(layout_words(layout));
    words
}

/// `LAYOUT CLASSIC` or `LAYOUT BLOCKED`: always spelled out, since the replaying server's
/// `bf.layout` fills in a missing one.
pub fn layout_words(layout: Layout) -> Vec<String> {
    let name = match layout {
        Layout::Classic => "CLASSIC",
        Layout::Blocked => "BLOCKED",
    };
    vec!["LAYOUT".into(), name.into()]
}

/// The time a read asks a filter at: this server's clock for a windowed filter (whose expired
/// generations a replica hides by its own clock), nothing for the others.
pub fn now(call: &Call, filter: &Filter) -> u64 {
    match filter {
        Filter::Windowed(_) => call.now(),
        Filter::Chain(_) => 0,
    }
}

/// The time a lookup (BF.EXISTS, BF.MEXISTS) asks a filter at: as [`now`], read more cheaply
/// where that cannot change the answer (`Call::lookup_time`).
pub fn lookup_time(call: &Call, filter: &Filter) -> u64 {
    match filter {
        Filter::Windowed(windowed) => call.lookup_time(windowed.next_expiry()),
        Filter::Chain(_) => 0,
    }
}

/// Checks that a filter answers adds and lookups: it is not being rebuilt by BF.LOADCHUNK.
pub fn in_use(filter: &Filter) -> Result<(), BfError> {
    match filter.restoring() {
        None => Ok(()),
        Some(loaded) => Err(BfError::BeingRestored {
            loadchunk: <Filter as Value>::LOADCHUNK,
            loaded,
            total: filter.dump_len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rates_parse_in_full_and_stay_in_range() {
        assert_eq!(parse_error_rate(b"0.01"), Ok(0.01));
        assert_eq!(parse_error_rate(b"1e-5"), Ok(1e-5));
        assert_eq!(parse_error_rate(b".5"), Ok(0.5));
        for bad in [
            &b"0"[..],
            b"1",
            b"-0.1",
            b"1.5",
            b"nan",
            b"NaN",
            b"inf",
            b"-inf",
            b"infinity",
            b"1e400",
            b"1e-400",
            b"0.01abc",
            b" 0.01",
            b"0.01 ",
            b"",
            b"0x0.1",
            b"\xff",
        ] {
            assert_eq!(parse_error_rate(bad), Err(BfError::BadErrorRate), "{bad:?}");
        }
    }

    #[test]
    fn capacities_are_whole_numbers_from_one_to_i64_max() {
        assert_eq!(parse_capacity(b"1"), Ok(1));
        assert_eq!(parse_capacity(b"9223372036854775807"), Ok(i64::MAX as u64));
        for bad in [
            &b"0"[..],
            b"9223372036854775808",
            b"18446744073709551615",
            b"-1",
            b"+5",
            b"10abc",
            b"1e3",
            b"1.0",
            b"",
            b"18446744073709551616",
            b" 5",
        ] {
            assert_eq!(parse_capacity(bad), Err(BfError::BadCapacity), "{bad:?}");
        }
    }

    #[test]
    fn expansions_run_from_1_to_32768() {
        assert_eq!(parse_expansion(b"1"), Ok(1));
        assert_eq!(parse_expansion(b"32768"), Ok(32768));
        for bad in [
            &b"0"[..],
            b"32769",
            b"-2",
            b"2.0",
            b"",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_expansion(bad), Err(BfError::BadExpansion), "{bad:?}");
        }
    }
}
